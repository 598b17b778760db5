// The converter's fast record walk over stage 1's structural index (token_walker.h).
//
// Stage 1 leaves one offset per token: each of { } [ ] : , outside strings, each string's
// opening quote, and the first byte of each other scalar (number, true, false, null). A
// scalar's text runs to the next token, less the whitespace before it. The walk below
// accepts exactly the JSON grammar for the values the schema expects:
//   object = '{' ( '}' | member ( ',' member )* '}' )    member = string ':' value
//   array  = '[' ( ']' | value ( ',' value )* ']' )
// and declines (returns false) at the first token that does not fit.
#include "schema/token_walker.h"

#include <simdjson.h>

#include <algorithm>
#include <string_view>

namespace icestream::schema {

using format::parquet::RecordSink;
using format::parquet::ShredNode;
using iceberg::TypeId;

namespace {

bool JsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

struct TokenWalker::Impl {
  const ConverterNode* root = nullptr;
  RecordSink* sink = nullptr;
  int max_depth = 0;
  std::unique_ptr<simdjson::internal::dom_parser_implementation> stage1;
  size_t capacity = 0;  // of stage1's index (bytes of text); grown on demand

  // The indexed text and its tokens; `at` is the cursor, `last` the first sentinel
  // (stage 1 ends the offsets with len, len, 0).
  const char* text = nullptr;
  size_t len = 0;
  const uint32_t* at = nullptr;
  const uint32_t* last = nullptr;
  // Offset where the record being walked ends: a token at or after it is not the
  // record's. Peek() then gives 0, which no rule takes, so the walk never passes it (nor
  // the sentinels).
  uint32_t end = 0;
  ScalarContext* ctx = nullptr;

  char Peek() const { return *at < end ? text[*at] : '\0'; }

  // The text of the scalar token at `a` (its trailing whitespace dropped).
  std::string_view ScalarAt(const uint32_t* a) const {
    const char* b = text + a[0];
    const char* e = text + a[1];
    while (e > b && JsonSpace(e[-1])) --e;
    return {b, static_cast<size_t>(e - b)};
  }
  std::string_view Scalar() const { return ScalarAt(at); }

  void WriteNulls(const ConverterNode& n, int16_t rep, int16_t def) {
    for (int i = n.shred->leaf_begin; i < n.shred->leaf_end; ++i) sink->column(i).AddNull(rep, def);
  }

  // The cursor is at a value in a container at `depth` (the record is 1).
  bool Value(const ConverterNode& n, int16_t rep, int depth) {
    const char c = Peek();
    if (n.write_fast != nullptr) {
      if (!Primitive(n, rep, c, at)) return false;
      ++at;
      return true;
    }
    if (c == 'n') {
      if (Scalar() != "null" || !n.shred->optional) return false;
      WriteNulls(n, rep, static_cast<int16_t>(n.shred->def - 1));
      ++at;
      return true;
    }
    switch (n.type) {
      case TypeId::kStruct:
        return c == '{' && depth + 1 <= max_depth && Object(n, rep, depth + 1);
      case TypeId::kMap:
        return c == '{' && depth + 1 <= max_depth && Map(n, rep, depth + 1);
      case TypeId::kList:
        return c == '[' && depth + 1 <= max_depth && Array(n, rep, depth + 1);
      default:
        return false;
    }
  }

  // The member of struct n named by the key token at `a`, or -1.
  int Member(const ConverterNode& n, size_t hint, const uint32_t* a) const {
    const char* raw = text + *a + 1;
    const int idx = LookupRawKey(n, raw, hint);
    if (idx >= 0 || n.by_name.empty()) return idx;
    // A wide struct: by the key's text, when it has no escapes.
    const std::string_view key = ScalarAt(a);
    if (key.size() < 2 || key.back() != '"' || HasBackslash(key.data(), key.size())) return -1;
    auto it = n.by_name.find(key.substr(1, key.size() - 2));
    return it == n.by_name.end() ? -1 : it->second;
  }

  // A primitive's value at `a` (its first character c): null or its scalar, written.
  bool Primitive(const ConverterNode& n, int16_t rep, char c, const uint32_t* a) {
    if (c == 'n') {
      if (ScalarAt(a) != "null" || !n.shred->optional) return false;
      WriteNulls(n, rep, static_cast<int16_t>(n.shred->def - 1));
      return true;
    }
    return c != '\0' && n.write_fast(n, ScalarAt(a), rep, ctx);
  }

