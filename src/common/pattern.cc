// Pattern: parse to a small syntax tree, emit a Thompson NFA, run it as a lazy DFA.
#include "common/pattern.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

namespace icestream {

namespace {

constexpr size_t kMaxPatternBytes = 4096;
constexpr int kMaxGroupDepth = 32;
constexpr size_t kMaxStates = 20000;
// DFA states kept per match call; past it the cache starts over (memory stays bounded,
// time stays linear in the input times the NFA size).
constexpr size_t kMaxDfaStates = 512;
// Inputs shorter than this are simulated on the NFA directly: building DFA states costs
// more than it saves on a 50-byte ARN.
constexpr size_t kDfaFromBytes = 256;

void Add(uint64_t* set, unsigned char c) { set[c >> 6] |= uint64_t{1} << (c & 63); }
bool Has(const uint64_t* set, unsigned char c) { return (set[c >> 6] >> (c & 63)) & 1; }
void AddRange(uint64_t* set, unsigned char lo, unsigned char hi) {
  for (unsigned c = lo; c <= hi; ++c) Add(set, static_cast<unsigned char>(c));
}
void Invert(uint64_t* set) {
  for (int i = 0; i < 4; ++i) set[i] = ~set[i];
}

struct Node {
  enum class Kind : uint8_t { kBytes, kConcat, kAlt, kRepeat, kEmpty } kind;
  uint64_t bytes[4] = {0, 0, 0, 0};
  std::vector<int> kids;
  int min = 0, max = 0;  // kRepeat; max < 0 is unbounded
};

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  Result<int> Parse() {
    if (pos_ < p_.size() && p_[pos_] == '^') ++pos_;
    std::string_view body = p_;
    if (!body.empty() && body.back() == '$' &&
        !(body.size() >= 2 && body[body.size() - 2] == '\\')) {
      end_ = body.size() - 1;
    } else {
      end_ = body.size();
    }
    auto root = Alternation(0);
    if (!root.ok()) return root;
    if (pos_ != end_) return Error("unmatched ')'");
    return root;
  }

  std::vector<Node> nodes;

 private:
  Status Error(std::string_view what) const {
    return InvalidArgument("pattern " + std::string(p_) + ": " + std::string(what) + " at offset " +
                           std::to_string(pos_));
  }
  int NewNode(Node::Kind k) {
    nodes.push_back(Node{});
    nodes.back().kind = k;
    return static_cast<int>(nodes.size() - 1);
  }
  bool AtEnd() const { return pos_ >= end_; }

  Result<int> Alternation(int depth) {
    std::vector<int> branches;
    while (true) {
      auto c = Concatenation(depth);
      if (!c.ok()) return c;
      branches.push_back(*c);
      if (AtEnd() || p_[pos_] != '|') break;
      ++pos_;
    }
    if (branches.size() == 1) return branches[0];
    int n = NewNode(Node::Kind::kAlt);
    nodes[n].kids = std::move(branches);
    return n;
  }

  Result<int> Concatenation(int depth) {
    std::vector<int> items;
    while (!AtEnd() && p_[pos_] != '|' && p_[pos_] != ')') {
      auto a = Atom(depth);
      if (!a.ok()) return a;
      auto q = Quantified(*a);
      if (!q.ok()) return q;
      items.push_back(*q);
    }
    if (items.empty()) return NewNode(Node::Kind::kEmpty);
    if (items.size() == 1) return items[0];
    int n = NewNode(Node::Kind::kConcat);
    nodes[n].kids = std::move(items);
    return n;
  }

  // Reads a decimal number; false when none is there.
  bool Number(int* out) {
    size_t start = pos_;
    long v = 0;
    while (!AtEnd() && p_[pos_] >= '0' && p_[pos_] <= '9') {
      v = v * 10 + (p_[pos_] - '0');
      if (v > 100000) v = 100000;
      ++pos_;
    }
    *out = static_cast<int>(v);
    return pos_ > start;
  }

