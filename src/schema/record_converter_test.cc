// Tests of the JSON -> column converter: what lands in each column (levels and PLAIN
// values, read from the column writers' buffered pages), every rejection code, and
// that a rejected record leaves nothing behind.
#include "schema/record_converter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/testing/status_assertions.h"
#include "format/parquet/file_reader.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/json_rows.h"
#include "format/parquet/output_stream.h"

namespace icestream::schema {
namespace {

namespace pq = format::parquet;

class ConverterTest : public ::testing::Test {
 protected:
  void Load(const std::string& schema_json) {
    ASSERT_OK_AND_ASSIGN(auto s, LoadConvertibleSchema(schema_json));
    schema_ = std::move(s);
    pq::WriterOptions o;
    o.dictionary = false;     // PLAIN values are inspectable
    o.page_size = 1LL << 40;  // never cut a page behind the test's back
    o.row_group_size = 1LL << 40;
    o.codec = pq::Codec::kUncompressed;
    sink_ = std::make_unique<pq::StringOutputStream>(&file_);
    ASSERT_OK_AND_ASSIGN(writer_, pq::FileWriter::Make(schema_.schema, sink_.get(), o));
    ASSERT_OK_AND_ASSIGN(conv_, RecordConverter::Make(schema_, writer_.get()));
  }

  bool Convert(const std::string& json) {
    auto r = conv_->Convert(json, &error_);
    EXPECT_OK(r);
    return r.ok() && *r;
  }

  void ExpectReject(const std::string& json, RecordErrorCode code, const std::string& path) {
    std::vector<int64_t> before;
    for (int i = 0; i < writer_->num_columns(); ++i)
      before.push_back(writer_->column(i).num_levels());
    EXPECT_FALSE(Convert(json)) << json;
    EXPECT_EQ(RecordErrorCodeName(error_.code), RecordErrorCodeName(code))
        << json << ": " << error_.message;
    EXPECT_EQ(error_.path, path) << json;
    for (int i = 0; i < writer_->num_columns(); ++i) {
      EXPECT_EQ(writer_->column(i).num_levels(), before[static_cast<size_t>(i)])
          << "column " << i << " kept part of the rejected record " << json;
    }
  }

  pq::PageData Page(int column) { return writer_->column(column).CutPage(); }

  template <typename T>
  static std::vector<T> Values(const pq::PageData& p) {
    std::vector<T> v(p.plain.size() / sizeof(T));
    std::memcpy(v.data(), p.plain.data(), v.size() * sizeof(T));
    return v;
  }

  static std::vector<std::string> Strings(const pq::PageData& p) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < p.plain.size()) {
      uint32_t len;
      std::memcpy(&len, p.plain.data() + pos, 4);
      out.emplace_back(p.plain.substr(pos + 4, len));
      pos += 4 + len;
    }
    return out;
  }

  ConvertibleSchema schema_;
  std::string file_;
  std::unique_ptr<pq::StringOutputStream> sink_;
  std::unique_ptr<pq::FileWriter> writer_;
  std::unique_ptr<RecordConverter> conv_;
  RecordError error_;
};

using Levels = std::vector<uint16_t>;

TEST_F(ConverterTest, EveryMappedTypeLandsInItsColumn) {
  Load(R"({"type":"object","required":["s"],"properties":{
    "s":{"type":"string"}, "ts":{"type":"string","format":"date-time"},
    "d":{"type":"string","format":"date"}, "t":{"type":"string","format":"time"},
    "u":{"type":"string","format":"uuid"}, "b":{"type":"string","contentEncoding":"base64"},
    "i":{"type":"integer","minimum":-5,"maximum":5}, "l":{"type":"integer"},
    "dec":{"type":"number","multipleOf":0.01}, "x":{"type":"number"},
    "ok":{"type":"boolean"}, "e":{"enum":["red","green"]}}})");
  ASSERT_TRUE(Convert(R"({"s":"héllo","ts":"2017-11-16T22:31:08.000001Z","d":"2017-11-16",
      "t":"22:31:08","u":"f79c3e09-677c-4bbd-a479-3f349cb785e7","b":"AAECAw==","i":-5,
      "l":9223372036854775807,"dec":-14.2,"x":1e300,"ok":true,"e":"green","extra":[1,{"z":2}]})"));
  ASSERT_TRUE(Convert(R"({"s":""})"));  // every optional member missing -> null
  auto s = Page(0);
  EXPECT_EQ(Strings(s), (std::vector<std::string>{"héllo", ""}));
  EXPECT_TRUE(s.def.empty());  // required, flat: no levels at all
  auto ts = Page(1);
  EXPECT_EQ(ts.def, (Levels{1, 0}));
  EXPECT_EQ(Values<int64_t>(ts), std::vector<int64_t>{1510871468000001LL});
  EXPECT_EQ(Values<int32_t>(Page(2)), std::vector<int32_t>{17486});
  EXPECT_EQ(Values<int64_t>(Page(3)), std::vector<int64_t>{81068000000LL});
  auto u = Page(4);
  ASSERT_EQ(u.plain.size(), 16u);
  EXPECT_EQ(static_cast<uint8_t>(u.plain[0]), 0xf7);
  EXPECT_EQ(Strings(Page(5)), std::vector<std::string>{std::string("\0\1\2\3", 4)});
  EXPECT_EQ(Values<int32_t>(Page(6)), std::vector<int32_t>{-5});
  EXPECT_EQ(Values<int64_t>(Page(7)), std::vector<int64_t>{INT64_MAX});
  auto dec = Page(8);  // decimal(38,2): 16-byte big-endian two's complement of -1420
  ASSERT_EQ(dec.plain.size(), 16u);
  EXPECT_EQ(static_cast<uint8_t>(dec.plain[0]), 0xff);
  EXPECT_EQ(static_cast<uint8_t>(dec.plain[14]), 0xfa);
  EXPECT_EQ(static_cast<uint8_t>(dec.plain[15]), 0x74);
  EXPECT_EQ(Values<double>(Page(9)), std::vector<double>{1e300});
  EXPECT_EQ(std::string_view(Page(10).plain), std::string("\1", 1));
  EXPECT_EQ(Strings(Page(11)), std::vector<std::string>{"green"});
}