  // The cursor is at '{' of a struct at `depth`. The cursor lives in a local between
  // members (members of `this` are reloaded after every write through a char pointer).
  bool Object(const ConverterNode& n, int16_t rep, int depth) {
    const char* const t = text;
    const uint32_t lim = end;
    auto peek = [t, lim](const uint32_t* p) { return *p < lim ? t[*p] : '\0'; };
    const uint32_t* a = at + 1;
    const size_t count = n.children.size();
    const bool wide = count > 64;
    uint64_t seen_bits = 0;
    if (wide) std::fill(n.seen.begin(), n.seen.end(), 0);
    if (peek(a) == '}') {
      ++a;
    } else {
      size_t hint = 0;
      for (;;) {
        if (peek(a) != '"') return false;
        const int idx = Member(n, hint, a);
        if (idx < 0) return false;  // a member the schema does not name
        if (peek(a + 1) != ':') return false;
        a += 2;
        const auto i = static_cast<size_t>(idx);
        if (wide) {
          if (n.seen[i]) return false;
          n.seen[i] = 1;
        } else {
          if ((seen_bits >> i) & 1) return false;
          seen_bits |= uint64_t{1} << i;
        }
        hint = i + 1;
        const ConverterNode& child = n.children[i];
        if (child.write_fast != nullptr) {
          if (!Primitive(child, rep, peek(a), a)) return false;
          ++a;
        } else {
          at = a;
          if (!Value(child, rep, depth)) return false;
          a = at;
        }
        const char sep = peek(a);
        ++a;
        if (sep == ',') continue;
        if (sep == '}') break;
        return false;
      }
    }
    at = a;
    if (!wide && seen_bits == (count == 64 ? ~0ull : (uint64_t{1} << count) - 1)) return true;
    for (size_t i = 0; i < count; ++i) {
      if (wide ? n.seen[i] != 0 : ((seen_bits >> i) & 1) != 0) continue;
      const ConverterNode& child = n.children[i];
      if (child.must_be_present || !child.shred->optional) return false;
      WriteNulls(child, rep, static_cast<int16_t>(child.shred->def - 1));
    }
    return true;
  }

  // The cursor is at '[' of a list at `depth`.
  bool Array(const ConverterNode& n, int16_t rep, int depth) {
    ++at;
    if (Peek() == ']') {
      ++at;
      WriteNulls(n, rep, n.shred->def);  // empty list: present, no elements
      return true;
    }
    const ConverterNode& element = n.children[0];
    int16_t r = rep;
    for (;;) {
      if (!Value(element, r, depth)) return false;
      r = n.shred->rep;
      const char sep = Peek();
      ++at;
      if (sep == ',') continue;
      return sep == ']';
    }
  }

  // The cursor is at '{' of a map at `depth`: keys without escapes are taken as they are.
  bool Map(const ConverterNode& n, int16_t rep, int depth) {
    ++at;
    if (Peek() == '}') {
      ++at;
      WriteNulls(n, rep, n.shred->def);
      return true;
    }
    const ConverterNode& key = n.children[0];
    const ConverterNode& value = n.children[1];
    int16_t r = rep;
    for (;;) {
      if (Peek() != '"') return false;
      const std::string_view k = Scalar();
      if (k.size() < 2 || k.back() != '"' || HasBackslash(k.data(), k.size())) return false;
      ++at;
      if (Peek() != ':') return false;
      ++at;
      // Key and value are written together, so a failing value rolls back with the record.
      key.column->AddBytes(r, k.substr(1, k.size() - 2));
      if (!Value(value, r, depth)) return false;
      r = n.shred->rep;
      const char sep = Peek();
      ++at;
      if (sep == ',') continue;
      return sep == '}';
    }
  }
};

TokenWalker::TokenWalker(const ConverterNode* root, RecordSink* sink, int max_depth)
    : impl_(std::make_unique<Impl>()) {
  impl_->root = root;
  impl_->sink = sink;
  impl_->max_depth = max_depth;
}

TokenWalker::~TokenWalker() = default;

bool TokenWalker::Index(const char* text, size_t len) {
  Impl& w = *impl_;
  if (len == 0 || len > kCapacity) return false;
  if (len > w.capacity) {
    // Sized to what is indexed (a converter that only ever sees single records of 1 KiB
    // keeps a 4 KiB index, not a window's ~360 KiB). The depth limit is stage 2's, which
    // never runs here.
    size_t capacity = std::max<size_t>(4 << 10, w.capacity);
    while (capacity < len) capacity *= 2;
    if (!w.stage1) {
      if (simdjson::get_active_implementation()->create_dom_parser_implementation(
              capacity, simdjson::DEFAULT_MAX_DEPTH, w.stage1) != simdjson::SUCCESS) {
        return false;
      }
    } else if (w.stage1->set_capacity(capacity) != simdjson::SUCCESS) {
      return false;
    }
    w.capacity = capacity;
  }
  if (w.stage1->stage1(reinterpret_cast<const uint8_t*>(text), len,
                       simdjson::stage1_mode::regular) != simdjson::SUCCESS) {
    return false;
  }
  w.text = text;
  w.len = len;
  w.at = w.stage1->structural_indexes.get();
  w.last = w.at + w.stage1->n_structural_indexes;
  return true;
}

bool TokenWalker::SeekToken(size_t pos) {
  Impl& w = *impl_;
  while (w.at < w.last && *w.at < pos) ++w.at;
  return w.at < w.last && *w.at == pos;
}

bool TokenWalker::Record(size_t end, ScalarContext* ctx) {
  Impl& w = *impl_;
  w.end = static_cast<uint32_t>(end);
  w.ctx = ctx;
  if (w.Peek() != '{' || !w.Object(*w.root, 0, 1)) return false;
  // Nothing else of the record may follow its object (the next token is another's).
  return w.at == w.last || *w.at >= end;
}

}  // namespace icestream::schema
