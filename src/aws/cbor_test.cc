// Tests of the CBOR ⇄ JSON 1.1 bridge: byte-exact encodings from RFC 8949 Appendix A and
// the Java SDK's timestamp convention, and refusal of malformed input.
#include "aws/cbor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace icestream::aws {
namespace {

using nlohmann::json;

const CborModel& Model() {
  static const CborModel m{{"Data"}, {"Timestamp", "ApproximateArrivalTimestamp"}};
  return m;
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

TEST(CborRequestTest, BlobBecomesBase64AndTimestampMillisBecomeSeconds) {
  // {"Data": h'68656c6c6f', "Timestamp": 1(1700000000123), "Limit": 5}
  json in = {{"Data", json::binary({'h', 'e', 'l', 'l', 'o'})}, {"Limit", 5}};
  std::string cbor;
  json::to_cbor(in, cbor);
  // Append the tagged timestamp by hand: nlohmann cannot tag a number.
  cbor[0] = static_cast<char>(0xa3);  // map of 3
  cbor +=
      Bytes({0x69}) + "Timestamp" + Bytes({0xc1, 0x1b, 0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b});
  std::string out;
  ASSERT_FALSE(CborRequestToJson(cbor, Model(), &out).has_value()) << Hex(cbor);
  json j = json::parse(out);
  EXPECT_EQ(j["Data"], "aGVsbG8=");
  EXPECT_EQ(j["Limit"], 5);
  EXPECT_NEAR(j["Timestamp"].get<double>(), 1700000000.123, 1e-6);
}

TEST(CborRequestTest, SmallTimestampIsSeconds) {
  // {"Timestamp": 1(1700000000.5)} as RFC 8949 writes it (double).
  std::string cbor = Bytes({0xa1, 0x69}) + "Timestamp" +
                     Bytes({0xc1, 0xfb, 0x41, 0xd9, 0x54, 0xfc, 0x40, 0x20, 0x00, 0x00});
  std::string out;
  ASSERT_FALSE(CborRequestToJson(cbor, Model(), &out).has_value());
  EXPECT_NEAR(json::parse(out)["Timestamp"].get<double>(), 1700000000.5, 1e-6);
}

TEST(CborRequestTest, IndefiniteLengthsAreAccepted) {
  // {_ "StreamName": (_ "ab", "c"), "Records": [_ {_ "Data": (_ h'01', h'02') } ] }
  std::string cbor = Bytes({0xbf, 0x6a}) + "StreamName" + Bytes({0x7f, 0x62}) + "ab" +
                     Bytes({0x61}) + "c" + Bytes({0xff, 0x67}) + "Records" +
                     Bytes({0x9f, 0xbf, 0x64}) + "Data" +
                     Bytes({0x5f, 0x41, 0x01, 0x41, 0x02, 0xff, 0xff, 0xff, 0xff});
  std::string out;
  auto err = CborRequestToJson(cbor, Model(), &out);
  ASSERT_FALSE(err.has_value()) << err->message;
  json j = json::parse(out);
  EXPECT_EQ(j["StreamName"], "abc");
  EXPECT_EQ(j["Records"][0]["Data"], "AQI=");
}

TEST(CborRequestTest, MalformedInputIsASerializationError) {
  const std::string cases[] = {
      "",                                     // nothing
      Bytes({0xa1, 0x64}) + "Da",             // truncated key
      Bytes({0xa1, 0x61, 0x41, 0x01, 0x00}),  // trailing byte
      Bytes({0x81, 0x01}),                    // top level is not a map
      Bytes({0xa1, 0x01, 0x01}),              // non-text key
      Bytes({0xa1, 0x61, 0x41, 0x1c}),        // reserved additional information 28
      Bytes({0xff}),                          // stray break
      Bytes(
          {0xa1, 0x61, 0x41, 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),  // huge length
      Bytes({0xa1, 0x61, 0x41, 0x61, 0xff}),        // invalid UTF-8 text
      Bytes({0xa1, 0x61, 0x41, 0x9f, 0xc1, 0xff}),  // a tag without its item
      Bytes({0xa1, 0x61, 0x41, 0xc1}),              // a tag at the end
  };
  for (const auto& c : cases) {
    std::string out;
    auto err = CborRequestToJson(c, Model(), &out);
    ASSERT_TRUE(err.has_value()) << Hex(c);
    EXPECT_EQ(err->type, "SerializationException");
    EXPECT_EQ(err->http_status, 400);
  }
}

TEST(CborRequestTest, DeepNestingIsRefusedBeforeParsing) {
  std::string cbor = Bytes({0xa1, 0x61}) + "A";
  cbor += std::string(100000, static_cast<char>(0x81));  // [[[[...
  cbor += Bytes({0x00});
  std::string out;
  auto err = CborRequestToJson(cbor, Model(), &out);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->type, "SerializationException");
}

TEST(CborRequestTest, TypeConfusionOfBlobsIsRefused) {
  std::string out;
  // Data as a text string.
  auto e1 = CborRequestToJson(Bytes({0xa1, 0x64}) + "Data" + Bytes({0x61}) + "x", Model(), &out);
  ASSERT_TRUE(e1.has_value());
  EXPECT_EQ(e1->type, "SerializationException");
  // A byte string where the model has a string.
  auto e2 =
      CborRequestToJson(Bytes({0xa1, 0x6a}) + "StreamName" + Bytes({0x41, 0x78}), Model(), &out);
  ASSERT_TRUE(e2.has_value());
  EXPECT_EQ(e2->type, "SerializationException");
  // A timestamp that is text.
  auto e3 =
      CborRequestToJson(Bytes({0xa1, 0x69}) + "Timestamp" + Bytes({0x61}) + "x", Model(), &out);
  ASSERT_TRUE(e3.has_value());
}

TEST(CborResponseTest, EncodesBlobsTimestampsAndScalarsExactly) {
  std::string cbor = JsonResponseToCbor(
      R"({"Records":[{"Data":"aGk=","ApproximateArrivalTimestamp":1700000000.123}],"N":-2,"T":true})",
      Model());
  // a3 67 "Records" 81 a2 64 "Data" 42 6869 7b "ApproximateArrivalTimestamp" c1 1b 0000018bcfe5687b
  //    61 "N" 21 61 "T" f5   (nlohmann keeps object keys sorted)
  std::string want = Bytes({0xa3, 0x61}) + "N" + Bytes({0x21, 0x67}) + "Records" +
                     Bytes({0x81, 0xa2, 0x78, 0x1b}) + "ApproximateArrivalTimestamp" +
                     Bytes({0xc1, 0x1b, 0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x7b, 0x64}) + "Data" +
                     Bytes({0x42, 'h', 'i', 0x61}) + "T" + Bytes({0xf5});
  EXPECT_EQ(Hex(cbor), Hex(want));
}

TEST(CborResponseTest, ErrorBodyAndEmptyBody) {
  std::string cbor = JsonResponseToCbor(R"({"__type":"X","message":"m"})", Model());
  json j = json::from_cbor(cbor);
  EXPECT_EQ(j["__type"], "X");
  EXPECT_EQ(j["message"], "m");
  EXPECT_EQ(JsonResponseToCbor("", Model()), "");
}

TEST(CborRoundTripTest, ResponseDecodesBackToTheSameJsonModel) {
  std::string text = R"({"Data":"AAECAw==","Timestamp":1441215410.867,"S":"x","L":[1,2.5]})";
  std::string cbor = JsonResponseToCbor(text, Model());
  std::string back;
  ASSERT_FALSE(CborRequestToJson(cbor, Model(), &back).has_value());
  json a = json::parse(text), b = json::parse(back);
  EXPECT_EQ(a["Data"], b["Data"]);
  EXPECT_NEAR(a["Timestamp"].get<double>(), b["Timestamp"].get<double>(), 1e-6);
  EXPECT_EQ(a["L"], b["L"]);
}

// The streaming transcoder against nlohmann's own CBOR reader on random documents: every
// map, array, string (with escapes and non-ASCII), integer (both signs, every head
// width), float and blob comes out as the JSON model of the same value.
json RandomValue(std::mt19937_64& rng, int depth, bool* has_blob) {
  static const char* kStrings[] = {
      "",       "plain", "quo\"te", "back\\slash", "tab\tnl\n\x01", "h\xc3\xa9llo", "\xe2\x82\xac",
      "ctl\x1f"};
  switch (rng() % (depth > 3 ? 5 : 7)) {
    case 0:
      return nullptr;
    case 1:
      return (rng() & 1) != 0;
    case 2: {
      int shift = static_cast<int>(rng() % 64);
      auto v = static_cast<int64_t>(rng() >> shift);
      return (rng() & 1) ? v : -v;
    }
    case 3:
      return static_cast<double>(static_cast<int64_t>(rng() % 2000000) - 1000000) / 64.0;
    case 4:
      return kStrings[rng() % 8];
    case 5: {
      json a = json::array();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i)
        a.push_back(RandomValue(rng, depth + 1, has_blob));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i) {
        if (rng() % 4 == 0) {
          std::vector<uint8_t> b(rng() % 40);
          for (auto& x : b) x = static_cast<uint8_t>(rng());
          o["Data"] = json::binary(b);
          *has_blob = true;
        } else {
          o[std::string("k") + kStrings[rng() % 8]] = RandomValue(rng, depth + 1, has_blob);
        }
      }
      return o;
    }
  }
}

