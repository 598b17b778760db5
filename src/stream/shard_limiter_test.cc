#include "stream/shard_limiter.h"

#include <gtest/gtest.h>

namespace icestream::stream {
namespace {

TEST(ShardLimiterTest, ThousandRecordsPerSecondPerShard) {
  ManualClock clock(1'000'000);
  ShardLimiter l(&clock);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(l.AdmitWrite(7, 0, 10)) << i;
  EXPECT_FALSE(l.AdmitWrite(7, 0, 10));
  EXPECT_TRUE(l.AdmitWrite(7, 1, 10));  // another shard has its own budget
  EXPECT_TRUE(l.AdmitWrite(8, 0, 10));  // and so has another stream's shard 0
  clock.Advance(100);                   // 100 records' worth refills
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(l.AdmitWrite(7, 0, 10)) << i;
  EXPECT_FALSE(l.AdmitWrite(7, 0, 10));
}

TEST(ShardLimiterTest, OneMiBPerSecondWithLargeRecordsInDebt) {
  ManualClock clock(1'000'000);
  ShardLimiter l(&clock);
  EXPECT_TRUE(l.AdmitWrite(1, 0, 600 * 1024));
  EXPECT_TRUE(l.AdmitWrite(1, 0, 600 * 1024));  // bucket not empty: admitted, now in debt
  EXPECT_FALSE(l.AdmitWrite(1, 0, 1));
  clock.Advance(100);  // ~102 KiB back: still in debt (-176 KiB + 102 KiB)
  EXPECT_FALSE(l.AdmitWrite(1, 0, 1));
  clock.Advance(100);
  EXPECT_TRUE(l.AdmitWrite(1, 0, 1));
  // A record above the whole budget (up to 10 MiB with MaxRecordSizeInKiB) still goes in
  // after a full second, then the shard waits out its debt.
  clock.Advance(10'000);
  EXPECT_TRUE(l.AdmitWrite(1, 0, 5 * 1024 * 1024));
  clock.Advance(3000);
  EXPECT_FALSE(l.AdmitWrite(1, 0, 1));
  clock.Advance(1500);
  EXPECT_TRUE(l.AdmitWrite(1, 0, 1));
}

TEST(ShardLimiterTest, FiveReadsAndTwoMiBPerSecond) {
  ManualClock clock(1'000'000);
  ShardLimiter l(&clock);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(l.AdmitRead(1, 3));
  EXPECT_FALSE(l.AdmitRead(1, 3));
  clock.Advance(200);
  EXPECT_TRUE(l.AdmitRead(1, 3));
  l.ChargeRead(1, 3, 10 * 1024 * 1024);  // a 10 MiB response: five seconds of debt
  clock.Advance(1000);
  EXPECT_FALSE(l.AdmitRead(1, 3));
  clock.Advance(4000);
  EXPECT_TRUE(l.AdmitRead(1, 3));
}

TEST(ShardLimiterTest, ClockSteppedBackDoesNotStallRefills) {
  ManualClock clock(1'000'000);
  ShardLimiter l(&clock);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(l.AdmitIterator(1, 0));
  clock.Set(1'000'000 - 3'600'000);  // an hour back
  EXPECT_FALSE(l.AdmitIterator(1, 0));
  clock.Advance(200);
  EXPECT_TRUE(l.AdmitIterator(1, 0));
}

TEST(ShardLimiterTest, ForgetDropsOnlyThatStream) {
  ManualClock clock(1'000'000);
  ShardLimiter l(&clock);
  for (uint32_t s = 0; s < 4; ++s) ASSERT_TRUE(l.AdmitWrite(7, s, 1));
  ASSERT_TRUE(l.AdmitWrite(8, 0, 1));
  EXPECT_EQ(l.tracked_shards(), 5u);
  l.Forget(7);
  EXPECT_EQ(l.tracked_shards(), 1u);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(l.AdmitIterator(7, 0));  // a fresh budget
}

TEST(ShardLimiterTest, FiveIteratorsPerSecond) {
  ManualClock clock(1'000'000);
  ShardLimiter l(&clock);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(l.AdmitIterator(1, 0));
  EXPECT_FALSE(l.AdmitIterator(1, 0));
  clock.Advance(200);
  EXPECT_TRUE(l.AdmitIterator(1, 0));
}

}  // namespace
}  // namespace icestream::stream