TEST_F(ConverterTest, ListLevelsFollowTheSpecExample) {
  // parquet-format / formats.md A.8: optional list of optional int32.
  Load(R"({"type":"struct","fields":[{"id":1,"name":"tags","required":false,"type":
      {"type":"list","element-id":2,"element-required":false,"element":"int"}}]})");
  for (const char* r :
       {R"({"tags":[1,null,2]})", R"({"tags":null})", R"({"tags":[]})", R"({"tags":[3]})"}) {
    ASSERT_TRUE(Convert(r)) << r << error_.message;
  }
  auto p = Page(0);
  EXPECT_EQ(p.rep, (Levels{0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(p.def, (Levels{3, 2, 3, 0, 1, 3}));
  EXPECT_EQ(Values<int32_t>(p), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(p.num_levels, 6);
}

TEST_F(ConverterTest, NestedStructsListsAndMaps) {
  Load(R"({"type":"struct","fields":[
    {"id":1,"name":"s","required":false,"type":{"type":"struct","fields":[
      {"id":2,"name":"a","required":false,"type":"long"},
      {"id":3,"name":"m","required":false,"type":{"type":"map","key-id":4,"key":"string",
        "value-id":5,"value-required":false,"value":{"type":"list","element-id":6,
        "element-required":true,"element":"string"}}}]}}]})");
  ASSERT_TRUE(Convert(R"({"s":{"a":7,"m":{"k1":["x","y"],"k2":null,"k3":[]}}})")) << error_.message;
  ASSERT_TRUE(Convert(R"({"s":{"m":{}}})")) << error_.message;
  ASSERT_TRUE(Convert(R"({"s":null})")) << error_.message;
  ASSERT_TRUE(Convert(R"({})")) << error_.message;
  // Leaves: a (def 2), key (def 3: s, m, key_value), element (def 6, rep 2).
  auto a = Page(0);
  EXPECT_EQ(a.def, (Levels{2, 1, 0, 0}));
  auto key = Page(1);
  EXPECT_EQ(key.rep, (Levels{0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(key.def, (Levels{3, 3, 3, 2, 0, 0}));
  EXPECT_EQ(Strings(key), (std::vector<std::string>{"k1", "k2", "k3"}));
  auto el = Page(2);
  // m.value: optional list (def 4 present, 3 null), list entries def 5, element required.
  EXPECT_EQ(el.rep, (Levels{0, 2, 1, 1, 0, 0, 0}));
  EXPECT_EQ(el.def, (Levels{5, 5, 3, 4, 2, 0, 0}));
  EXPECT_EQ(Strings(el), (std::vector<std::string>{"x", "y"}));
}

TEST_F(ConverterTest, EveryRejectionCodeRollsBackTheRecord) {
  Load(R"({"type":"object","required":["id","s"],"properties":{
    "id":{"type":"integer","minimum":0,"maximum":1000},
    "s":{"type":"object","required":["x"],"properties":{"x":{"type":"string"},
         "l":{"type":"array","items":{"type":"integer"}}}},
    "ts":{"type":"string","format":"date-time"},
    "amount":{"type":"number","multipleOf":0.01},
    "e":{"enum":["a","b"]}}})");
  ASSERT_TRUE(Convert(R"({"id":1,"s":{"x":"a","l":[1,2]}})"));
  // Each of these fails late, after earlier members were written.
  ExpectReject(R"({"id":2,"s":{"x":"a","l":[1,2,"three"]}})", RecordErrorCode::kTypeMismatch,
               "$.s.l[2]");
  ExpectReject(R"({"id":2,"s":{"l":[1]}})", RecordErrorCode::kMissingRequiredField, "$.s.x");
  ExpectReject(R"({"s":{"x":"a"}})", RecordErrorCode::kMissingRequiredField, "$.id");
  ExpectReject(R"({"id":null,"s":{"x":"a"}})", RecordErrorCode::kMissingRequiredField, "$.id");
  ExpectReject(R"({"id":1001,"s":{"x":"a"}})", RecordErrorCode::kValueOutOfRange, "$.id");
  ExpectReject(R"({"id":1,"s":{"x":"a"},"amount":0.001})", RecordErrorCode::kValueOutOfRange,
               "$.amount");
  ExpectReject(R"({"id":1,"s":{"x":"a"},"e":"c"})", RecordErrorCode::kValueOutOfRange, "$.e");
  ExpectReject(R"({"id":1,"s":{"x":"a"},"ts":"2021-02-30T00:00:00Z"})",
               RecordErrorCode::kValueOutOfRange, "$.ts");
  ExpectReject(R"({"id":1,"s":{"x":"a"},"ts":"yesterday"})", RecordErrorCode::kTypeMismatch,
               "$.ts");
  ExpectReject(R"({"id":1.5,"s":{"x":"a"}})", RecordErrorCode::kTypeMismatch, "$.id");
  ExpectReject(R"({"id":"1","s":{"x":"a"}})", RecordErrorCode::kTypeMismatch, "$.id");
  ExpectReject(R"({"id":1,"s":{"x":"a"},"junk":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]})",
               RecordErrorCode::kNestingTooDeep, "$.junk");
  ExpectReject(R"({"id":1,"s":{"x":"a"},"junk":tru})", RecordErrorCode::kMalformedJson, "$.junk");
  ExpectReject(R"({"id":1,"s":{"x":"a"})", RecordErrorCode::kMalformedJson, "$");
  ExpectReject(R"({"id":1,"s":{"x":"a"}} {})", RecordErrorCode::kMalformedJson, "$");
  ExpectReject(R"({"id":1,"id":2,"s":{"x":"a"}})", RecordErrorCode::kMalformedJson, "$.id");
  ExpectReject("not json", RecordErrorCode::kMalformedJson, "$");
  ExpectReject("[1]", RecordErrorCode::kTypeMismatch, "$");
  ExpectReject(std::string("{\"id\":1,\"s\":{\"x\":\"\xff\"}}"), RecordErrorCode::kMalformedJson,
               "$");
  ASSERT_TRUE(Convert(R"({"id":3,"s":{"x":"b"}})"));
  // Only the two accepted records reached the columns (id is an int: bounds fit).
  EXPECT_EQ(Values<int32_t>(Page(0)), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(writer_->num_rows(), 2);
}

TEST_F(ConverterTest, IntegersAcceptIntegralNumbers) {
  Load(R"({"type":"object","properties":{"n":{"type":"integer"}}})");
  ASSERT_TRUE(Convert(R"({"n":1.0})"));
  ASSERT_TRUE(Convert(R"({"n":-2e3})"));
  ExpectReject(R"({"n":1e19})", RecordErrorCode::kValueOutOfRange, "$.n");
  ExpectReject(R"({"n":18446744073709551616})", RecordErrorCode::kValueOutOfRange, "$.n");
  EXPECT_EQ(Values<int64_t>(Page(0)), (std::vector<int64_t>{1, -2000}));
}

// Issue 19: a value is stored exactly or refused, never rounded. The long column's
// neighbours of its range, integers that a double cannot hold, and fractions hidden in
// the 17th digit (12345678901234567.5 rounds to an integer as a double).
TEST_F(ConverterTest, IntegersAreExactOrRefused) {
  Load(R"({"type":"object","properties":{"l":{"type":"integer"},
    "i":{"type":"integer","minimum":-2147483648,"maximum":2147483647}}})");
  ASSERT_TRUE(Convert(R"({"l":-9223372036854775808})"));
  ASSERT_TRUE(Convert(R"({"l":9223372036854775807})"));
  ASSERT_TRUE(Convert(R"({"l":9007199254740993})"));        // 2^53 + 1: no double holds it
  ASSERT_TRUE(Convert(R"({"l":9223372036854775.807e3})"));  // exact, written with a fraction
  ASSERT_TRUE(Convert(
      R"({"l":1.00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000e0})"));
  ASSERT_TRUE(Convert(R"({"i":-2147483648})"));
  ExpectReject(R"({"l":-9223372036854775809})", RecordErrorCode::kValueOutOfRange, "$.l");
  ExpectReject(R"({"l":9223372036854775808})", RecordErrorCode::kValueOutOfRange, "$.l");
  ExpectReject(R"({"l":9.223372036854775808e18})", RecordErrorCode::kValueOutOfRange, "$.l");
  ExpectReject(R"({"l":12345678901234567.5})", RecordErrorCode::kTypeMismatch, "$.l");
  ExpectReject(R"({"l":9007199254740993.0000000001})", RecordErrorCode::kTypeMismatch, "$.l");
  ExpectReject(R"({"l":1e-400})", RecordErrorCode::kTypeMismatch, "$.l");
  ExpectReject(R"({"l":1e400})", RecordErrorCode::kValueOutOfRange, "$.l");
  ExpectReject(R"({"i":2147483648})", RecordErrorCode::kValueOutOfRange, "$.i");
  ExpectReject(R"({"i":-2147483649})", RecordErrorCode::kValueOutOfRange, "$.i");
  EXPECT_EQ(
      Values<int64_t>(Page(0)),
      (std::vector<int64_t>{INT64_MIN, INT64_MAX, 9007199254740993LL, 9223372036854775807LL, 1}));
  EXPECT_EQ(Values<int32_t>(Page(1)), (std::vector<int32_t>{INT32_MIN}));
}

// Integer bounds and multipleOf of the schema hold exactly too.
TEST_F(ConverterTest, IntegerConstraintsAreExact) {
  Load(R"({"type":"object","properties":{
    "b":{"type":"integer","minimum":9007199254740993,"maximum":9007199254740995},
    "f":{"type":"integer","multipleOf":0.3}}})");
  ASSERT_TRUE(Convert(R"({"b":9007199254740993})"));
  ExpectReject(R"({"b":9007199254740992})", RecordErrorCode::kValueOutOfRange, "$.b");
  ExpectReject(R"({"b":9007199254740996})", RecordErrorCode::kValueOutOfRange, "$.b");
  // 3 * 10^17 + 1 is no multiple of 0.3 (as doubles the remainder vanishes in rounding).
  ASSERT_TRUE(Convert(R"({"f":300000000000000000})"));
  ExpectReject(R"({"f":300000000000000001})", RecordErrorCode::kValueOutOfRange, "$.f");
  ExpectReject(R"({"f":1})", RecordErrorCode::kValueOutOfRange, "$.f");
}

