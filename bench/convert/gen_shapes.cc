// Writes N MB of JSON lines whose columns all have one shape (bench/convert/shapes):
// deterministic (fixed seed), with the value distributions a transaction stream has.
//   gen_shapes SHAPE SIZE_MB > in.jsonl
// SHAPE: uuid | timestamp | decimal | double | integer | dict_string | long_string |
//        struct | string_array | mix (one column of each shape).
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

uint64_t state = 0x2545F4914F6CDD1Dull;
uint64_t Next() {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}
uint64_t Below(uint64_t n) { return Next() % n; }
double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

void Uuid(std::string* s) {
  static const char* hex = "0123456789abcdef";
  uint64_t a = Next(), b = Next();
  a = (a & ~0xF000ull) | 0x4000ull;  // version 4
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) s->push_back('-');
    uint64_t w = i < 16 ? a : b;
    s->push_back(hex[(w >> (60 - 4 * (i % 16))) & 15]);
  }
}

// RFC 3339 with microseconds and Z.
void Timestamp(std::string* s, int64_t micros) {
  time_t secs = static_cast<time_t>(micros / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(micros % 1000000));
  *s += buf;
}

// Card amounts: mostly small, a long tail.
void Amount(std::string* s) {
  uint64_t cents = Below(100) < 90 ? Below(20000) : Below(5000000);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%02llu", static_cast<unsigned long long>(cents / 100),
                static_cast<unsigned long long>(cents % 100));
  *s += buf;
}

// The shortest text that reads back the same double (what JSON.stringify and most
// serializers print).
void Double(std::string* s, double d) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  s->append(buf, static_cast<size_t>(r.ptr - buf));
}

void Int(std::string* s, int64_t v) { *s += std::to_string(v); }

const std::vector<std::string>& Vocabulary(size_t n, const char* prefix) {
  static std::vector<std::vector<std::string>> cache;
  for (auto& v : cache) {
    if (v.size() == n && v[0].rfind(prefix, 0) == 0) return v;
  }
  static const char* kSyllables[] = {"ka", "ro", "mi", "te", "lu", "sa",
                                     "no", "vi", "de", "pa", "zu", "ri"};
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i) {
    std::string w = prefix;
    size_t x = i;
    do {
      w += kSyllables[x % 12];
      x /= 12;
    } while (x);
    v.push_back(w);
  }
  cache.push_back(std::move(v));
  return cache.back();
}

void Quoted(std::string* s, const std::string& v) {
  s->push_back('"');
  *s += v;
  s->push_back('"');
}

void LongText(std::string* s) {
  static const char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789      ";
  size_t n = 100 + Below(200);
  s->push_back('"');
  for (size_t i = 0; i < n; ++i) s->push_back(kChars[Below(sizeof kChars - 1)]);
  s->push_back('"');
}

int64_t clock_us = 1735689600LL * 1000000;  // 2025-01-01T00:00:00Z

void Record(const std::string& shape, std::string* s) {
  auto key = [&](const char* k) {
    if (s->size() > 1) s->push_back(',');
    s->push_back('"');
    *s += k;
    *s += "\":";
  };
  bool mix = shape == "mix";
  if (shape == "uuid" || mix) {
    for (const char* k : {"u0", "u1", "u2", "u3"}) {
      key(k);
      s->push_back('"');
      Uuid(s);
      s->push_back('"');
      if (mix) break;
    }
  }
  if (shape == "timestamp" || mix) {
    clock_us += static_cast<int64_t>(Below(2000000));
    key("t0");
    s->push_back('"');
    Timestamp(s, clock_us);
    s->push_back('"');
    if (!mix) {
      for (const char* k : {"t1", "t2", "t3"}) {
        key(k);
        s->push_back('"');
        Timestamp(s, clock_us - static_cast<int64_t>(Below(86400ull * 1000000 * 365 * 3)));
        s->push_back('"');
      }
    }
  }
  if (shape == "decimal" || mix) {
    for (const char* k : {"d0", "d1", "d2", "d3"}) {
      key(k);
      Amount(s);
      if (mix) break;
    }
  }
  if (shape == "double" || mix) {
    for (const char* k : {"f0", "f1", "f2", "f3"}) {
      key(k);
      Double(s, Unit());
      if (mix) break;
    }
  }
  if (shape == "integer" || mix) {
    static int64_t seq = 1000000000;
    key("i0");
    Int(s, ++seq);
    if (!mix) {
      key("i1");
      Int(s, static_cast<int64_t>(Below(1000000)));
      key("i2");
      Int(s, static_cast<int64_t>(Next() >> 1));
      key("i3");
      Int(s, static_cast<int64_t>(Below(100)));
    }
  }
  if (shape == "dict_string" || mix) {
    const char* keys[] = {"s0", "s1", "s2", "s3"};
    const size_t sizes[] = {5, 20, 100, 1000};
    const char* prefixes[] = {"st_", "cur_", "city_", "shop_"};
    for (int i = 0; i < 4; ++i) {
      key(keys[i]);
      const auto& v = Vocabulary(sizes[i], prefixes[i]);
      Quoted(s, v[Below(v.size())]);
      if (mix) break;
    }
  }
  if (shape == "long_string" || mix) {
    key("l0");
    LongText(s);
    if (!mix) {
      key("l1");
      LongText(s);
    }
  }
  if (shape == "struct" || mix) {
    for (const char* k : {"m0", "m1"}) {
      key(k);
      const auto& names = Vocabulary(200, "mer_");
      *s += "{\"id\":";
      Int(s, static_cast<int64_t>(100000 + Below(200000)));
      *s += ",\"name\":";
      Quoted(s, names[Below(names.size())]);
      *s += ",\"loc\":{\"lat\":";
      Double(s, -60.0 + static_cast<double>(Below(12000)) / 100.0);
      *s += ",\"lon\":";
      Double(s, -170.0 + static_cast<double>(Below(34000)) / 100.0);
      *s += "},\"active\":";
      *s += Below(2) ? "true" : "false";
      *s += "}";
      if (mix) break;
    }
  }
  if (shape == "string_array" || mix) {
    for (const char* k : {"a0", "a1"}) {
      key(k);
      const auto& tags = Vocabulary(50, "tag_");
      s->push_back('[');
      size_t n = Below(9);
      for (size_t i = 0; i < n; ++i) {
        if (i) s->push_back(',');
        Quoted(s, tags[Below(tags.size())]);
      }
      s->push_back(']');
      if (mix) break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gen_shapes SHAPE SIZE_MB\n");
    return 2;
  }
  std::string shape = argv[1];
  const char* known[] = {"uuid",        "timestamp",   "decimal", "double",       "integer",
                         "dict_string", "long_string", "struct",  "string_array", "mix"};
  bool ok = false;
  for (const char* k : known) ok = ok || shape == k;
  if (!ok) {
    std::fprintf(stderr, "unknown shape %s\n", shape.c_str());
    return 2;
  }
  const uint64_t target = std::strtoull(argv[2], nullptr, 10) * 1000 * 1000;
  uint64_t written = 0;
  std::string s;
  while (written < target) {
    s.clear();
    s.push_back('{');
    Record(shape, &s);
    s.append("}\n", 2);
    std::fwrite(s.data(), 1, s.size(), stdout);
    written += s.size();
  }
  return 0;
}