  Result<int> Quantified(int atom) {
    while (!AtEnd()) {
      char c = p_[pos_];
      int min = 0, max = 0;
      if (c == '*') {
        min = 0, max = -1;
        ++pos_;
      } else if (c == '+') {
        min = 1, max = -1;
        ++pos_;
      } else if (c == '?') {
        min = 0, max = 1;
        ++pos_;
      } else if (c == '{') {
        size_t save = pos_;
        ++pos_;
        if (!Number(&min)) {
          pos_ = save;
          return Error("'{' without a repetition count");
        }
        max = min;
        if (!AtEnd() && p_[pos_] == ',') {
          ++pos_;
          if (!Number(&max)) max = -1;
        }
        if (AtEnd() || p_[pos_] != '}') return Error("unterminated repetition");
        ++pos_;
        if (max >= 0 && max < min) return Error("repetition {n,m} with m < n");
      } else {
        return atom;
      }
      if (!AtEnd() && p_[pos_] == '?') ++pos_;  // lazy: same set of matches
      int n = NewNode(Node::Kind::kRepeat);
      nodes[n].kids = {atom};
      nodes[n].min = min;
      nodes[n].max = max;
      atom = n;
    }
    return atom;
  }

  // An escape's class (\d, \w, \s and their negations) or literal; pos_ is past '\'.
  Status Escape(uint64_t* set) {
    if (AtEnd()) return Error("'\\' at the end");
    char c = p_[pos_++];
    switch (c) {
      case 'd':
        AddRange(set, '0', '9');
        return Status::OK();
      case 'D': {
        uint64_t s[4] = {0, 0, 0, 0};
        AddRange(s, '0', '9');
        Invert(s);
        for (int i = 0; i < 4; ++i) set[i] |= s[i];
        return Status::OK();
      }
      case 'w':
      case 'W': {
        uint64_t s[4] = {0, 0, 0, 0};
        AddRange(s, '0', '9');
        AddRange(s, 'a', 'z');
        AddRange(s, 'A', 'Z');
        Add(s, '_');
        if (c == 'W') Invert(s);
        for (int i = 0; i < 4; ++i) set[i] |= s[i];
        return Status::OK();
      }
      case 's':
      case 'S': {
        uint64_t s[4] = {0, 0, 0, 0};
        for (char w : {' ', '\t', '\n', '\r', '\f', '\v'}) Add(s, static_cast<unsigned char>(w));
        if (c == 'S') Invert(s);
        for (int i = 0; i < 4; ++i) set[i] |= s[i];
        return Status::OK();
      }
      case 'n':
        Add(set, '\n');
        return Status::OK();
      case 't':
        Add(set, '\t');
        return Status::OK();
      case 'r':
        Add(set, '\r');
        return Status::OK();
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
          return Error("unsupported escape");
        }
        Add(set, static_cast<unsigned char>(c));
        return Status::OK();
    }
  }