// float and double: the nearest value of the type, read from the text; out of the type's
// range (or a non-zero number that would become 0) is refused.
TEST_F(ConverterTest, FloatingPointOutOfRangeIsRefused) {
  Load(R"({"type":"struct","fields":[{"id":1,"name":"f","required":false,"type":"float"},
    {"id":2,"name":"d","required":false,"type":"double"}]})");
  ASSERT_TRUE(Convert(R"({"f":3.4028234e38,"d":1.7976931348623157e308})"));
  ASSERT_TRUE(Convert(R"({"f":0.1,"d":-0.0})"));
  // 1.00000005960464477539: a tie between two floats after rounding to double first (the
  // nearest float of the decimal text is the upper one).
  ASSERT_TRUE(Convert(R"({"f":1.000000059604644775390626})"));
  ExpectReject(R"({"f":3.5e38})", RecordErrorCode::kValueOutOfRange, "$.f");
  ExpectReject(R"({"f":1e-50})", RecordErrorCode::kValueOutOfRange, "$.f");
  ExpectReject(R"({"d":1e309})", RecordErrorCode::kValueOutOfRange, "$.d");
  ExpectReject(R"({"d":-1e400})", RecordErrorCode::kValueOutOfRange, "$.d");
  ExpectReject(R"({"d":1e-400})", RecordErrorCode::kValueOutOfRange, "$.d");
  ASSERT_TRUE(Convert(R"({"d":0e-400})"));
  auto f = Values<float>(Page(0));
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0], 3.4028234e38f);
  EXPECT_EQ(f[1], 0.1f);
  EXPECT_EQ(f[2], 1.00000011920928955078125f);
  auto d = Values<double>(Page(1));
  EXPECT_EQ(d.size(), 3u);
}

