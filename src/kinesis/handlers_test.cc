// The Kinesis front end below HTTP: KinesisApi::Handle over a real StreamManager on real
// files, answers read back as JSON. What the black-box suites cannot pin down cheaply is
// checked here: the one JSON 1.1 dispatcher (nesting, parse, object, type errors), AWS's
// order of errors (serialization, validation, authentication, then service), the stream
// selector's ARN rules, and the shard-not-found wording.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <nlohmann/json.hpp>

#include "aws/cbor.h"
#include "common/clock.h"
#include "common/sqlite.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "kinesis/api.h"
#include "kinesis/context.h"
#include "stream/stream_manager.h"

namespace icestream::kinesis {
namespace {

using nlohmann::json;

struct Answer {
  int status = 0;
  std::string type;  // __type of an error, "" on success
  std::string message;
  json body;
};

class KinesisHandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, Database::Open(dir_.Path("meta.db")));
    stream::StreamManagerOptions o;
    o.data_dir = dir_.path().string();
    o.retention_check_interval_ms = 3600 * 1000;
    ASSERT_OK_AND_ASSIGN(streams_, stream::StreamManager::Open(o, &clock_, db_.get()));
    api_ = std::make_unique<KinesisApi>(KinesisOptions{}, streams_.get(), &clock_, "test-secret",
                                        [](std::function<void()> fn) { fn(); });
  }
  void TearDown() override {
    api_.reset();
    streams_.reset();
  }

  Answer CallRaw(std::string_view op, std::string body,
                 std::optional<aws::ApiError> auth_error = std::nullopt) {
    auto req = std::make_shared<http::Request>();
    req->method = "POST";
    req->path = req->target = "/";
    req->body = std::move(body);
    auto done = std::make_shared<std::promise<http::Response>>();
    auto answered = done->get_future();
    api_->Handle(
        op, req, [done](http::Response r) { done->set_value(std::move(r)); },
        std::move(auth_error));
    EXPECT_EQ(answered.wait_for(std::chrono::seconds(10)), std::future_status::ready) << op;
    http::Response r = answered.get();
    Answer a;
    a.status = r.status;
    a.body = r.body.empty() ? json::object() : json::parse(r.body, nullptr, false);
    if (a.body.is_object() && a.body.contains("__type")) {
      a.type = a.body["__type"].get<std::string>();
      for (const char* m : {"message", "Message"}) {
        if (a.body.contains(m)) a.message = a.body[m].get<std::string>();
      }
    }
    return a;
  }
  Answer Call(std::string_view op, const json& body) { return CallRaw(op, body.dump()); }

  testing::TempDir dir_;  // first: outlives the database and the logs
  ManualClock clock_{1'700'000'000'000};
  std::unique_ptr<Database> db_;
  std::unique_ptr<stream::StreamManager> streams_;
  std::unique_ptr<KinesisApi> api_;
};

TEST_F(KinesisHandlersTest, TheDispatcherRefusesBadBodiesBeforeAnyHandlerRuns) {
  auto a = CallRaw("DescribeStreamSummary", "[1]");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.type, "SerializationException");
  EXPECT_EQ(a.message, "");  // AWS names nothing (kinesalite's suite)
  a = CallRaw("DescribeStreamSummary", "{\"StreamName\":");
  EXPECT_EQ(a.type, "SerializationException");
  EXPECT_EQ(a.message, "");
  // More values than any request but PutRecords holds: refused before a tree is built.
  std::string many = "{\"StreamName\":\"s\",\"x\":[0";
  for (int i = 0; i < 200000; ++i) many += ",0";
  many += "]}";
  a = CallRaw("DescribeStreamSummary", many);
  EXPECT_EQ(a.type, "SerializationException");
  EXPECT_EQ(a.message,
            "Request body holds more than 200000 JSON values; no DescribeStreamSummary request "
            "does.");
  // 64 levels are a body the handler sees (and refuses on its own terms); 65 are not parsed.
  std::string deep64 =
      "{\"StreamName\":\"s\",\"x\":" + std::string(63, '[') + std::string(63, ']') + "}";
  std::string deep65 =
      "{\"StreamName\":\"s\",\"x\":" + std::string(64, '[') + std::string(64, ']') + "}";
  EXPECT_NE(CallRaw("DescribeStreamSummary", deep64).type, "SerializationException");
  a = CallRaw("DescribeStreamSummary", deep65);
  EXPECT_EQ(a.type, "SerializationException");
  EXPECT_EQ(a.message, "Request body nests JSON more than 64 levels deep.");
  // A member of the wrong type.
  a = Call("DescribeStreamSummary", json{{"StreamName", 5}});
  EXPECT_EQ(a.type, "SerializationException");
  // Operations: unknown, and known but not offered.
  a = CallRaw("NoSuchOperation", "{}");
  EXPECT_EQ(a.type, "UnknownOperationException");
  EXPECT_FALSE(api_->Knows("NoSuchOperation"));
  a = CallRaw("UpdateStreamRecordDistributionStrategy", "{}");
  EXPECT_EQ(a.type, "InvalidArgumentException");
  EXPECT_TRUE(api_->Knows("UpdateStreamRecordDistributionStrategy"));
  EXPECT_TRUE(api_->Knows("PutRecords"));
}