  Result<int> Class() {
    // pos_ is past '['.
    int n = NewNode(Node::Kind::kBytes);
    uint64_t set[4] = {0, 0, 0, 0};
    bool negate = !AtEnd() && p_[pos_] == '^';
    if (negate) ++pos_;
    bool first = true;
    while (true) {
      if (AtEnd()) return Error("unterminated character class");
      char c = p_[pos_];
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      int lo = -1;
      if (c == '\\') {
        ++pos_;
        uint64_t esc[4] = {0, 0, 0, 0};
        if (auto st = Escape(esc); !st.ok()) return st;
        int count = 0, only = -1;
        for (int b = 0; b < 256; ++b) {
          if (Has(esc, static_cast<unsigned char>(b))) ++count, only = b;
        }
        for (int i = 0; i < 4; ++i) set[i] |= esc[i];
        if (count == 1)
          lo = only;  // a literal can start a range
        else
          continue;
      } else {
        ++pos_;
        lo = static_cast<unsigned char>(c);
        Add(set, static_cast<unsigned char>(lo));
      }
      if (pos_ + 1 < end_ && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        int hi;
        if (p_[pos_] == '\\') {
          ++pos_;
          uint64_t esc[4] = {0, 0, 0, 0};
          if (auto st = Escape(esc); !st.ok()) return st;
          int count = 0;
          hi = -1;
          for (int b = 0; b < 256; ++b) {
            if (Has(esc, static_cast<unsigned char>(b))) ++count, hi = b;
          }
          if (count != 1) return Error("a class escape cannot end a range");
        } else {
          hi = static_cast<unsigned char>(p_[pos_++]);
        }
        if (hi < lo) return Error("range out of order");
        AddRange(set, static_cast<unsigned char>(lo), static_cast<unsigned char>(hi));
      }
    }
    if (negate) Invert(set);
    std::copy(set, set + 4, nodes[n].bytes);
    return n;
  }

  Result<int> Atom(int depth) {
    char c = p_[pos_];
    if (c == '(') {
      if (depth + 1 > kMaxGroupDepth) return Error("groups nested too deeply");
      ++pos_;
      if (pos_ + 1 < end_ && p_[pos_] == '?' && p_[pos_ + 1] == ':')
        pos_ += 2;
      else if (!AtEnd() && p_[pos_] == '?')
        return Error("unsupported group");
      auto inner = Alternation(depth + 1);
      if (!inner.ok()) return inner;
      if (AtEnd() || p_[pos_] != ')') return Error("unterminated group");
      ++pos_;
      return inner;
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') return Error("nothing to repeat");
    if (c == '^' || c == '$') return Error("anchors are supported only at the ends");
    if (c == '[') {
      ++pos_;
      return Class();
    }
    int n = NewNode(Node::Kind::kBytes);
    ++pos_;
    if (c == '\\') {
      if (auto st = Escape(nodes[n].bytes); !st.ok()) return st;
    } else if (c == '.') {
      Invert(nodes[n].bytes);
      nodes[n].bytes[0] &= ~((uint64_t{1} << '\n') | (uint64_t{1} << '\r'));
    } else {
      Add(nodes[n].bytes, static_cast<unsigned char>(c));
    }
    return n;
  }

  std::string_view p_;
  size_t pos_ = 0;
  size_t end_ = 0;
};

// A partly built NFA fragment: its entry state and the exits still to be connected.
struct Hole {
  int32_t state;
  bool second;
};
struct Frag {
  int32_t start;
  std::vector<Hole> out;
};

class Emitter {
 public:
  Emitter(const std::vector<Node>& nodes, std::vector<Pattern::State>* states)
      : nodes_(nodes), states_(*states) {}