// Double columns hold the correctly rounded value of the text, whatever its shape: the
// shortest round-trip text of random doubles, %.17g, random digit strings with exponents
// near the edges of the exact powers of ten (+-22), bit for bit against strtod.
TEST_F(ConverterTest, DoublesAreCorrectlyRounded) {
  Load(R"({"type":"struct","fields":[{"id":1,"name":"d","required":false,"type":"double"}]})");
  std::mt19937_64 rng(7);
  std::vector<std::string> tokens = {"0.1",
                                     "-0.0",
                                     "9007199254740993",
                                     "1e22",
                                     "1e23",
                                     "123456789012345678901234567890",
                                     "2.2250738585072014e-308",
                                     "4.9e-324",
                                     "1.7976931348623157e308",
                                     "0.30000000000000004"};
  char buf[64];
  for (int n = 0; n < 12000; ++n) {
    if (n % 3 == 0) {
      double d = static_cast<double>(rng() >> 11) * 0x1.0p-53 * std::pow(10.0, rng() % 40);
      tokens.emplace_back(buf, std::to_chars(buf, buf + sizeof buf, d).ptr);
    } else if (n % 3 == 1) {
      std::snprintf(buf, sizeof buf, "%.17g",
                    static_cast<double>(rng()) / static_cast<double>(1 + rng() % 1000000));
      tokens.emplace_back(buf);
    } else {
      std::string digits(1, static_cast<char>('1' + rng() % 9));
      for (int i = static_cast<int>(rng() % 22); i > 0; --i)
        digits.push_back(static_cast<char>('0' + rng() % 10));
      // A point after 1..all of the digits (then one more digit), half of the time.
      if (rng() % 2) {
        digits.insert(1 + rng() % digits.size(), 1, '.');
        if (digits.back() == '.') digits.push_back('5');
      }
      if (rng() % 2) digits += "e" + std::to_string(static_cast<int>(rng() % 61) - 30);
      tokens.push_back((rng() % 3 == 0 ? "-" : "") + digits);
    }
  }
  for (const auto& t : tokens) ASSERT_TRUE(Convert("{\"d\":" + t + "}")) << t;
  auto d = Values<double>(Page(0));
  ASSERT_EQ(d.size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const double want = std::strtod(tokens[i].c_str(), nullptr);
    ASSERT_EQ(std::memcmp(&d[i], &want, sizeof want), 0) << tokens[i];
  }
}

