// The Kinesis source against Kinesis endpoints on 127.0.0.1:
// - shard discovery with the three behaviours seen in the field — honouring ListShards'
//   ShardFilter (AWS, icestream), ignoring it (kinesalite 3.3.3, moto 5) and refusing it
//   (a strict validator): the first listing is FROM_TRIM_HORIZON, the next ones
//   AFTER_SHARD_ID past the leading closed shards, pages follow NextToken without the
//   filter, and every behaviour gives the same shards, each once;
// - the per-shard call rate: a shard's reader, a replay read directly and another
//   channel's describe (Behind) on the same shard, all at once, start at most 5 GetRecords
//   and 5 GetShardIterator calls in any second at the endpoint.
#include "source/kinesis/kinesis_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/base64.h"
#include "common/testing/status_assertions.h"
#include "delivery/position.h"
#include "http/server.h"

namespace icestream::source {
namespace {

using nlohmann::json;

enum class FilterMode { kHonour, kIgnore, kRefuse };

// A stream of five shards: 0 and 1 closed, 2 open, 3 closed (but after an open one), 4
// open; so the leading run of closed shards is 0 and 1.
struct FakeShard {
  std::string id;
  bool closed;
};
const std::vector<FakeShard> kShards = {{"shardId-000000000000", true},
                                        {"shardId-000000000001", true},
                                        {"shardId-000000000002", false},
                                        {"shardId-000000000003", true},
                                        {"shardId-000000000004", false}};

class FakeKinesis {
 public:
  explicit FakeKinesis(FilterMode mode) : mode_(mode) {
    http::ServerOptions o;
    o.port = 0;
    o.threads = 1;
    auto s =
        http::Server::Start(o, [this](std::shared_ptr<http::Request> req, http::Responder respond) {
          respond(Answer(std::string(req->GetHeader("x-amz-target")), json::parse(req->body)));
        });
    EXPECT_OK(s.status());
    server_ = std::move(*s);
  }
  ~FakeKinesis() { server_->Stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  std::vector<json> list_requests() {
    std::lock_guard lock(mu_);
    return lists_;
  }

 private:
  http::Response Answer(const std::string& target, const json& body) {
    http::Response r;
    r.SetHeader("Content-Type", "application/x-amz-json-1.1");
    if (target == "Kinesis_20131202.DescribeStreamSummary") {
      r.body = json{{"StreamDescriptionSummary",
                     {{"StreamName", "s"},
                      {"StreamARN", "arn:aws:kinesis:us-east-1:000000000000:stream/s"},
                      {"StreamStatus", "ACTIVE"},
                      {"StreamModeDetails", {{"StreamMode", "ON_DEMAND"}}}}}}
                   .dump();
      return r;
    }
    if (target != "Kinesis_20131202.ListShards") {
      r.status = 400;
      r.body = R"({"__type":"UnknownOperationException"})";
      return r;
    }
    {
      std::lock_guard lock(mu_);
      lists_.push_back(body);
    }
    if (body.contains("ShardFilter") && mode_ == FilterMode::kRefuse) {
      r.status = 400;
      r.body = R"({"__type":"SerializationException","message":"Unknown parameter ShardFilter"})";
      return r;
    }
    // Two shards a page; the token is the index of the page's first shard and the filter's.
    size_t from = 0;
    std::string after;
    if (body.contains("NextToken")) {
      std::string t = body["NextToken"].get<std::string>();
      from = std::stoul(t.substr(0, t.find('|')));
      after = t.substr(t.find('|') + 1);
    } else if (mode_ == FilterMode::kHonour && body.contains("ShardFilter") &&
               body["ShardFilter"].value("Type", "") == "AFTER_SHARD_ID") {
      after = body["ShardFilter"].value("ShardId", "");
    }
    std::vector<FakeShard> listed;
    for (const auto& s : kShards) {
      if (after.empty() || s.id > after) listed.push_back(s);
    }
    json shards = json::array();
    for (size_t i = from; i < listed.size() && i < from + 2; ++i) {
      json range = {{"StartingSequenceNumber", "1"}};
      if (listed[i].closed) range["EndingSequenceNumber"] = "9";
      shards.push_back({{"ShardId", listed[i].id}, {"SequenceNumberRange", range}});
    }
    json out = {{"Shards", shards}};
    if (from + 2 < listed.size()) out["NextToken"] = std::to_string(from + 2) + "|" + after;
    r.body = out.dump();
    return r;
  }

  const FilterMode mode_;
  std::unique_ptr<http::Server> server_;
  std::mutex mu_;
  std::vector<json> lists_;
};

std::vector<std::string> Ids(const std::vector<delivery::SourceShard>& shards) {
  std::vector<std::string> out;
  for (const auto& s : shards) out.push_back(s.id + (s.closed ? " closed" : " open"));
  return out;
}

const std::vector<std::string> kWant = {"shardId-000000000000 closed",
                                        "shardId-000000000001 closed", "shardId-000000000002 open",
                                        "shardId-000000000003 closed", "shardId-000000000004 open"};

class ListShardsTest : public ::testing::TestWithParam<FilterMode> {
 protected:
  std::shared_ptr<delivery::ShardSource> Open(FakeKinesis& fake, int64_t full_listing_ms) {
    KinesisSourceOptions o;
    o.endpoint.url = fake.url();
    o.endpoint.credentials = CredentialsFromEnvironment();
    o.shard_list_ms = 0;  // every Shards() lists
    o.full_listing_ms = full_listing_ms;
    auto provider = KinesisSourceProvider::Make(o);
    EXPECT_OK(provider.status());
    provider_ = std::move(*provider);
    delivery::ChannelConfig c;
    c.stream_name = "s";
    c.stream_arn = "arn:aws:kinesis:us-east-1:000000000000:stream/s";
    auto source = provider_->OpenSource(c);
    EXPECT_OK(source.status());
    return *source;
  }
  std::unique_ptr<KinesisSourceProvider> provider_;
};

TEST_P(ListShardsTest, EveryBehaviourListsEveryShardOnce) {
  FakeKinesis fake(GetParam());
  auto source = Open(fake, 60000);
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(auto shards, source->Shards());
    EXPECT_EQ(Ids(shards), kWant) << "listing " << i;
  }
  auto lists = fake.list_requests();
  ASSERT_FALSE(lists.empty());
  // The first listing asks for every shard, explicitly.
  EXPECT_EQ(lists[0].value("ShardFilter", json::object()).value("Type", ""), "FROM_TRIM_HORIZON");
  EXPECT_EQ(lists[0].value("StreamName", ""), "s");
  for (const auto& l : lists) {
    // A page after the first carries only the token (the filter travels in it).
    if (l.contains("NextToken")) {
      EXPECT_EQ(l.size(), 1u) << l.dump();
    }
  }
  std::vector<json> firsts;
  for (const auto& l : lists) {
    if (!l.contains("NextToken")) firsts.push_back(l);
  }
  if (GetParam() == FilterMode::kRefuse) {
    // Refused once, then never sent again to this endpoint.
    ASSERT_EQ(firsts.size(), 4u);
    EXPECT_TRUE(firsts[0].contains("ShardFilter"));
    for (size_t i = 1; i < firsts.size(); ++i) EXPECT_FALSE(firsts[i].contains("ShardFilter"));
  } else {
    ASSERT_EQ(firsts.size(), 3u);
    // Later listings start after the leading closed run (shard 1); shard 3 is closed but
    // after an open one, so it is listed again.
    for (size_t i = 1; i < firsts.size(); ++i) {
      EXPECT_EQ(firsts[i]["ShardFilter"],
                (json{{"Type", "AFTER_SHARD_ID"}, {"ShardId", "shardId-000000000001"}}))
          << firsts[i].dump();
    }
  }
}

TEST_P(ListShardsTest, EveryShardIsListedAgainEveryFullListingInterval) {
  FakeKinesis fake(GetParam());
  auto source = Open(fake, 0);  // every listing is a full one
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(auto shards, source->Shards());
    EXPECT_EQ(Ids(shards), kWant);
  }
  for (const auto& l : fake.list_requests()) {
    if (l.contains("ShardFilter")) {
      EXPECT_EQ(l["ShardFilter"]["Type"], "FROM_TRIM_HORIZON");
    }
  }
}

// An endpoint whose one open shard always has more: every GetRecords answers one record
// (the next sequence number) and MillisBehindLatest 5000, so every reader reads as fast as
// it is let. It notes when each GetRecords and GetShardIterator arrives.
class BusyShard {
 public:
  BusyShard() {
    http::ServerOptions o;
    o.port = 0;
    o.threads = 4;
    auto s =
        http::Server::Start(o, [this](std::shared_ptr<http::Request> req, http::Responder respond) {
          respond(Answer(std::string(req->GetHeader("x-amz-target"))));
        });
    EXPECT_OK(s.status());
    server_ = std::move(*s);
  }
  ~BusyShard() { server_->Stop(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  // Arrival times (ms since the first call) of `operation`.
  std::vector<int64_t> arrivals(const std::string& operation) {
    std::lock_guard lock(mu_);
    return calls_[operation];
  }

 private:
  http::Response Answer(const std::string& target) {
    const std::string op = target.substr(target.find('.') + 1);
    http::Response r;
    r.SetHeader("Content-Type", "application/x-amz-json-1.1");
    int64_t seq;
    {
      std::lock_guard lock(mu_);
      auto now = std::chrono::steady_clock::now();
      if (calls_.empty()) t0_ = now;
      calls_[op].push_back(
          std::chrono::duration_cast<std::chrono::milliseconds>(now - t0_).count());
      seq = ++sequence_;
    }
    if (op == "GetShardIterator") {
      r.body = R"({"ShardIterator":"it"})";
    } else if (op == "GetRecords") {
      r.body = json{
          {"Records",
           {{{"SequenceNumber", std::to_string(seq)},
             {"ApproximateArrivalTimestamp", 1764583200.5},
             {"Data", base64::Encode("{}")},
             {"PartitionKey", "k"}}}},
          {"NextShardIterator", "it"},
          {"MillisBehindLatest",
           5000}}.dump();
    } else if (op == "ListShards") {
      r.body = R"({"Shards":[{"ShardId":"shardId-000000000000",)"
               R"("SequenceNumberRange":{"StartingSequenceNumber":"1"}}]})";
    } else {
      r.body = R"({"StreamDescriptionSummary":{"StreamName":"s","StreamStatus":"ACTIVE",)"
               R"("StreamARN":"arn:aws:kinesis:us-east-1:000000000000:stream/s"}})";
    }
    return r;
  }

  std::unique_ptr<http::Server> server_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point t0_;
  std::map<std::string, std::vector<int64_t>> calls_;
  int64_t sequence_ = 0;
};

// The most calls that arrived within any `window_ms`.
size_t MostInAWindow(const std::vector<int64_t>& at, int64_t window_ms) {
  size_t most = 0;
  for (size_t i = 0; i < at.size(); ++i) {
    size_t j = i;
    while (j < at.size() && at[j] - at[i] < window_ms) ++j;
    most = std::max(most, j - i);
  }
  return most;
}

TEST(KinesisSourcePacing, EveryReadOfAShardSharesItsRate) {
  BusyShard endpoint;
  KinesisSourceOptions o;
  o.endpoint.url = endpoint.url();
  o.endpoint.credentials = CredentialsFromEnvironment();
  ASSERT_OK_AND_ASSIGN(auto provider, KinesisSourceProvider::Make(o));
  delivery::ChannelConfig c;
  c.stream_name = "s";
  c.stream_arn = "arn:aws:kinesis:us-east-1:000000000000:stream/s";
  // Two channels on the stream: one delivers (its reader, and a replay read directly),
  // the other is only described by this process (Behind: one look at the endpoint).
  ASSERT_OK_AND_ASSIGN(auto delivering, provider->OpenSource(c));
  ASSERT_OK_AND_ASSIGN(auto described, provider->OpenSource(c));
  const std::string shard = "shardId-000000000000";
  ASSERT_OK(delivering->Backlog(shard, delivery::Position{}).status());  // starts the reader
  std::atomic<bool> stop{false};
  std::thread replay([&] {
    auto reader = delivering->OpenRange(shard, delivery::Position{"1", std::nullopt}, "999999999",
                                        1 << 20, 100);
    ASSERT_OK(reader.status());
    delivery::StreamChunk chunk;
    while (!stop.load()) {
      auto more = (*reader)->Next(&chunk);
      ASSERT_OK(more.status());
      if (!*more) break;
    }
  });
  std::thread describe([&] {
    while (!stop.load()) {
      ASSERT_OK(described->Behind(shard, delivery::Position{"1", std::nullopt}).status());
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(3000)) {
    ASSERT_OK(delivering->Backlog(shard, delivery::Position{}).status());  // keeps it reading
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop = true;
  replay.join();
  describe.join();
  const auto records = endpoint.arrivals("GetRecords");
  const auto iterators = endpoint.arrivals("GetShardIterator");
  // All three read (so each had its turns), together within 5 call starts a second (a
  // window a little under a second: the arrivals jitter by a few milliseconds).
  EXPECT_GE(records.size(), 10u);
  EXPECT_GE(iterators.size(), 3u);
  EXPECT_LE(MostInAWindow(records, 950), 5u);
  EXPECT_LE(MostInAWindow(iterators, 950), 5u);
}

// An endpoint whose one shard holds a backlog of `pages` pages of 100 records: an
// iterator names the next sequence number, GetRecords answers (after `delay_ms`, as a
// large page takes) the next 100 records and MillisBehindLatest 5000 until the last.
class BacklogShard {
 public:
  static constexpr int64_t kPage = 100;
  BacklogShard(int64_t pages, int delay_ms) : total_(pages * kPage), delay_ms_(delay_ms) {
    http::ServerOptions o;
    o.port = 0;
    o.threads = 4;
    auto s =
        http::Server::Start(o, [this](std::shared_ptr<http::Request> req, http::Responder respond) {
          respond(Answer(std::string(req->GetHeader("x-amz-target")), req->body));
        });
    EXPECT_OK(s.status());
    server_ = std::move(*s);
  }
  ~BacklogShard() { server_->Stop(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  int64_t total() const { return total_; }
  int64_t calls(const std::string& op) {
    std::lock_guard lock(mu_);
    return calls_[op];
  }
  static std::string Seq(int64_t n) { return fmt::format("{:020d}", n); }

 private:
  http::Response Answer(const std::string& target, const std::string& body) {
    const std::string op = target.substr(target.find('.') + 1);
    {
      std::lock_guard lock(mu_);
      ++calls_[op];
    }
    http::Response r;
    r.SetHeader("Content-Type", "application/x-amz-json-1.1");
    json req = json::parse(body, nullptr, false);
    if (op == "GetShardIterator") {
      const std::string type = req.value("ShardIteratorType", "");
      int64_t next = 1;
      if (type == "AFTER_SEQUENCE_NUMBER")
        next = std::stoll(req.value("StartingSequenceNumber", "0")) + 1;
      if (type == "AT_SEQUENCE_NUMBER") next = std::stoll(req.value("StartingSequenceNumber", "1"));
      r.body = json{{"ShardIterator", std::to_string(next)}}.dump();
    } else if (op == "GetRecords") {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
      const int64_t next = std::stoll(req.value("ShardIterator", "1"));
      json records = json::array();
      int64_t n = next;
      for (; n <= total_ && n < next + kPage; ++n) {
        records.push_back({{"SequenceNumber", Seq(n)},
                           {"ApproximateArrivalTimestamp", 1764583200.5},
                           {"Data", base64::Encode("{}")},
                           {"PartitionKey", "k"}});
      }
      r.body = json{{"Records", records},
                    {"NextShardIterator", std::to_string(n)},
                    {"MillisBehindLatest", n <= total_ ? 5000 : 0}}
                   .dump();
    } else if (op == "ListShards") {
      r.body = R"({"Shards":[{"ShardId":"shardId-000000000000",)"
               R"("SequenceNumberRange":{"StartingSequenceNumber":"1"}}]})";
    } else {
      r.body = R"({"StreamDescriptionSummary":{"StreamName":"s","StreamStatus":"ACTIVE",)"
               R"("StreamARN":"arn:aws:kinesis:us-east-1:000000000000:stream/s"}})";
    }
    return r;
  }

  const int64_t total_;
  const int delay_ms_;
  std::unique_ptr<http::Server> server_;
  std::mutex mu_;
  std::map<std::string, int64_t> calls_;
};

// A backlog delivered in batches smaller than a page, the engine going on while the reader
// has a call out: every page is asked for once (a reader that dropped the answer of a
// call during which a batch ended read each page twice, halving a worker's reads), and
// every record is delivered once, in order.
TEST(KinesisSourceReading, ABacklogIsReadOncePageByPage) {
  BacklogShard endpoint(12, 40);
  KinesisSourceOptions o;
  o.endpoint.url = endpoint.url();
  o.endpoint.credentials = CredentialsFromEnvironment();
  ASSERT_OK_AND_ASSIGN(auto provider, KinesisSourceProvider::Make(o));
  delivery::ChannelConfig c;
  c.stream_name = "s";
  c.stream_arn = "arn:aws:kinesis:us-east-1:000000000000:stream/s";
  ASSERT_OK_AND_ASSIGN(auto source, provider->OpenSource(c));
  const std::string shard = "shardId-000000000000";
  delivery::Position at{};
  int64_t delivered = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (delivered < endpoint.total() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_OK_AND_ASSIGN(auto backlog, source->Backlog(shard, at));
    if (backlog.records == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    ASSERT_OK_AND_ASSIGN(auto plan, source->PlanRange(shard, at, 1 << 20, 30));
    ASSERT_OK_AND_ASSIGN(auto reader,
                         source->OpenRange(shard, at, plan.last_sequence, 1 << 20, 30));
    delivery::StreamChunk chunk;
    while (true) {
      ASSERT_OK_AND_ASSIGN(bool more, reader->Next(&chunk));
      if (!more) break;
      for (const auto& r : chunk.records) {
        ASSERT_EQ(r.sequence_number, BacklogShard::Seq(delivered + 1));
        ++delivered;
      }
    }
    at = delivery::Position{plan.last_sequence, std::nullopt};
    std::this_thread::sleep_for(std::chrono::milliseconds(15));  // the batch's work
  }
  EXPECT_EQ(delivered, endpoint.total());
  // 12 pages, and at most a look past the end.
  EXPECT_LE(endpoint.calls("GetRecords"), 13);
  EXPECT_EQ(endpoint.calls("GetShardIterator"), 1);
}

INSTANTIATE_TEST_SUITE_P(Endpoints, ListShardsTest,
                         ::testing::Values(FilterMode::kHonour, FilterMode::kIgnore,
                                           FilterMode::kRefuse),
                         [](const auto& endpoint) {
                           switch (endpoint.param) {
                             case FilterMode::kHonour:
                               return std::string("Honours");
                             case FilterMode::kIgnore:
                               return std::string("Ignores");
                             default:
                               return std::string("Refuses");
                           }
                         });

}  // namespace
}  // namespace icestream::source
