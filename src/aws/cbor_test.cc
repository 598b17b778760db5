// Tests of the CBOR ⇄ JSON 1.1 bridge: byte-exact encodings from RFC 8949 Appendix A and
// the Java SDK's timestamp convention, and refusal of malformed input.
#include "aws/cbor.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace icestream::aws