// The converter's own reading of decimal fractions (-?d{1,8}.d+, at most 19 digits; the
// shortest text of most doubles) gives strtod's double bit for bit: every split of 1..20
// digits around the point (the longest ones go back to simdjson), zeros after the point,
// signs, and texts within a few units of the 19th digit of the midpoint between two
// neighbouring doubles, where the rounding step must hand the token back rather than
// guess; with a minus sign, non-digits inside the digits and an exponent after them
// (other paths, same answers).
TEST_F(ConverterTest, DecimalFractionDoublesAreCorrectlyRounded) {
  Load(R"({"type":"struct","fields":[{"id":1,"name":"d","required":false,"type":"double"}]})");
  std::mt19937_64 rng(11);
  std::vector<std::string> tokens = {"0.0",
                                     "-0.0",
                                     "0.5",
                                     "9.999999999999999999",
                                     "12345678.12345678901",
                                     "0.000000000000000001",
                                     "1.7976931348623157",
                                     "4.9406564584124654"};
  auto digits = [&](size_t n, bool first_nonzero) {
    std::string out;
    for (size_t i = 0; i < n; ++i) {
      out.push_back(
          static_cast<char>((i == 0 && first_nonzero ? '1' + rng() % 9 : '0' + rng() % 10)));
    }
    return out;
  };
  for (int n = 0; n < 40000; ++n) {
    std::string t;
    if (n % 4 == 3) {
      // Near a midpoint: (d + next(d)) / 2 exactly (a long double holds it), its first 19
      // significant digits, the last one moved by -2..+2.
      const double d = static_cast<double>(rng() >> 11) * 0x1.0p-53 * std::pow(10.0, rng() % 8);
      const long double mid =
          (static_cast<long double>(d) + std::nextafter(d, 2.0 * d + 1.0)) / 2.0L;
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.18Le", mid);  // d.dddddddddddddddddde±x: 19 digits
      std::string m(buf);
      const int exp10 = std::atoi(m.c_str() + m.find('e') + 1);
      std::string sig = m.substr(0, 1) + m.substr(2, 18);
      int last = sig.back() - '0' + static_cast<int>(rng() % 5) - 2;
      if (last < 0 || last > 9) last = sig.back() - '0';
      sig.back() = static_cast<char>('0' + last);
      if (exp10 < 0 || exp10 > 7) continue;  // keep the integer part at 1..8 digits
      t = sig.substr(0, static_cast<size_t>(exp10) + 1) + "." +
          sig.substr(static_cast<size_t>(exp10) + 1);
    } else {
      const size_t int_digits = 1 + rng() % 8;
      const size_t frac_digits = 1 + rng() % (20 - int_digits);
      t = rng() % 4 == 0 ? "0" : digits(int_digits, true);
      t += "." + digits(frac_digits, false);
    }
    // An exponent: the fast path must see its 'e' wherever it falls among the digits.
    if (rng() % 5 == 0) t += (rng() % 2 ? "e" : "E-") + std::to_string(rng() % 6);
    if (rng() % 3 == 0) t = "-" + t;
    tokens.push_back(t);
  }
  for (const auto& t : tokens) ASSERT_TRUE(Convert("{\"d\":" + t + "}")) << t;
  auto d = Values<double>(Page(0));
  ASSERT_EQ(d.size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const double want = std::strtod(tokens[i].c_str(), nullptr);
    ASSERT_EQ(std::memcmp(&d[i], &want, sizeof want), 0) << tokens[i];
  }
  // Not of the fast path's shape: refused or read as before.
  ExpectReject(R"({"d":1.2x3})", RecordErrorCode::kMalformedJson, "$.d");
  ExpectReject(R"({"d":01.5})", RecordErrorCode::kMalformedJson, "$.d");
  ExpectReject(R"({"d":1.})", RecordErrorCode::kMalformedJson, "$.d");
  ExpectReject(R"({"d":-.5})", RecordErrorCode::kMalformedJson, "$.d");
  ASSERT_TRUE(Convert(R"({"d":1.25e2})"));
  ASSERT_TRUE(Convert(R"({"d":-12345678.5})"));
  ASSERT_TRUE(Convert(R"({"d":123456789.5})"));
  EXPECT_EQ(Values<double>(Page(0)), (std::vector<double>{125.0, -12345678.5, 123456789.5}));
}

