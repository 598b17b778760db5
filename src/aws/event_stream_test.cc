// Event-stream framing: a byte-exact message, round trips, and damaged input refused.
#include "aws/event_stream.h"

#include <gtest/gtest.h>

namespace icestream::aws {
namespace {

TEST(EventStreamTest, Crc32IsTheIeeeCrc) {
  EXPECT_EQ(Crc32("123456789"), 0xcbf43926u);  // the standard check value
  EXPECT_EQ(Crc32(""), 0u);
}

TEST(EventStreamTest, EncodesPreludeHeadersPayloadAndCrcs) {
  std::string m = EncodeEventMessage({{":message-type", "event"}}, "{}");
  // total = 12 + (1+13+1+2+5) + 2 + 4 = 40; headers = 22.
  ASSERT_EQ(m.size(), 40u);
  EXPECT_EQ(m.substr(0, 8), std::string("\0\0\0\x28\0\0\0\x16", 8));
  EXPECT_EQ(static_cast<uint8_t>(m[12]), 13);
  EXPECT_EQ(m.substr(13, 13), ":message-type");
  EXPECT_EQ(m[26], 7);
  size_t used = 0;
  auto d = DecodeEventMessage(m, &used);
  ASSERT_TRUE(d);
  EXPECT_EQ(used, 40u);
  EXPECT_EQ(d->headers.size(), 1u);
  EXPECT_EQ(d->headers[0].second, "event");
  EXPECT_EQ(d->payload, "{}");
}

TEST(EventStreamTest, DamagedMessagesAreRefused) {
  std::string m = EncodeEventMessage({{":event-type", "SubscribeToShardEvent"}, {"a", "b"}},
                                     std::string(300, 'x'));
  size_t used = 0;
  ASSERT_TRUE(DecodeEventMessage(m, &used));
  for (size_t i = 0; i < m.size(); i += 7) {
    std::string bad = m;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    EXPECT_FALSE(DecodeEventMessage(bad, &used)) << i;
  }
  for (size_t n = 0; n < m.size(); n += 13) {
    EXPECT_FALSE(DecodeEventMessage(m.substr(0, n), &used)) << n;
  }
}

}  // namespace
}  // namespace icestream::aws