json JsonModelOf(const json& v) {
  if (v.is_binary()) {
    std::string s(v.get_binary().begin(), v.get_binary().end());
    static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < s.size(); i += 3) {
      uint32_t n = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8) | uint8_t(s[i + 2]);
      for (int k = 18; k >= 0; k -= 6) out.push_back(kB64[(n >> k) & 63]);
    }
    if (s.size() - i == 1) {
      uint32_t n = uint8_t(s[i]) << 16;
      out += {kB64[n >> 18], kB64[(n >> 12) & 63], '=', '='};
    } else if (s.size() - i == 2) {
      uint32_t n = (uint8_t(s[i]) << 16) | (uint8_t(s[i + 1]) << 8);
      out += {kB64[n >> 18], kB64[(n >> 12) & 63], kB64[(n >> 6) & 63], '='};
    }
    return out;
  }
  if (v.is_object()) {
    json o = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) o[it.key()] = JsonModelOf(it.value());
    return o;
  }
  if (v.is_array()) {
    json a = json::array();
    for (const auto& e : v) a.push_back(JsonModelOf(e));
    return a;
  }
  return v;
}

TEST(CborRequest, StreamingTranscoderAgreesWithATreeOnRandomDocuments) {
  std::mt19937_64 rng(20261201);
  for (int n = 0; n < 3000; ++n) {
    bool has_blob = false;
    json doc = json::object();
    for (int i = static_cast<int>(rng() % 6); i > 0; --i)
      doc["m" + std::to_string(i)] = RandomValue(rng, 0, &has_blob);
    std::vector<uint8_t> cbor = json::to_cbor(doc);
    std::string in(cbor.begin(), cbor.end()), out;
    auto err = CborRequestToJson(in, Model(), &out);
    ASSERT_FALSE(err.has_value()) << err->message << " " << doc.dump();
    json back = json::parse(out);
    EXPECT_EQ(back, JsonModelOf(doc)) << out;
  }
}