// Decimals: exact at the column's scale and within its precision, or refused.
TEST_F(ConverterTest, DecimalsAreExactOrRefused) {
  Load(R"j({"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"decimal(9,2)"},
    {"id":2,"name":"w","required":false,"type":"decimal(38,2)"}]})j");
  ASSERT_TRUE(Convert(R"({"a":9999999.99,"w":123456789012345678901234567890123456.78})"));
  ASSERT_TRUE(Convert(R"({"a":-0.10,"w":1.5e2})"));
  ASSERT_TRUE(Convert(R"({"a":12.300000})"));
  ExpectReject(R"({"a":10000000.00})", RecordErrorCode::kValueOutOfRange, "$.a");
  ExpectReject(R"({"a":0.001})", RecordErrorCode::kValueOutOfRange, "$.a");
  ExpectReject(R"({"a":12345678901234567.5})", RecordErrorCode::kValueOutOfRange, "$.a");
  ExpectReject(R"({"w":1234567890123456789012345678901234567.8})",
               RecordErrorCode::kValueOutOfRange, "$.w");
  ExpectReject(R"({"w":0.125})", RecordErrorCode::kValueOutOfRange, "$.w");
  EXPECT_EQ(Values<int32_t>(Page(0)), (std::vector<int32_t>{999999999, -10, 1230}));
}

TEST_F(ConverterTest, EnumMembersKeepTheirJsonKindAndDeclaredType) {
  Load(R"({"type":"object","properties":{
    "i":{"type":"integer","enum":[1,2,3]},
    "s":{"type":"string","enum":["1","2"]},
    "b":{"type":"boolean","enum":[true]},
    "u":{"enum":["a",1,null]},
    "f":{"type":"number","enum":[1.5,2]}}})");
  ASSERT_TRUE(Convert(R"({"i":2,"s":"1","b":true,"u":"a"})"));
  ASSERT_TRUE(Convert(R"({"u":1})"));
  ASSERT_TRUE(Convert(R"({"u":null})"));
  ExpectReject(R"({"i":"2"})", RecordErrorCode::kTypeMismatch, "$.i");
  ExpectReject(R"({"i":5})", RecordErrorCode::kValueOutOfRange, "$.i");
  ExpectReject(R"({"s":1})", RecordErrorCode::kTypeMismatch, "$.s");
  ExpectReject(R"({"b":"true"})", RecordErrorCode::kTypeMismatch, "$.b");
  ExpectReject(R"({"u":"1"})", RecordErrorCode::kValueOutOfRange, "$.u");  // the number 1 is listed
  ASSERT_TRUE(Convert(R"({"f":2.0,"u":1.0})"));                            // numbers by value
  ASSERT_TRUE(Convert(R"({"f":1.50})"));
  ExpectReject(R"({"f":2.5})", RecordErrorCode::kValueOutOfRange, "$.f");
}

TEST_F(ConverterTest, DecimalBoundsAndIntegerMultipleOf) {
  Load(R"({"type":"object","properties":{
    "d":{"type":"number","multipleOf":0.01,"minimum":0,"maximum":10},
    "x":{"type":"number","multipleOf":0.5,"exclusiveMinimum":-1,"exclusiveMaximum":1},
    "n":{"type":"integer","multipleOf":5},
    "h":{"type":"integer","multipleOf":0.5},
    "k":{"type":"integer","multipleOf":1.5},
    "m":{"type":"number","multipleOf":0.01,"minimum":0.01,"maximum":19.99}}})");
  ASSERT_TRUE(Convert(R"({"d":10.00,"x":0.5,"n":10,"h":7,"k":3})"));
  ASSERT_TRUE(Convert(R"({"d":0,"x":-0.5,"n":-15,"k":-6})"));
  // Bounds that binary floating point cannot hold exactly are still inclusive.
  ASSERT_TRUE(Convert(R"({"m":0.01})"));
  ASSERT_TRUE(Convert(R"({"m":19.99})"));
  ASSERT_TRUE(Convert(R"({"m":0.10})"));
  ExpectReject(R"({"m":0})", RecordErrorCode::kValueOutOfRange, "$.m");
  ExpectReject(R"({"m":20.00})", RecordErrorCode::kValueOutOfRange, "$.m");
  ExpectReject(R"({"k":7})", RecordErrorCode::kValueOutOfRange, "$.k");
  ExpectReject(R"({"d":20})", RecordErrorCode::kValueOutOfRange, "$.d");
  ExpectReject(R"({"d":-1})", RecordErrorCode::kValueOutOfRange, "$.d");
  ExpectReject(R"({"d":10.01})", RecordErrorCode::kValueOutOfRange, "$.d");
  ExpectReject(R"({"x":1})", RecordErrorCode::kValueOutOfRange, "$.x");
  ExpectReject(R"({"x":-1})", RecordErrorCode::kValueOutOfRange, "$.x");
  ExpectReject(R"({"n":7})", RecordErrorCode::kValueOutOfRange, "$.n");
}

}  // namespace
}  // namespace icestream::schema

