// The per-shard pacer in real time: call starts spaced to the rate, one GetRecords at a
// time, the 2 MiB/s budget spent by answers and paid back, a throttling answer holding the
// calls back, GetShardIterator counted apart, and a wait that can be cancelled.
#include "source/kinesis/shard_pacer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace icestream::source {
namespace {

using Call = ShardPacer::Call;
using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

TEST(ShardPacerTest, CallStartsAreSpacedToTheRate) {
  ShardPacer p({.calls_per_second = 20});  // 50 ms apart
  std::vector<int64_t> starts;
  auto t0 = Clock::now();
  for (int i = 0; i < 11; ++i) {
    ASSERT_TRUE(p.Acquire(Call::kGetRecords));
    starts.push_back(MsSince(t0));
    p.Release(Call::kGetRecords, 0, false);
  }
  for (size_t i = 1; i < starts.size(); ++i) EXPECT_GE(starts[i] - starts[i - 1], 49) << i;
  EXPECT_LT(starts.back(), 1500);
}

TEST(ShardPacerTest, OneGetRecordsAtATime) {
  // A replay's reader and the shard's reader share the pacer: the second call starts only
  // after the first answered (its bytes are known before the next is admitted).
  ShardPacer p({.calls_per_second = 1000});
  ASSERT_TRUE(p.Acquire(Call::kGetRecords));
  std::atomic<bool> second{false};
  std::thread t([&] {
    ASSERT_TRUE(p.Acquire(Call::kGetRecords));
    second = true;
    p.Release(Call::kGetRecords, 0, false);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(second.load());
  // GetShardIterator is limited apart and does not wait for the GetRecords in flight.
  auto t0 = Clock::now();
  ASSERT_TRUE(p.Acquire(Call::kGetShardIterator));
  p.Release(Call::kGetShardIterator, 0, false);
  EXPECT_LT(MsSince(t0), 100);
  p.Release(Call::kGetRecords, 0, false);
  t.join();
  EXPECT_TRUE(second.load());
}

TEST(ShardPacerTest, AnswersSpendTheByteBudget) {
  ShardPacerOptions o;
  o.calls_per_second = 1000;
  o.pace_bytes = true;
  o.bytes_per_second = 1e6;  // 1 MB/s, one second banked
  ShardPacer p(o);
  // 600 kB of the banked 1 MB: the next call is not held back.
  ASSERT_TRUE(p.Acquire(Call::kGetRecords));
  p.Release(Call::kGetRecords, 600000, false);
  auto t0 = Clock::now();
  ASSERT_TRUE(p.Acquire(Call::kGetRecords));
  EXPECT_LT(MsSince(t0), 100);
  // 1.2 MB more: 0.8 MB in debt, so the next call waits ~0.8 s for the budget to be above 0.
  p.Release(Call::kGetRecords, 1200000, false);
  t0 = Clock::now();
  ASSERT_TRUE(p.Acquire(Call::kGetRecords));
  EXPECT_GE(MsSince(t0), 700);
  EXPECT_LT(MsSince(t0), 1500);
  p.Release(Call::kGetRecords, 0, false);
}

TEST(ShardPacerTest, BytesAreNotPacedUnlessAsked) {
  ShardPacer p({.calls_per_second = 1000});
  ASSERT_TRUE(p.Acquire(Call::kGetRecords));
  p.Release(Call::kGetRecords, 100u << 20, false);
  auto t0 = Clock::now();
  ASSERT_TRUE(p.Acquire(Call::kGetRecords));
  EXPECT_LT(MsSince(t0), 100);
  p.Release(Call::kGetRecords, 0, false);
}

TEST(ShardPacerTest, AThrottledCallHoldsItsKindBack) {
  ShardPacerOptions o;
  o.calls_per_second = 1000;
  o.throttle_backoff_ms = 300;
  ShardPacer p(o);
  ASSERT_TRUE(p.Acquire(Call::kGetShardIterator));
  p.Release(Call::kGetShardIterator, 0, /*throttled=*/true);
  auto t0 = Clock::now();
  ASSERT_TRUE(p.Acquire(Call::kGetRecords));  // the other kind is not held back
  EXPECT_LT(MsSince(t0), 100);
  p.Release(Call::kGetRecords, 0, false);
  ASSERT_TRUE(p.Acquire(Call::kGetShardIterator));
  EXPECT_GE(MsSince(t0), 250);
  p.Release(Call::kGetShardIterator, 0, false);
}

TEST(ShardPacerTest, AWaitEndsWhenCancelled) {
  ShardPacer p({.calls_per_second = 1000});
  ASSERT_TRUE(p.Acquire(Call::kGetRecords));  // in flight: the next one waits
  std::atomic<bool> cancel{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  auto t0 = Clock::now();
  EXPECT_FALSE(p.Acquire(Call::kGetRecords, &cancel));
  EXPECT_LT(MsSince(t0), 500);
  stopper.join();
  p.Release(Call::kGetRecords, 0, false);
}

TEST(ShardPacerTest, OnePacerPerStreamAndShard) {
  ShardPacers pacers({});
  EXPECT_EQ(pacers.For("s", "shardId-000000000000"), pacers.For("s", "shardId-000000000000"));
  EXPECT_NE(pacers.For("s", "shardId-000000000000"), pacers.For("s", "shardId-000000000001"));
  EXPECT_NE(pacers.For("s", "shardId-000000000000"), pacers.For("t", "shardId-000000000000"));
}

}  // namespace
}  // namespace icestream::source
