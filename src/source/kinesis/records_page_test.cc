// GetRecords answers decoded from CBOR the way icestream, the AWS SDKs' encoders and
// kinesalite write them, and from JSON; malformed CBOR is refused, never half-read.
#include "source/kinesis/records_page.h"

#include <gtest/gtest.h>

#include <cstring>

#include "aws/cbor.h"
#include "common/testing/status_assertions.h"

namespace icestream::source {
namespace {

using aws::CborAppendBytes;
using aws::CborAppendEpochMillis;
using aws::CborAppendHead;
using aws::CborAppendInt;
using aws::CborAppendText;

// {"Records":[{SequenceNumber, ApproximateArrivalTimestamp, Data, PartitionKey,
// EncryptionType}], "NextShardIterator": next, "MillisBehindLatest": 7, "ChildShards": []}
std::string IcestreamStyle(const std::string& next) {
  std::string b;
  CborAppendHead(&b, 5, 4);
  CborAppendText(&b, "Records");
  CborAppendHead(&b, 4, 2);
  for (int i = 0; i < 2; ++i) {
    CborAppendHead(&b, 5, 5);
    CborAppendText(&b, "SequenceNumber");
    CborAppendText(&b,
                   "4960000000000000000000000000000000000000000000000000000" + std::to_string(i));
    CborAppendText(&b, "ApproximateArrivalTimestamp");
    CborAppendEpochMillis(&b, 1764583200123 + i);
    CborAppendText(&b, "Data");
    CborAppendBytes(&b, std::string("\x00\xff{\"n\":", 7) + std::to_string(i) + "}");
    CborAppendText(&b, "PartitionKey");
    CborAppendText(&b, "k" + std::to_string(i));
    CborAppendText(&b, "EncryptionType");
    CborAppendText(&b, "NONE");
  }
  CborAppendText(&b, "NextShardIterator");
  if (next.empty()) {
    b += '\xf6';  // null: the shard is closed and read
  } else {
    CborAppendText(&b, next);
  }
  CborAppendText(&b, "MillisBehindLatest");
  CborAppendInt(&b, 7);
  CborAppendText(&b, "ChildShards");
  CborAppendHead(&b, 4, 0);
  return b;
}

TEST(CborPage, ReadsRecordsInPlace) {
  ASSERT_OK_AND_ASSIGN(auto page, CborPage(IcestreamStyle("it-2")));
  ASSERT_EQ(page.answer->records.size(), 2u);
  const auto& r = page.answer->records[1];
  EXPECT_EQ(std::string(r.data), std::string("\x00\xff{\"n\":1}", 9));
  EXPECT_EQ(r.partition_key, "k1");
  EXPECT_EQ(r.arrival_ms, 1764583200124);
  EXPECT_EQ(r.sequence_number, "49600000000000000000000000000000000000000000000000000001");
  // The data is a view into the body itself: no copy was made.
  const std::string& body = page.answer->bytes;
  EXPECT_GE(r.data.data(), body.data());
  EXPECT_LT(r.data.data(), body.data() + body.size());
  EXPECT_EQ(page.answer->data_bytes, 18u);
  EXPECT_FALSE(page.end);
  EXPECT_EQ(page.next, "it-2");
  EXPECT_EQ(page.behind_ms, 7);
}

TEST(CborPage, NullIteratorIsTheEnd) {
  ASSERT_OK_AND_ASSIGN(auto page, CborPage(IcestreamStyle("")));
  EXPECT_TRUE(page.end);
}

// What Jackson (the Java SDKs) and node's cbor write: indefinite lengths, chunked strings;
// kinesalite: the data as base64 text and the timestamp as float seconds.
TEST(CborPage, IndefiniteLengthsBase64TextAndSeconds) {
  std::string b;
  b += '\xbf';  // map, indefinite
  CborAppendText(&b, "Records");
  b += '\x9f';  // array, indefinite
  b += '\xbf';
  CborAppendText(&b, "Data");
  CborAppendText(&b, "aGVsbG8=");  // "hello"
  CborAppendText(&b, "SequenceNumber");
  b += '\x7f';  // text, indefinite: two chunks
  CborAppendText(&b, "4960");
  CborAppendText(&b, "0001");
  b += '\xff';
  CborAppendText(&b, "PartitionKey");
  CborAppendText(&b, "pk");
  CborAppendText(&b, "ApproximateArrivalTimestamp");
  b += '\xfb';  // double 1764583200.5 s
  double secs = 1764583200.5;
  uint64_t bits;
  std::memcpy(&bits, &secs, 8);
  for (int i = 7; i >= 0; --i) b += static_cast<char>((bits >> (8 * i)) & 0xff);
  b += '\xff';  // end of record
  b += '\xff';  // end of Records
  CborAppendText(&b, "NextShardIterator");
  CborAppendText(&b, "next");
  b += '\xff';  // end of map
  ASSERT_OK_AND_ASSIGN(auto page, CborPage(b));
  ASSERT_EQ(page.answer->records.size(), 1u);
  const auto& r = page.answer->records[0];
  EXPECT_EQ(r.data, "hello");
  EXPECT_EQ(r.sequence_number, "49600001");
  EXPECT_EQ(r.arrival_ms, 1764583200500);
  EXPECT_EQ(page.next, "next");
  EXPECT_EQ(page.behind_ms, 0);
}

// A GetRecords answer of kinesalite 3.3.3 to a CBOR request, byte for byte (node's cbor
// encoder: the data as base64 text, the timestamp as a double of seconds).
TEST(CborPage, KinesaliteAnswer) {
  const std::string hex =
      "a3724d696c6c6973426568696e644c617465737400714e65787453686172644974657261746f7278"
      "cc414141414141414141414774767a73343257423130514f5432573869674e686e5944566c554546"
      "2f4f396978765541382b616a434b756744586846477a6742463269347057776c43346a7564625933"
      "356c786f304d4b3679523667702f614b794b626f694f546b49484649592f3139567a376570494950"
      "786a476b6554655938523155564166546763495954444d302b7a58764b73415471324a4b654e5443"
      "7935315630367a6333446c7572466a35506d534651757a41354c64316449622f4d6c674e48525242"
      "666432733d675265636f72647381a46c506172746974696f6e4b6579617064446174616c65794a70"
      "5a4349364d58303d781b417070726f78696d6174654172726976616c54696d657374616d70fb41da"
      "c3e9ec3418936e53657175656e63654e756d62657278383439363830373538363330323036333036"
      "363431393432393032363839313639383537383436303035313735323639363436363633363832";
  std::string body;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    body += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  ASSERT_OK_AND_ASSIGN(auto page, CborPage(body));
  ASSERT_EQ(page.answer->records.size(), 1u);
  EXPECT_EQ(page.answer->records[0].data, "{\"id\":1}");
  EXPECT_EQ(page.answer->records[0].partition_key, "p");
  EXPECT_FALSE(page.end);
  EXPECT_EQ(page.behind_ms, 0);
}

TEST(CborPage, RefusesWhatIsNotAWellFormedAnswer) {
  std::string whole = IcestreamStyle("it");
  // Every truncation of a good answer is refused (none is read as fewer records).
  for (size_t n = 0; n < whole.size(); ++n) {
    EXPECT_NOT_OK(CborPage(whole.substr(0, n))) << "truncated at " << n;
  }
  EXPECT_NOT_OK(CborPage(whole + "x"));  // trailing bytes
  std::string b;
  CborAppendHead(&b, 5, 1);
  CborAppendText(&b, "Records");
  CborAppendHead(&b, 4, 1);
  CborAppendHead(&b, 5, 1);  // a record without Data or SequenceNumber
  CborAppendText(&b, "PartitionKey");
  CborAppendText(&b, "k");
  EXPECT_NOT_OK(CborPage(b));
  std::string not_map;
  CborAppendText(&not_map, "Records");
  EXPECT_NOT_OK(CborPage(not_map));
}

TEST(JsonPage, DecodesBase64AndSeconds) {
  auto j =
      nlohmann::json::parse(R"({"Records":[{"SequenceNumber":"12","Data":"aGk=","PartitionKey":"p",
      "ApproximateArrivalTimestamp":1764583200.25}],"NextShardIterator":"n","MillisBehindLatest":3})");
  ASSERT_OK_AND_ASSIGN(auto page, JsonPage(j));
  ASSERT_EQ(page.answer->records.size(), 1u);
  EXPECT_EQ(page.answer->records[0].data, "hi");
  EXPECT_EQ(page.answer->records[0].arrival_ms, 1764583200250);
  EXPECT_EQ(page.next, "n");
  EXPECT_EQ(page.behind_ms, 3);
  ASSERT_OK_AND_ASSIGN(
      auto closed, JsonPage(nlohmann::json::parse(R"({"Records":[],"NextShardIterator":null})")));
  EXPECT_TRUE(closed.end);
}

}  // namespace
}  // namespace icestream::source