TEST(CborRequest, NumbersAsTheHandlersSawThem) {
  std::string out;
  // {"a": 18446744073709551615, "b": -18446744073709551616, "c": 5.0 (double), "d": 1.5
  // (half), "e": -0.0 (single)}
  std::string cbor = Bytes({0xa5, 0x61, 'a',  0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                            0x61, 'b',  0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x61,
                            'c',  0xfb, 0x40, 0x14, 0,    0,    0,    0,    0,    0,    0x61, 'd',
                            0xf9, 0x3e, 0x00, 0x61, 'e',  0xfa, 0x80, 0,    0,    0});
  ASSERT_FALSE(CborRequestToJson(cbor, Model(), &out).has_value());
  EXPECT_EQ(out,
            R"({"a":18446744073709551615,"b":-18446744073709551616,"c":5.0,"d":1.5,"e":-0.0})");
  // Non-finite numbers are refused, as are undefined and other simple values.
  for (const auto& bad : {Bytes({0xa1, 0x61, 'x', 0xf9, 0x7c, 0x00}),
                          Bytes({0xa1, 0x61, 'x', 0xf7}), Bytes({0xa1, 0x61, 'x', 0xf8, 0x20})}) {
    auto err = CborRequestToJson(bad, Model(), &out);
    ASSERT_TRUE(err.has_value()) << Hex(bad);
    EXPECT_EQ(err->type, "SerializationException");
  }
}

TEST(CborRequest, ChunkedKeysAndTaggedKeys) {
  // {_ (_ "Str", "eamName"): "s", 1("Limit"): 3 }
  std::string cbor = Bytes({0xbf, 0x7f, 0x63}) + "Str" + Bytes({0x67}) + "eamName" +
                     Bytes({0xff, 0x61}) + "s" + Bytes({0xc1, 0x65}) + "Limit" +
                     Bytes({0x03, 0xff});
  std::string out;
  auto err = CborRequestToJson(cbor, Model(), &out);
  ASSERT_FALSE(err.has_value()) << err->message;
  EXPECT_EQ(out, R"({"StreamName":"s","Limit":3})");
  // An indefinite map with a key and no value.
  EXPECT_TRUE(CborRequestToJson(Bytes({0xbf, 0x61, 'a', 0xff}), Model(), &out).has_value());
}