  Result<Frag> Emit(int n) {
    if (states_.size() > kMaxStates) {
      return InvalidArgument("pattern needs more than " + std::to_string(kMaxStates) + " states");
    }
    const Node& node = nodes_[n];
    switch (node.kind) {
      case Node::Kind::kBytes: {
        int32_t s = New(Pattern::State::Kind::kBytes);
        std::copy(node.bytes, node.bytes + 4, states_[s].bytes);
        return Frag{s, {{s, false}}};
      }
      case Node::Kind::kEmpty: {
        int32_t s = New(Pattern::State::Kind::kSplit);
        return Frag{s, {{s, false}, {s, true}}};
      }
      case Node::Kind::kConcat: {
        Frag f;
        for (size_t i = 0; i < node.kids.size(); ++i) {
          auto k = Emit(node.kids[i]);
          if (!k.ok()) return k;
          if (i == 0)
            f = std::move(*k);
          else {
            Patch(f.out, k->start);
            f.out = std::move(k->out);
          }
        }
        return f;
      }
      case Node::Kind::kAlt: {
        // split → first | split → second | … | last
        Frag f{-1, {}};
        int32_t prev_split = -1;
        for (size_t i = 0; i < node.kids.size(); ++i) {
          auto k = Emit(node.kids[i]);
          if (!k.ok()) return k;
          for (const auto& h : k->out) f.out.push_back(h);
          if (i + 1 == node.kids.size()) {
            if (prev_split < 0)
              f.start = k->start;
            else
              states_[prev_split].out2 = k->start;
            break;
          }
          int32_t s = New(Pattern::State::Kind::kSplit);
          states_[s].out = k->start;
          if (prev_split < 0)
            f.start = s;
          else
            states_[prev_split].out2 = s;
          prev_split = s;
        }
        return f;
      }
      case Node::Kind::kRepeat: {
        int kid = node.kids[0];
        Frag f{-1, {}};
        auto append = [&](Frag k) {
          if (f.start < 0)
            f = std::move(k);
          else {
            Patch(f.out, k.start);
            f.out = std::move(k.out);
          }
        };
        for (int i = 0; i < node.min; ++i) {
          auto k = Emit(kid);
          if (!k.ok()) return k;
          append(std::move(*k));
        }
        if (node.max < 0) {
          // loop: split → kid → split; split.out2 leaves
          int32_t s = New(Pattern::State::Kind::kSplit);
          auto k = Emit(kid);
          if (!k.ok()) return k;
          states_[s].out = k->start;
          Patch(k->out, s);
          append(Frag{s, {{s, true}}});
        } else {
          std::vector<Hole> skips;
          for (int i = node.min; i < node.max; ++i) {
            int32_t s = New(Pattern::State::Kind::kSplit);
            auto k = Emit(kid);
            if (!k.ok()) return k;
            states_[s].out = k->start;
            skips.push_back({s, true});
            append(Frag{s, std::move(k->out)});
          }
          if (f.start < 0) {  // {0,0}
            int32_t s = New(Pattern::State::Kind::kSplit);
            return Frag{s, {{s, false}, {s, true}}};
          }
          for (const auto& h : skips) f.out.push_back(h);
        }
        return f;
      }
    }
    return InvalidArgument("bad pattern node");
  }

  void Patch(const std::vector<Hole>& holes, int32_t target) {
    for (const auto& h : holes) {
      if (h.second)
        states_[h.state].out2 = target;
      else
        states_[h.state].out = target;
    }
  }

 private:
  int32_t New(Pattern::State::Kind k) {
    states_.push_back(Pattern::State{});
    states_.back().kind = k;
    return static_cast<int32_t>(states_.size() - 1);
  }

  const std::vector<Node>& nodes_;
  std::vector<Pattern::State>& states_;
};

// The ε-closure of `seeds`, sorted: the states reachable without consuming a byte.
class Closure {
 public:
  explicit Closure(const std::vector<Pattern::State>& states)
      : states_(states), mark_(states.size(), 0) {}

  void Of(const std::vector<int32_t>& seeds, std::vector<int32_t>* out) {
    ++epoch_;
    out->clear();
    stack_.assign(seeds.begin(), seeds.end());
    while (!stack_.empty()) {
      int32_t s = stack_.back();
      stack_.pop_back();
      if (s < 0 || mark_[s] == epoch_) continue;
      mark_[s] = epoch_;
      const auto& st = states_[s];
      if (st.kind == Pattern::State::Kind::kSplit) {
        stack_.push_back(st.out2);
        stack_.push_back(st.out);
      } else {
        out->push_back(s);  // byte and match states are what a set is made of
      }
    }
    std::sort(out->begin(), out->end());
  }

  // The closure of the states reached from `set` on byte `c`.
  void Step(const std::vector<int32_t>& set, unsigned char c, std::vector<int32_t>* out) {
    seeds_.clear();
    for (int32_t s : set) {
      const auto& st = states_[s];
      if (st.kind == Pattern::State::Kind::kBytes && Has(st.bytes, c)) seeds_.push_back(st.out);
    }
    Of(seeds_, out);
  }