TEST_F(KinesisHandlersTest, ErrorsComeInAwsOrder) {
  aws::ApiError denied{"UnrecognizedClientException", "The security token is invalid.", 400};
  // Serialization beats authentication...
  EXPECT_EQ(CallRaw("DescribeStreamSummary", "[]", denied).type, "SerializationException");
  // ...and so does validation...
  auto a =
      CallRaw("DescribeStreamSummary", json{{"StreamName", std::string(129, 'a')}}.dump(), denied);
  EXPECT_EQ(a.type, "ValidationException");
  EXPECT_NE(a.message.find("Member must have length less than or equal to 128"), std::string::npos)
      << a.message;
  // ...authentication beats the deferred service checks and every service error.
  EXPECT_EQ(CallRaw("DescribeStreamSummary", "{}", denied).type, "UnrecognizedClientException");
  EXPECT_EQ(CallRaw("DescribeStreamSummary", json{{"StreamName", "nope"}}.dump(), denied).type,
            "UnrecognizedClientException");
  // Without it, the deferred check speaks.
  a = CallRaw("DescribeStreamSummary", "{}");
  EXPECT_EQ(a.type, "InvalidArgumentException");
  EXPECT_EQ(a.message, "Neither StreamARN nor StreamName was provided.");
}

TEST_F(KinesisHandlersTest, StreamSelectorsByNameAndArn) {
  ASSERT_EQ(Call("CreateStream", json{{"StreamName", "orders"}, {"ShardCount", 2}}).status, 200);
  std::string arn = "arn:aws:kinesis:us-east-1:000000000000:stream/orders";
  auto a = Call("DescribeStreamSummary", json{{"StreamARN", arn}});
  ASSERT_EQ(a.status, 200) << a.body.dump();
  EXPECT_EQ(a.body["StreamDescriptionSummary"]["StreamARN"], arn);
  EXPECT_EQ(a.body["StreamDescriptionSummary"]["OpenShardCount"], 2);
  // Name and ARN together must agree.
  a = Call("DescribeStreamSummary", json{{"StreamName", "other"}, {"StreamARN", arn}});
  EXPECT_EQ(a.type, "InvalidArgumentException");
  // Another account's stream does not exist here, and the answer names that account.
  a = Call("DescribeStreamSummary",
           json{{"StreamARN", "arn:aws:kinesis:us-east-1:111122223333:stream/orders"}});
  EXPECT_EQ(a.type, "ResourceNotFoundException");
  EXPECT_EQ(a.message, "Stream orders under account 111122223333 not found.");
  // Not an ARN at all: the model's pattern.
  a = Call("DescribeStreamSummary", json{{"StreamARN", "orders"}});
  EXPECT_EQ(a.type, "ValidationException");
  EXPECT_NE(a.message.find("arn:aws.*:kinesis:.*:\\d{12}:stream/\\S+"), std::string::npos)
      << a.message;
}

// AWS has two texts for a shard that is not there, and which operation answers which is
// recorded by kinesalite's suite; each comes from one function (stream/model.h).
TEST_F(KinesisHandlersTest, AShardThatDoesNotExistIsNamedAsAwsNamesIt) {
  ASSERT_EQ(Call("CreateStream", json{{"StreamName", "s"}, {"ShardCount", 1}}).status, 200);
  const std::string does_not_exist =
      "Shard shardId-000000000009 in stream s under account 000000000000 does not exist";
  const std::string could_not_find =
      "Could not find shard shardId-000000000009 in stream s under account 000000000000.";
  auto a = Call("GetShardIterator", json{{"StreamName", "s"},
                                         {"ShardId", "shardId-000000000009"},
                                         {"ShardIteratorType", "TRIM_HORIZON"}});
  EXPECT_EQ(a.type, "ResourceNotFoundException");
  EXPECT_EQ(a.message, does_not_exist);
  a = Call("SplitShard", json{{"StreamName", "s"},
                              {"ShardToSplit", "shardId-000000000009"},
                              {"NewStartingHashKey", "1"}});
  EXPECT_EQ(a.type, "ResourceNotFoundException");
  EXPECT_EQ(a.message, could_not_find);
  a = Call("MergeShards", json{{"StreamName", "s"},
                               {"ShardToMerge", "shardId-000000000000"},
                               {"AdjacentShardToMerge", "shardId-000000000009"}});
  EXPECT_EQ(a.type, "ResourceNotFoundException");
  EXPECT_EQ(a.message, could_not_find);
}

