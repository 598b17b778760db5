// The token walk (token_walker.h) against the On-Demand walk it stands in for: over
// records of every type and nesting kind, and thousands of damaged copies of them (bytes
// dropped, doubled, replaced by JSON's structural characters), each record is converted
// with the token walk, one at a time and a window at a time, and with the On-Demand walk
// alone; every record must get the same verdict and error, and the files must be
// byte-identical.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/testing/status_assertions.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "schema/json_schema.h"
#include "schema/record_converter.h"

namespace icestream::schema {
namespace {

namespace pq = format::parquet;

// Every Iceberg type, structs in lists in maps, a wide struct (looked up by name), and
// JSON Schema constraints (bounds, enums, multipleOf, required).
constexpr const char* kIcebergSchema = R"j({"type":"struct","schema-id":0,"fields":[
  {"id":1,"name":"b","required":false,"type":"boolean"},
  {"id":2,"name":"i","required":false,"type":"int"},
  {"id":3,"name":"l","required":true,"type":"long"},
  {"id":4,"name":"f","required":false,"type":"float"},
  {"id":5,"name":"d","required":false,"type":"double"},
  {"id":6,"name":"dec","required":false,"type":"decimal(9,2)"},
  {"id":7,"name":"big","required":false,"type":"decimal(38,5)"},
  {"id":8,"name":"date","required":false,"type":"date"},
  {"id":9,"name":"time","required":false,"type":"time"},
  {"id":10,"name":"ts","required":false,"type":"timestamp"},
  {"id":11,"name":"tz","required":false,"type":"timestamptz"},
  {"id":12,"name":"s","required":false,"type":"string"},
  {"id":13,"name":"u","required":false,"type":"uuid"},
  {"id":14,"name":"fx","required":false,"type":"fixed[4]"},
  {"id":15,"name":"bin","required":false,"type":"binary"},
  {"id":16,"name":"st","required":false,"type":{"type":"struct","fields":[
    {"id":17,"name":"x","required":true,"type":"int"},
    {"id":18,"name":"tags","required":false,"type":{"type":"list","element-id":19,
      "element-required":false,"element":"string"}}]}},
  {"id":20,"name":"m","required":false,"type":{"type":"map","key-id":21,"key":"string",
    "value-id":22,"value-required":false,"value":{"type":"list","element-id":23,
    "element-required":true,"element":{"type":"struct","fields":[
      {"id":24,"name":"q","required":false,"type":"double"}]}}}},
  {"id":25,"name":"a long member name","required":false,"type":"long"}
]})j";

constexpr const char* kJsonSchema = R"j({"type":"object","required":["id"],"properties":{
  "id":{"type":"integer","minimum":0,"maximum":1000000},
  "amount":{"type":"number","multipleOf":0.01,"minimum":-500,"maximum":500},
  "score":{"type":"number","minimum":0,"exclusiveMaximum":1},
  "even":{"type":"integer","multipleOf":2},
  "half":{"type":"integer","multipleOf":0.5},
  "kind":{"enum":["a","b","c"]},
  "level":{"type":"string","enum":["low","high"]},
  "n":{"type":["integer","null"]},
  "w":{"type":"object","properties":{
    "c0":{"type":"integer"},"c1":{"type":"string"},"c2":{"type":"number"},
    "c3":{"type":"boolean"},"c4":{"type":"string","format":"date-time"},
    "c5":{"type":"string","format":"uuid"},"c6":{"type":"integer"},"c7":{"type":"string"},
    "c8":{"type":"integer"},"c9":{"type":"string"}}},
  "arr":{"type":"array","items":{"type":"array","items":{"type":"number"}}},
  "dict":{"type":"object","additionalProperties":{"type":"integer"}}}})j";

// Valid records of each schema, with the shapes the token walk takes and the ones it
// hands on (escapes, unknown members, numbers it does not parse itself).
const std::vector<std::string>& IcebergSeeds() {
  static const std::vector<std::string> seeds = {
      R"({"b":true,"i":-7,"l":123456789012,"f":1.5,"d":0.8414709848078965,"dec":12.34,)"
      R"("big":-98765.43210,"date":"2024-02-29","time":"12:34:56.789","ts":"2025-01-01T00:00:00Z",)"
      R"("tz":"2025-06-30T23:59:59.999999+02:00","s":"hello","u":"123e4567-e89b-12d3-a456-426614174000",)"
      R"("fx":"AQIDBA==","bin":"aGVsbG8=","st":{"x":1,"tags":["a",null,"c"]},)"
      R"("m":{"k1":[{"q":1.25},{}],"k2":null,"k3":[]},"a long member name":5})",
      R"({"l":0})",
      "{ \"l\" : 1 ,\t\"d\" : 1e300 , \"s\" :\r\"x y\" , \"st\" : { \"x\" : 2 } }  ",
      R"({"b":false,"i":7,"l":-1,"d":-38.65,"dec":-0.5,"big":1,"date":"1970-01-01",)"
      R"("time":"00:00:00Z","ts":"2025-01-01 00:00:00","tz":"2025-01-01T00:00:00-01:30","s":"x",)"
      R"("u":"00000000-0000-0000-0000-000000000000","fx":"AAAAAA==","bin":"",)"
      R"("st":{"tags":["a"],"x":0},"m":{"k":[{"q":0.5},{"q":null}]},"a long member name":-1})",
      R"({"l":-9223372036854775808,"d":-60,"s":"","st":{"x":-2147483648,"tags":[]},"m":{}})",
      R"({ "l" : 1 , "d" : 1e300 , "s" : "tab\there" , "st" : { "x" : 2 } })",
      R"({"l":2,"s":"caf\u00e9","unknown":{"deep":[1,2,{"x":null}]},"d":-0.0})",
      R"({"\u006c":3,"d":12345678901234567890.5,"f":3.4e38,"i":2147483647})",
      R"({"l":4,"b":null,"i":null,"d":null,"s":null,"st":null,"m":null,"a long member name":null})",
      R"({"l":5,"m":{"a\"b":[{"q":-1.5e-7}],"":[{"q":null}]},"date":"0001-01-01"})",
  };
  return seeds;
}