  bool Accepts(const std::vector<int32_t>& set) const {
    for (int32_t s : set) {
      if (states_[s].kind == Pattern::State::Kind::kMatch) return true;
    }
    return false;
  }

 private:
  const std::vector<Pattern::State>& states_;
  std::vector<uint32_t> mark_;
  uint32_t epoch_ = 0;
  std::vector<int32_t> stack_;
  std::vector<int32_t> seeds_;
};

struct SetHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    size_t h = v.size();
    for (int32_t x : v) h = h * 1000003u ^ static_cast<size_t>(x);
    return h;
  }
};

}  // namespace

Result<Pattern> Pattern::Compile(std::string_view pattern) {
  if (pattern.size() > kMaxPatternBytes) {
    return InvalidArgument("pattern longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  }
  Parser parser(pattern);
  auto root = parser.Parse();
  if (!root.ok()) return root.status();
  Pattern p;
  p.source_ = std::string(pattern);
  Emitter emitter(parser.nodes, &p.states_);
  auto frag = emitter.Emit(*root);
  if (!frag.ok()) return frag.status();
  p.states_.push_back(State{});
  p.states_.back().kind = State::Kind::kMatch;
  emitter.Patch(frag->out, static_cast<int32_t>(p.states_.size() - 1));
  p.start_ = frag->start;
  return p;
}

Pattern Pattern::MustCompile(std::string_view pattern) {
  auto p = Compile(pattern);
  if (!p.ok()) {
    std::fprintf(stderr, "invalid built-in pattern: %s\n", p.status().ToString().c_str());
    std::abort();
  }
  return std::move(*p);
}

bool Pattern::Run(std::string_view s, bool prefix) const {
  Closure closure(states_);
  std::vector<int32_t> cur, next;
  closure.Of({start_}, &cur);
  if (s.size() < kDfaFromBytes) {
    for (char ch : s) {
      if (prefix && closure.Accepts(cur)) return true;
      if (cur.empty()) return false;
      closure.Step(cur, static_cast<unsigned char>(ch), &next);
      cur.swap(next);
    }
    return closure.Accepts(cur);
  }
  // Lazy DFA: one entry per distinct NFA state set met, transitions filled on first use.
  struct DfaState {
    std::vector<int32_t> set;
    bool accept;
    int32_t next[256];
  };
  std::vector<DfaState> dfa;
  std::unordered_map<std::vector<int32_t>, int32_t, SetHash> ids;
  auto intern = [&](std::vector<int32_t>&& set) -> int32_t {
    auto it = ids.find(set);
    if (it != ids.end()) return it->second;
    if (dfa.size() >= kMaxDfaStates) {
      dfa.clear();
      ids.clear();
    }
    DfaState d;
    d.accept = closure.Accepts(set);
    std::fill(std::begin(d.next), std::end(d.next), -1);
    d.set = set;
    dfa.push_back(std::move(d));
    auto id = static_cast<int32_t>(dfa.size() - 1);
    ids.emplace(std::move(set), id);
    return id;
  };
  int32_t at = intern(std::move(cur));
  for (char ch : s) {
    if (prefix && dfa[at].accept) return true;
    if (dfa[at].set.empty()) return false;
    auto c = static_cast<unsigned char>(ch);
    int32_t to = dfa[at].next[c];
    if (to < 0) {
      closure.Step(dfa[at].set, c, &next);
      size_t before = dfa.size();
      to = intern(std::move(next));
      next = {};
      // intern() may have started the cache over: `at` is then gone, and the new state
      // is the only one left.
      if (dfa.size() >= before) dfa[at].next[c] = to;
    }
    at = to;
  }
  return dfa[at].accept;
}

}  // namespace icestream