TEST_F(KinesisHandlersTest, WrittenRecordsAreReadBack) {
  ASSERT_EQ(Call("CreateStream", json{{"StreamName", "s"}, {"ShardCount", 1}}).status, 200);
  auto put =
      Call("PutRecord", json{{"StreamName", "s"}, {"PartitionKey", "k"}, {"Data", "aGVsbG8="}});
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(put.body["ShardId"], "shardId-000000000000");
  auto many = Call("PutRecords", json{{"StreamName", "s"},
                                      {"Records",
                                       {{{"PartitionKey", "a"}, {"Data", "MQ=="}},
                                        {{"PartitionKey", "b"}, {"Data", "Mg=="}}}}});
  ASSERT_EQ(many.status, 200) << many.body.dump();
  EXPECT_EQ(many.body["FailedRecordCount"], 0);
  auto it = Call("GetShardIterator", json{{"StreamName", "s"},
                                          {"ShardId", "shardId-000000000000"},
                                          {"ShardIteratorType", "TRIM_HORIZON"}});
  ASSERT_EQ(it.status, 200) << it.body.dump();
  auto got = Call("GetRecords", json{{"ShardIterator", it.body["ShardIterator"]}});
  ASSERT_EQ(got.status, 200) << got.body.dump();
  ASSERT_EQ(got.body["Records"].size(), 3u);
  EXPECT_EQ(got.body["Records"][0]["Data"], "aGVsbG8=");
  EXPECT_EQ(got.body["Records"][0]["SequenceNumber"], put.body["SequenceNumber"]);
  EXPECT_EQ(got.body["Records"][2]["PartitionKey"], "b");
}

// A GetRecords answer in CBOR is reserved once, at its full size: a 10 MB answer that
// outgrew its reservation at the last records was copied whole into fresh pages. Records of
// the largest shapes besides their data (256-character keys, 56-digit sequence numbers,
// 9-byte arrival times) decode back, the answer left the reservation untouched, and the
// handler's tail (the next iterator, MillisBehindLatest) still fits without a move.
TEST(AppendRecordsCborTest, TheAnswerIsReservedOnceAtItsFullSize) {
  std::vector<std::string> keys, data;
  stream::ShardReadResult r;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back(std::string(255, 'k') + static_cast<char>('a' + i % 26));
    data.push_back(std::string(1000 + i % 7, static_cast<char>(i)));
  }
  for (int i = 0; i < 2000; ++i) {
    r.records.push_back({uint64_t{1} << 40 | static_cast<uint64_t>(i),
                         int64_t{1'765'000'000'000} + i, keys[i], data[i]});
  }
  std::string out;
  aws::CborAppendHead(&out, 5, 3);
  AppendRecordsCbor(&out, r, 987654321012345ull, 3);
  EXPECT_LE(out.capacity(), out.size() + 16384) << "the answer outgrew its reservation";
  const char* at = out.data();
  aws::CborAppendText(&out, "NextShardIterator");
  aws::CborAppendText(&out, std::string(600, 'i'));
  aws::CborAppendText(&out, "MillisBehindLatest");
  aws::CborAppendInt(&out, 123456789);
  EXPECT_EQ(out.data(), at) << "the answer's tail moved it";
  // Read back with the CBOR reader (nlohmann's refuses tag 1, the timestamps' tag).
  using Kind = aws::CborReader::Kind;
  aws::CborReader cbor(out);
  aws::CborReader::Item item;
  std::string_view text;
  ASSERT_TRUE(cbor.Next(&item) && item.kind == Kind::kMap && item.length == 3);
  ASSERT_TRUE(cbor.Next(&item) && cbor.StringBody(item, nullptr, &text));
  EXPECT_EQ(text, "Records");
  ASSERT_TRUE(cbor.Next(&item) && item.kind == Kind::kArray);
  ASSERT_EQ(item.length, 2000u);
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(cbor.Next(&item) && item.kind == Kind::kMap && item.length == 4) << i;
    std::map<std::string, std::string> members;
    for (int m = 0; m < 4; ++m) {
      ASSERT_TRUE(cbor.Next(&item) && cbor.StringBody(item, nullptr, &text)) << i;
      std::string key(text);
      ASSERT_TRUE(cbor.Next(&item)) << i;
      if (item.kind == Kind::kUnsigned) {
        members[key] = std::to_string(item.length);
      } else {
        ASSERT_TRUE(cbor.StringBody(item, nullptr, &text)) << i << " " << key;
        members[key] = std::string(text);
      }
    }
    EXPECT_EQ(members["SequenceNumber"].size(), 56u) << i;
    EXPECT_EQ(members["ApproximateArrivalTimestamp"], std::to_string(1'765'000'000'000 + i));
    ASSERT_EQ(members["PartitionKey"], keys[i]) << i;
    ASSERT_EQ(members["Data"], data[i]) << i;
  }
}

}  // namespace
}  // namespace icestream::kinesis