const std::vector<std::string>& JsonSchemaSeeds() {
  static const std::vector<std::string> seeds = {
      R"({"id":1,"amount":12.34,"score":0.5,"even":4,"half":3,"kind":"a","level":"low","n":null,)"
      R"("w":{"c0":1,"c1":"x","c2":2.5,"c3":false,"c4":"2025-01-01T00:00:00.5Z",)"
      R"("c5":"123E4567-E89B-12D3-A456-426614174000","c6":6,"c7":"y","c8":8,"c9":"z"},)"
      R"("arr":[[1,2.5],[],[-3e2]],"dict":{"a":1,"b":2}})",
      R"({"id":2,"w":{"c9":"z","c8":8,"c0":0},"arr":[],"dict":{}})",
      R"({"id":3,"amount":-500,"score":0,"n":7,"w":{}})",
      R"({"id":4,"amount":500.001,"kind":"d","level":"mid","even":3,"half":0.25})",
      R"({"id":1000001,"score":1,"w":{"c1":"\n"}})",
  };
  return seeds;
}

// A damaged copy: a few bytes dropped, doubled or replaced by a character JSON gives a
// meaning to.
std::string Damage(const std::string& r, std::mt19937_64& rng) {
  static const char kChars[] = "{}[]:,\"\\ 0123456789-+.eEtrufalsn\x01\xC3\x28";
  std::string s = r;
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng() % s.size();
    switch (rng() % 4) {
      case 0:
        s.erase(at, 1 + rng() % 3);
        break;
      case 1:
        s.insert(at, 1, s[at]);
        break;
      case 2:
        s[at] = kChars[rng() % (sizeof kChars - 1)];
        break;
      default:
        s.insert(at, 1, kChars[rng() % (sizeof kChars - 1)]);
        break;
    }
  }
  return s;
}

std::string Verdict(bool ok, const RecordError& e) {
  if (ok) return "ok";
  return std::string(RecordErrorCodeName(e.code)) + " " + e.message;
}

// Converts `lines` (JSON lines in one buffer) with On-Demand alone, with the token walk one
// at a time and with it a window at a time: the same verdict for each line, and the same
// file. Returns how many were accepted.
size_t ExpectSameVerdicts(const std::string& schema_text, const std::vector<std::string>& lines) {
  auto loaded = LoadConvertibleSchema(schema_text);
  EXPECT_TRUE(loaded.ok());
  if (!loaded.ok()) return 0;
  const ConvertibleSchema& schema = *loaded;
  std::string buf;
  std::vector<size_t> starts;
  for (const auto& l : lines) {
    starts.push_back(buf.size());
    buf += l;
    buf += '\n';
  }
  buf.append(RecordConverter::kPadding, '\0');
  std::vector<std::string_view> records;
  for (size_t i = 0; i < lines.size(); ++i)
    records.emplace_back(buf.data() + starts[i], lines[i].size());

  pq::WriterOptions o;
  o.codec = pq::Codec::kUncompressed;
  o.page_size = 4096;
  o.dictionary = false;  // (a declined walk may leave unreferenced dictionary entries)
  std::string files[3];
  pq::StringOutputStream outs[3] = {pq::StringOutputStream(&files[0]),
                                    pq::StringOutputStream(&files[1]),
                                    pq::StringOutputStream(&files[2])};
  std::unique_ptr<pq::FileWriter> writers[3];
  std::unique_ptr<RecordConverter> convs[3];
  for (int k = 0; k < 3; ++k) {
    auto w = pq::FileWriter::Make(schema.schema, &outs[k], o);
    EXPECT_TRUE(w.ok());
    if (!w.ok()) return 0;
    writers[k] = std::move(*w);
    ConverterOptions co;
    co.token_walk = k != 0;  // 0: On-Demand only; 1: token walk per record; 2: per window
    auto c = RecordConverter::Make(schema, writers[k].get(), co);
    EXPECT_TRUE(c.ok());
    if (!c.ok()) return 0;
    convs[k] = std::move(*c);
  }
  RecordError e;
  std::vector<std::string> want;
  size_t accepted = 0;
  for (auto r : records) {
    auto ok = convs[0]->ConvertPadded(r, &e);
    EXPECT_OK(ok);
    want.push_back(Verdict(ok.ok() && *ok, e) + (ok.ok() && *ok ? "" : " at " + e.path));
    accepted += ok.ok() && *ok;
    auto ok1 = convs[1]->ConvertPadded(r, &e);
    EXPECT_OK(ok1);
    EXPECT_EQ(Verdict(ok1.ok() && *ok1, e) + (ok1.ok() && *ok1 ? "" : " at " + e.path), want.back())
        << r;
  }
  EXPECT_OK(convs[2]->ConvertRun(records.data(), records.size(), &e, [&](size_t i, bool ok) {
    EXPECT_EQ(Verdict(ok, e) + (ok ? "" : " at " + e.path), want[i]) << records[i];
    return Status::OK();
  }));
  for (auto& w : writers) EXPECT_OK(w->Close());
  EXPECT_TRUE(files[1] == files[0]) << "one at a time: the files differ";
  EXPECT_TRUE(files[2] == files[0]) << "windows: the files differ";
  return accepted;
}

