// Stream and request metrics: counting, the per-minute ring, and the exposition text.
#include <gtest/gtest.h>

#include <string>

#include "metrics/prometheus.h"
#include "metrics/request_metrics.h"
#include "metrics/stream_metrics.h"

namespace icestream::metrics {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

StreamView View(uint64_t uid, std::string name, std::vector<std::string> flags = {}) {
  StreamView v;
  v.uid = uid;
  v.name = std::move(name);
  v.shards = {{0, "shardId-000000000000"}, {1, "shardId-000000000001"}};
  v.shard_level_metrics = std::move(flags);
  return v;
}

TEST(StreamMetrics, CountsPutsAndExposesThemByStream) {
  ManualClock clock(1'800'000'000'000);
  StreamMetrics m(&clock);
  m.OnPutRecord(7, "orders", 0, 100, PutOutcome::kOk, 2'000'000);
  PutTally t;
  t.Add(0, 10, PutOutcome::kOk);
  t.Add(1, 20, PutOutcome::kOk);
  t.Add(1, 30, PutOutcome::kThrottled);
  t.Add(0, 40, PutOutcome::kFailed);
  m.OnPutRecords(7, "orders", t, 3'000'000);
  std::string text = m.PrometheusText({View(7, "orders"), View(8, "idle")});
  EXPECT_TRUE(Has(text, R"(IncomingBytes{stream_name="orders"} 130)")) << text;
  EXPECT_TRUE(Has(text, R"(IncomingRecords{stream_name="orders"} 3)"));
  EXPECT_TRUE(Has(text, R"(PutRecord_Success{stream_name="orders"} 1)"));
  EXPECT_TRUE(Has(text, R"(PutRecords_TotalRecords{stream_name="orders"} 4)"));
  EXPECT_TRUE(Has(text, R"(PutRecords_SuccessfulRecords{stream_name="orders"} 2)"));
  EXPECT_TRUE(Has(text, R"(PutRecords_ThrottledRecords{stream_name="orders"} 1)"));
  EXPECT_TRUE(Has(text, R"(PutRecords_FailedRecords{stream_name="orders"} 1)"));
  EXPECT_TRUE(Has(text, R"(WriteProvisionedThroughputExceeded{stream_name="orders"} 1)"));
  // A stream without traffic is listed with zeros.
  EXPECT_TRUE(Has(text, R"(IncomingBytes{stream_name="idle"} 0)"));
  // Histogram: 2 ms falls in le=0.0025, cumulative upward.
  EXPECT_TRUE(Has(text, R"(PutRecord_Latency_seconds_bucket{stream_name="orders",le="0.001"} 0)"));
  EXPECT_TRUE(Has(text, R"(PutRecord_Latency_seconds_bucket{stream_name="orders",le="0.0025"} 1)"));
  EXPECT_TRUE(Has(text, R"(PutRecord_Latency_seconds_bucket{stream_name="orders",le="+Inf"} 1)"));
  EXPECT_TRUE(Has(text, R"(PutRecord_Latency_seconds_count{stream_name="orders"} 1)"));
  EXPECT_TRUE(Has(text, R"(PutRecord_Latency_seconds_sum{stream_name="orders"} 0.002)"));
  // No enhanced monitoring: no shard-level samples (the family is still described).
  EXPECT_NE(text.find("# TYPE Shard_IncomingBytes counter"), std::string::npos);
  EXPECT_EQ(text.find("Shard_IncomingBytes{"), std::string::npos);
}

TEST(PutTally, SumsByShardAcrossManyShards) {
  PutTally t;
  // 500 records over 200 shards, interleaved: past the linear search into the index.
  for (int i = 0; i < 500; ++i) t.Add(static_cast<uint32_t>(i % 200), 10, PutOutcome::kOk);
  t.Add(7, 1, PutOutcome::kThrottled);
  t.Add(7, 1, PutOutcome::kFailed);
  ASSERT_EQ(t.shards().size(), 200u);
  uint64_t records = 0;
  for (const auto& s : t.shards()) {
    EXPECT_EQ(s.ok_records, s.shard < 100 ? 3u : 2u) << s.shard;
    EXPECT_EQ(s.ok_bytes, s.ok_records * 10);
    EXPECT_EQ(s.throttled, s.shard == 7 ? 1u : 0u);
    records += s.ok_records;
  }
  EXPECT_EQ(records, 500u);
  EXPECT_EQ(t.ok(), 500u);
  EXPECT_EQ(t.ok_bytes(), 5000u);
  EXPECT_EQ(t.throttled(), 1u);
  EXPECT_EQ(t.failed(), 1u);
}

TEST(StreamMetrics, ShardLevelMetricsFollowTheEnhancedMonitoringFlags) {
  ManualClock clock(1'800'000'000'000);
  StreamMetrics m(&clock);
  m.OnPutRecord(7, "orders", 1, 100, PutOutcome::kOk, 1000);
  m.OnGetRecords(7, "orders", 1, 1, 100, 2500, 1000);
  std::string text =
      m.PrometheusText({View(7, "orders", {"IncomingBytes", "IteratorAgeMilliseconds"})});
  EXPECT_TRUE(
      Has(text, R"(Shard_IncomingBytes{stream_name="orders",shard_id="shardId-000000000001"} 100)"))
      << text;
  // Every unexpired shard is listed, including those without traffic.
  EXPECT_TRUE(
      Has(text, R"(Shard_IncomingBytes{stream_name="orders",shard_id="shardId-000000000000"} 0)"));
  EXPECT_TRUE(Has(
      text,
      R"(Shard_IteratorAgeMilliseconds{stream_name="orders",shard_id="shardId-000000000001"} 2500)"));
  EXPECT_EQ(text.find("Shard_IncomingRecords{"), std::string::npos);
  EXPECT_EQ(text.find("Shard_OutgoingBytes{"), std::string::npos);
  EXPECT_TRUE(Has(text, R"(GetRecords_IteratorAgeMilliseconds{stream_name="orders"} 2500)"));
  // A minute later without reads the age gauges are gone (CloudWatch has no datapoint).
  clock.Advance(61'000);
  text = m.PrometheusText({View(7, "orders", {"IteratorAgeMilliseconds"})});
  EXPECT_EQ(text.find("GetRecords_IteratorAgeMilliseconds{"), std::string::npos) << text;
  EXPECT_EQ(text.find("Shard_IteratorAgeMilliseconds{"), std::string::npos);
}

TEST(StreamMetrics, DeadStreamsAreForgottenAndRecreatedOnesStartAtZero) {
  ManualClock clock(1'800'000'000'000);
  StreamMetrics m(&clock);
  m.OnPutRecord(7, "orders", 0, 100, PutOutcome::kOk, 1000);
  EXPECT_TRUE(
      Has(m.PrometheusText({View(7, "orders")}), R"(IncomingBytes{stream_name="orders"} 100)"));
  // Deleted and created again under the same name: a new uid.
  std::string text = m.PrometheusText({View(9, "orders")});
  EXPECT_TRUE(Has(text, R"(IncomingBytes{stream_name="orders"} 0)")) << text;
  EXPECT_EQ(m.IncomingRates(7).shards.size(), 0u);
}

TEST(StreamMetrics, TheRingKeepsAnHourPerMinute) {
  ManualClock clock(60'000 * 1000);  // minute 1000
  StreamMetrics m(&clock);
  m.OnPutRecord(7, "s", 2, 10, PutOutcome::kOk, 1);
  clock.Advance(30'000);
  m.OnPutRecord(7, "s", 2, 5, PutOutcome::kOk, 1);
  clock.Advance(60'000);  // minute 1001
  m.OnPutRecord(7, "s", 2, 7, PutOutcome::kOk, 1);
  StreamRates r = m.IncomingRates(7);
  ASSERT_EQ(r.shards.size(), 1u);
  EXPECT_EQ(r.minutes, 60);
  EXPECT_EQ(r.first_minute_ms, (1001 - 59) * 60'000);
  EXPECT_EQ(r.shards[0].shard, 2u);
  EXPECT_EQ(r.shards[0].bytes[58], 15u);
  EXPECT_EQ(r.shards[0].records[58], 2u);
  EXPECT_EQ(r.shards[0].bytes[59], 7u);
  // 59 minutes on, the first minute's slot is reused: the old counts are gone, not added.
  clock.Advance(59 * 60'000);  // minute 1060, the slot of minute 1000
  m.OnPutRecord(7, "s", 2, 1, PutOutcome::kOk, 1);
  r = m.IncomingRates(7);
  EXPECT_EQ(r.shards[0].bytes[59], 1u);
  EXPECT_EQ(r.shards[0].bytes[0], 7u);  // minute 1001 is now the oldest
  uint64_t total = 0;
  for (auto b : r.shards[0].bytes) total += b;
  EXPECT_EQ(total, 8u);
  // An hour of silence: nothing in the window.
  clock.Advance(60 * 60'000);
  EXPECT_EQ(m.IncomingRates(7).shards.size(), 0u);
}

TEST(StreamMetrics, SubscriptionsAreCountedByConsumer) {
  ManualClock clock(1'800'000'000'000);
  StreamMetrics m(&clock);
  m.OnSubscribe(7, "s", "app-1", true);
  m.OnSubscribe(7, "s", "app-1", false);
  m.OnSubscribeEvent(7, "s", "app-1", 0, 3, 300, 40);
  std::string text = m.PrometheusText({View(7, "s", {"OutgoingRecords"})});
  EXPECT_TRUE(Has(text, R"(SubscribeToShard_Success{stream_name="s",consumer_name="app-1"} 1)"))
      << text;
  EXPECT_TRUE(
      Has(text, R"(SubscribeToShard_RateExceeded{stream_name="s",consumer_name="app-1"} 1)"));
  EXPECT_TRUE(
      Has(text, R"(SubscribeToShardEvent_Records{stream_name="s",consumer_name="app-1"} 3)"));
  EXPECT_TRUE(
      Has(text, R"(SubscribeToShardEvent_Bytes{stream_name="s",consumer_name="app-1"} 300)"));
  EXPECT_TRUE(
      Has(text,
          R"(SubscribeToShardEvent_MillisBehindLatest{stream_name="s",consumer_name="app-1"} 40)"));
  EXPECT_TRUE(
      Has(text, R"(Shard_OutgoingRecords{stream_name="s",shard_id="shardId-000000000000"} 3)"));
}

TEST(RequestMetrics, CountsByOperationAndErrorCodeAndKeepsRecentErrors) {
  RequestMetrics m;
  m.Observe("kinesis", "PutRecord", "", 200, "", 1'000'000, 1);
  m.Observe("kinesis", "PutRecord", "ResourceNotFoundException", 400, "Stream x not found", 500'000,
            2);
  m.Observe("glue", "GetSchema", "EntityNotFoundException", 400, "no", 500'000, 3);
  std::string text = m.PrometheusText();
  EXPECT_TRUE(Has(
      text,
      R"(icestream_api_requests_total{service="kinesis",operation="PutRecord",error_code="none"} 1)"))
      << text;
  EXPECT_TRUE(Has(
      text,
      R"(icestream_api_requests_total{service="kinesis",operation="PutRecord",error_code="ResourceNotFoundException"} 1)"));
  EXPECT_TRUE(Has(
      text,
      R"(icestream_api_request_duration_seconds_count{service="glue",operation="GetSchema",error_code="EntityNotFoundException"} 1)"));
  auto errors = m.RecentErrors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].service, "glue");  // newest first
  EXPECT_EQ(errors[1].message, "Stream x not found");
  for (int i = 0; i < 150; ++i) m.Observe("kinesis", "GetRecords", "X", 400, "", 1, 10 + i);
  EXPECT_EQ(m.RecentErrors().size(), RequestMetrics::kRecentErrors);
}

TEST(Prometheus, EscapesLabelValues) {
  PrometheusWriter w;
  w.Sample("m", {{"l", "a\"b\\c\nd"}}, 1.5);
  EXPECT_EQ(w.text(), "m{l=\"a\\\"b\\\\c\\nd\"} 1.5\n");
}

}  // namespace
}  // namespace icestream::metrics