// Issue 19: a body of tiny items is refused before anything is built from it.
TEST(CborRequest, ItemsAreBounded) {
  auto body = [](size_t n) {
    std::string s = Bytes({0xa1, 0x61, 'x', 0x9a});
    for (int sh = 24; sh >= 0; sh -= 8) s.push_back(static_cast<char>((n >> sh) & 0xff));
    s += std::string(n, '\0');  // n zeros
    return s;
  };
  std::string out;
  // The map, its key and the array: 3 items besides the elements.
  EXPECT_FALSE(CborRequestToJson(body(kMaxCborItems - 3), Model(), &out).has_value());
  auto err = CborRequestToJson(body(kMaxCborItems - 2), Model(), &out);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->type, "SerializationException");
  EXPECT_NE(err->message.find("CBOR data items"), std::string::npos) << err->message;
  err = CborRequestToJson(body(16u << 20), Model(), &out);
  ASSERT_TRUE(err.has_value());
  EXPECT_LT(out.capacity(), 1u << 20);  // refused before any output was reserved
}

TEST(CborReader, HeadsOfRfc8949AppendixA) {
  struct Case {
    std::string bytes;
    CborReader::Kind kind;
    uint64_t length;
    double number;
  };
  using K = CborReader::Kind;
  const Case cases[] = {
      {Bytes({0x00}), K::kUnsigned, 0, 0},
      {Bytes({0x18, 0x64}), K::kUnsigned, 100, 0},
      {Bytes({0x1b, 0, 0, 0, 0xe8, 0xd4, 0xa5, 0x10, 0}), K::kUnsigned, 1000000000000ull, 0},
      {Bytes({0x38, 0x63}), K::kNegative, 99, 0},  // -100
      {Bytes({0xf9, 0x3c, 0x00}), K::kFloat, 0, 1.0},
      {Bytes({0xf9, 0x00, 0x01}), K::kFloat, 0, 5.960464477539063e-8},
      {Bytes({0xfa, 0x47, 0xc3, 0x50, 0x00}), K::kFloat, 0, 100000.0},
      {Bytes({0xfb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}), K::kFloat, 0, 1.1},
      {Bytes({0xf4}), K::kFalse, 0, 0},
      {Bytes({0xf6}), K::kNull, 0, 0},
      {Bytes({0xf7}), K::kOther, 0, 0},
      {Bytes({0xc1, 0x1a, 0x51, 0x4b, 0x67, 0xb0}), K::kUnsigned, 1363896240, 0},  // tag skipped
      {Bytes({0x44, 1, 2, 3, 4}), K::kBytes, 4, 0},
      {Bytes({0x62, 0x22, 0x5c}), K::kText, 2, 0},
      {Bytes({0x83, 1, 2, 3}), K::kArray, 3, 0},
      {Bytes({0xa1, 0x61, 'a', 1}), K::kMap, 1, 0},
  };
  for (const auto& c : cases) {
    CborReader r(c.bytes);
    CborReader::Item it;
    ASSERT_TRUE(r.Next(&it)) << Hex(c.bytes);
    EXPECT_EQ(static_cast<int>(it.kind), static_cast<int>(c.kind)) << Hex(c.bytes);
    if (c.kind == K::kFloat) {
      EXPECT_EQ(it.number, c.number) << Hex(c.bytes);
    } else {
      EXPECT_EQ(it.length, c.length) << Hex(c.bytes);
    }
    ASSERT_TRUE(r.SkipBody(it, 4)) << Hex(c.bytes);
    EXPECT_TRUE(r.at_end()) << Hex(c.bytes);
  }
  // A chunked byte string is joined; a chunk of another type is malformed.
  std::string chunks = Bytes({0x5f, 0x42, 1, 2, 0x43, 3, 4, 5, 0xff});
  CborReader r(chunks);
  CborReader::Item it;
  ASSERT_TRUE(r.Next(&it));
  std::string scratch;
  std::string_view body;
  ASSERT_TRUE(r.StringBody(it, &scratch, &body));
  EXPECT_EQ(Hex(body), "0102030405");
  std::string mixed = Bytes({0x5f, 0x42, 1, 2, 0x61, 'x', 0xff});
  CborReader m(mixed);
  ASSERT_TRUE(m.Next(&it));
  EXPECT_FALSE(m.StringBody(it, &scratch, &body));
  EXPECT_TRUE(m.failed());
}

TEST(CborWriter, ShortestHeadsAndTimestamps) {
  std::string out;
  for (uint64_t n :
       {0ull, 23ull, 24ull, 255ull, 256ull, 65535ull, 65536ull, 4294967295ull, 4294967296ull}) {
    CborAppendHead(&out, 0, n);
  }
  EXPECT_EQ(Hex(out), "0017181818ff19010019ffff1a000100001affffffff1b0000000100000000");
  out.clear();
  CborAppendInt(&out, -1);
  CborAppendInt(&out, -1000);
  CborAppendText(&out, "a");
  CborAppendBytes(&out, std::string("\x01\x02", 2));
  CborAppendEpochMillis(&out, 1700000000123);
  EXPECT_EQ(Hex(out),
            "203903e7616142010"
            "2c11b0000018bcfe5687b");
}

}  // namespace
}  // namespace icestream::aws