namespace icestream::schema {
namespace {

// ConvertRun (records tokenized a window at a time and walked over the token index) against
// ConvertPadded one record at a time through simdjson On-Demand alone: the same result and
// error for every record and byte-identical files, over
// thousands of JSON lines (several windows) among which are records of every kind a
// window must hand back to the one-record path: malformed, cut ones that the next line
// completes, content after the record, bad UTF-8 and an unclosed string (stage 1 refuses
// the window), non-objects, leading whitespace, CRLF and blank lines, records too large
// for a window, and rejections for the schema's sake.
TEST(ConverterRunTest, AgreesWithOneRecordAtATime) {
  const std::string schema_json = R"({"type":"object","required":["id"],"properties":{
      "id":{"type":"integer"},"x":{"type":"number"},"name":{"type":"string"},
      "loc":{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"}}},
      "tags":{"type":"array","items":{"type":"string"}},"ok":{"type":"boolean"}}})";
  ASSERT_OK_AND_ASSIGN(auto schema, LoadConvertibleSchema(schema_json));
  std::mt19937_64 rng(20);
  auto valid = [&](int64_t id) {
    std::string r = "{\"id\":" + std::to_string(id);
    if (rng() % 4) r += ",\"x\":" + std::to_string(static_cast<double>(rng() % 100000) / 7);
    if (rng() % 3) r += ",\"name\":\"n" + std::to_string(rng() % 50) + "\"";
    if (rng() % 2) {
      r += ",\"loc\":{\"lat\":" + std::to_string(static_cast<int>(rng() % 90)) + ".5,\"lon\":-" +
           std::to_string(rng() % 180) + "}";
    }
    if (rng() % 2) r += ",\"tags\":[\"a\",\"b" + std::to_string(rng() % 9) + "\"]";
    if (rng() % 2) r += rng() % 2 ? ",\"ok\":true" : ",\"ok\":false";
    return r + "}";
  };
  // The lines, with the separators that follow each.
  std::vector<std::pair<std::string, std::string>> lines;
  for (int64_t n = 0; n < 6000; ++n) {
    std::string r = valid(n);
    switch (rng() % 40) {
      case 0:
        r = "{\"id\":\"seven\"}";
        break;  // type mismatch
      case 1:
        r = "{\"x\":1.5}";
        break;  // required id missing
      case 2:
        r = r.substr(0, rng() % r.size());
        break;  // cut anywhere
      case 3:
        r = "{\"id\":1,\"tags\":[\"a\",";
        break;  // the next line completes it
      case 4:
        r += rng() % 2 ? " {\"id\":2}" : " 7";
        break;  // content after the record
      case 5:
        r = "{\"id\":3,\"name\":\"\xC3\x28\"}";
        break;  // bad UTF-8
      case 6:
        r = "{\"id\":4,\"name\":\"open}";
        break;  // unclosed string
      case 7:
        r = rng() % 2 ? "[1,2]" : "5";
        break;  // not an object
      case 8:
        r = "   " + r;
        break;  // leading whitespace
      case 9:
        r = "{\"id\":5,\"id\":6}";
        break;  // member twice
      case 10:
        r = "{\"id\":8,\"name\":\"" + std::string(70000, 'z') + "\"}";
        break;  // > window
      case 11:
        r = "{\"id\":9,\"loc\":{\"lat\":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}}";
        break;
      case 12:
        r = "{\"id\":10,\"x\":1e999}";
        break;  // out of range
      case 13:
        r = "}{";
        break;
      default:
        break;
    }
    const char* seps[] = {"\n", "\n", "\n", "\r\n", "\n  \t\n", "\n\n"};
    lines.emplace_back(r, seps[rng() % 6]);
    if (r == "{\"id\":1,\"tags\":[\"a\",") lines.emplace_back("\"b\"]}", "\n");
  }
  // The buffer and the records as `icestream convert` cuts them (blank lines dropped,
  // a line's \r left in the gap), kPadding readable bytes after the last.
  std::string buf;
  std::vector<size_t> starts;
  for (const auto& [r, sep] : lines) {
    starts.push_back(buf.size());
    buf += r;
    buf += sep;
  }
  buf.append(RecordConverter::kPadding, '\0');
  std::vector<std::string_view> records;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].first.find_first_not_of(" \t") == std::string::npos) continue;
    records.emplace_back(buf.data() + starts[i], lines[i].first.size());
  }
  // Dictionaries off: byte-identical files. On: the same rows (a window that hands a
  // record back has walked part of it, so the chunk's dictionary may hold other
  // unreferenced entries, as the values of any rejected record leave).
  for (bool dictionary : {false, true}) {
    SCOPED_TRACE(dictionary ? "dictionary" : "plain");
    pq::WriterOptions o;
    o.codec = pq::Codec::kUncompressed;
    o.page_size = 4096;  // many pages, cut between the same records in both files
    o.dictionary = dictionary;
    std::string one_file, run_file;
    pq::StringOutputStream one_out(&one_file), run_out(&run_file);
    ASSERT_OK_AND_ASSIGN(auto one_writer, pq::FileWriter::Make(schema.schema, &one_out, o));
    ASSERT_OK_AND_ASSIGN(auto run_writer, pq::FileWriter::Make(schema.schema, &run_out, o));
    ConverterOptions on_demand;
    on_demand.token_walk = false;  // the reference: every record through simdjson On-Demand
    ASSERT_OK_AND_ASSIGN(auto one, RecordConverter::Make(schema, one_writer.get(), on_demand));
    ASSERT_OK_AND_ASSIGN(auto run, RecordConverter::Make(schema, run_writer.get()));
    std::vector<std::pair<bool, std::string>> want;
    RecordError e;
    for (auto r : records) {
      ASSERT_OK_AND_ASSIGN(bool ok, one->ConvertPadded(r, &e));
      want.emplace_back(ok, ok ? "" : std::string(RecordErrorCodeName(e.code)) + " " + e.message);
    }
    size_t seen = 0, rejected = 0;
    ASSERT_OK(run->ConvertRun(records.data(), records.size(), &e, [&](size_t i, bool ok) {
      EXPECT_EQ(i, seen);
      ++seen;
      rejected += !ok;
      const std::pair<bool, std::string> got(
          ok, ok ? "" : std::string(RecordErrorCodeName(e.code)) + " " + e.message);
      EXPECT_EQ(got, want[i]) << "record " << i << ": " << records[i].substr(0, 200);
      return Status::OK();
    }));
    EXPECT_EQ(seen, records.size());
    EXPECT_GT(rejected, 500u);
    EXPECT_GT(seen - rejected, 4000u);
    ASSERT_OK(one_writer->Close());
    ASSERT_OK(run_writer->Close());
    if (!dictionary) {
      EXPECT_TRUE(one_file == run_file)
          << "the files differ (" << one_file.size() << " and " << run_file.size() << " bytes)";
    }
    std::string one_rows, run_rows;
    ASSERT_OK_AND_ASSIGN(auto one_reader, pq::ParquetFileReader::Open(one_file));
    ASSERT_OK_AND_ASSIGN(auto run_reader, pq::ParquetFileReader::Open(run_file));
    ASSERT_EQ(one_reader->num_row_groups(), run_reader->num_row_groups());
    for (int g = 0; g < one_reader->num_row_groups(); ++g) {
      ASSERT_OK(pq::AppendJsonRows(*one_reader, g, &one_rows));
      ASSERT_OK(pq::AppendJsonRows(*run_reader, g, &run_rows));
    }
    EXPECT_EQ(std::count(run_rows.begin(), run_rows.end(), '\n'),
              static_cast<std::ptrdiff_t>(seen - rejected));
    EXPECT_TRUE(one_rows == run_rows) << "the rows differ";
  }
}