void ExpectWalksAgree(const std::string& schema_text, const std::vector<std::string>& seeds,
                      uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> lines;
  for (int n = 0; n < 20000; ++n) {
    const std::string& base = seeds[rng() % seeds.size()];
    lines.push_back(rng() % 3 == 0 ? base : Damage(base, rng));
    if (lines.back().find('\n') != std::string::npos) lines.back() = base;
  }
  const size_t accepted = ExpectSameVerdicts(schema_text, lines);
  EXPECT_GT(accepted, lines.size() / 5);
  EXPECT_LT(accepted, lines.size());
}

// Grammar edges the walk itself must refuse (or take exactly as On-Demand does).
TEST(TokenWalkTest, AgreesWithOnDemandOnGrammarEdges) {
  const std::vector<std::string> records = {
      R"({"l":1,})",
      R"({"l":1 "d":2})",
      R"({"l"1})",
      R"({"l":1}})",
      R"({"l":1})",
      R"({"l":[1]})",
      R"({"l":tru})",
      R"({"l":1,"b":nul})",
      R"({"l":1,"b":truex})",
      R"({"l":1,"s":"a"x})",
      R"({"l":1,"s":"a""b"})",
      R"({"l":-})",
      R"({"l":01})",
      R"({"l":1.})",
      R"({"l":.5})",
      R"({"l":1e})",
      R"({"l":--1})",
      R"({"l":+1})",
      R"({"l":1,"d":1.5.5})",
      R"({"l":1,"d":0x10})",
      R"({"l":1,"d":1e5})",
      R"({"l":1,"d":-0})",
      R"({"l":1,"d":1E+2})",
      R"({"l":1,,"d":1})",
      R"({,"l":1})",
      R"({"l":1:2})",
      R"({"l"::1})",
      R"({:1})",
      R"({"l":1,"st":{"x":1,}})",
      R"({"l":1,"st":{"x":1}]})",
      R"({"l":1,"st":["x"]})",
      R"({"l":1,"st":{"tags":["a",]}})",
      R"({"l":1,"st":{"tags":[,"a"]}})",
      R"({"l":1,"st":{"tags":["a" "b"]}})",
      R"({"l":1,"st":{"tags":["a"}}})",
      R"({"l":1,"m":{"k":[{"q":1}],}})",
      R"({"l":1,"m":{"k"[]}})",
      R"({"l":1,"m":{1:[]}})",
      R"({"l":1,"m":{"k":[{"q":1}]})",
      R"({"l":1}  )",
      R"(  {"l":1})",
      R"({"l":1} {"l":2})",
      R"({"l":1}x)",
      R"({"l":1,"s":"A"})",
      R"({"l":1,"s":""})",
      R"({"l":1,"l":2})",
      R"({"l":null})",
      R"({})",
      R"([])",
      R"("x")",
      R"(1)",
      "",
      R"({"l":1,"s":"é"})",
      R"({"l":1,"d":1e400})",
      R"({"l":1,"d":1e-400})",
      R"({"l":9223372036854775808})",
      R"({"l":-9223372036854775809})",
      R"({"l":1,"i":2147483648})",
      R"({"l":1.0})",
      R"({"l":1,"date":"2023-02-29"})",
      R"({"l":1,"u":"not-a-uuid"})",
      R"({"l":1,"fx":"AA=="})",
  };
  ExpectSameVerdicts(kIcebergSchema, records);
}

TEST(TokenWalkTest, AgreesWithOnDemandOnEveryTypeAndDamagedRecords) {
  ExpectWalksAgree(kIcebergSchema, IcebergSeeds(), 1);
}

TEST(TokenWalkTest, AgreesWithOnDemandOnConstraintsWideStructsAndMaps) {
  ExpectWalksAgree(kJsonSchema, JsonSchemaSeeds(), 2);
}

}  // namespace
}  // namespace icestream::schema