// Routing: a valid record whose routed value falls outside the converter's range is rolled
// back (nothing stays in the columns) and reported with its value; inside the range it is
// written; invalid records are rejected as usual whatever their value.
TEST(ConverterRoutingTest, RecordsOutsideTheRangeComeBackWithTheirValue) {
  ASSERT_OK_AND_ASSIGN(auto s,
                       LoadConvertibleSchema(R"({"type":"object","required":["ts"],"properties":{
      "ts":{"type":"string","format":"date-time"},"n":{"type":"integer"}}})"));
  std::string file;
  format::parquet::StringOutputStream out(&file);
  ASSERT_OK_AND_ASSIGN(
      auto w, format::parquet::FileWriter::Make(s.schema, &out, format::parquet::WriterOptions{}));
  const int32_t ts_id =
      s.schema.fields[0].name == "ts" ? s.schema.fields[0].id : s.schema.fields[1].id;
  ConverterOptions o;
  o.route_field_id = ts_id;
  ASSERT_OK_AND_ASSIGN(auto c, RecordConverter::Make(s, w.get(), o));
  const int64_t hour = 3600LL * 1000000;
  const int64_t t0 = 1788431399LL * 1000000;  // 2026-09-03T10:29:59Z
  c->SetRoute(t0 / hour * hour, t0 / hour * hour + hour);
  RecordError e;
  auto r = c->Convert(R"({"ts":"2026-09-03T10:29:59Z","n":1})", &e);
  ASSERT_OK(r) << e.message;
  ASSERT_TRUE(*r) << e.message;
  EXPECT_EQ(w->num_rows(), 1);
  r = c->Convert(R"({"ts":"2026-09-03T11:00:00Z","n":2})", &e);
  ASSERT_OK(r);
  EXPECT_FALSE(*r);
  EXPECT_EQ(e.code, RecordErrorCode::kOutsideRoute);
  ASSERT_TRUE(e.route_value.has_value());
  EXPECT_EQ(*e.route_value, (t0 / hour * hour + hour));
  for (int i = 0; i < w->num_columns(); ++i) EXPECT_EQ(w->column(i).num_levels(), 1) << i;
  // An invalid record is rejected for what is wrong with it, not routed.
  r = c->Convert(R"({"ts":"2026-09-03T11:00:00Z","n":"x"})", &e);
  ASSERT_OK(r);
  EXPECT_FALSE(*r);
  EXPECT_EQ(e.code, RecordErrorCode::kTypeMismatch);
  EXPECT_FALSE(e.route_value.has_value());
  // Widening the range takes it.
  c->SetRoute(INT64_MIN, INT64_MAX);
  r = c->Convert(R"({"ts":"2026-09-03T11:00:00Z","n":2})", &e);
  ASSERT_OK(r);
  ASSERT_TRUE(*r);
  EXPECT_EQ(w->num_rows(), 2);
}

}  // namespace
}  // namespace icestream::schema
