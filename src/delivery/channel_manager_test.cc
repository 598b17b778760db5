// ChannelManager's channel ARNs over a real stream store, meta.db and local buckets: the
// ARN a channel is created with names it (arn:aws:kinesis:<region>:<account>:channel/<id>),
// every call that takes an ARN finds the channel by it, and an ARN of another partition,
// region, account or resource type is no channel of this server (AWS's not-found text).
#include "delivery/channel_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "aws/arn.h"
#include "common/testing/status_assertions.h"
#include "delivery/channel_manager_test_base.h"
#include "delivery/sqlite_delivery_store.h"

namespace icestream::delivery {
namespace {

class ChannelManagerTest : public OrdersStreamTest {
 protected:
  void SetUp() override {
    OrdersStreamTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(auto store, SqliteDeliveryStore::Open(db_.get()));
    ChannelManagerOptions o;
    o.region = "eu-west-1";
    o.account = "123456789012";
    ASSERT_OK_AND_ASSIGN(channels_, OpenManager(o, std::move(store)));
  }
  void TearDown() override {
    if (channels_) channels_->Stop();
  }

  Result<ChannelConfig> CreateChannel(const std::string& name) {
    ChannelConfig c;
    c.name = name;
    c.stream_name = "orders";
    c.destination = S3DestinationConfig{.bucket_arn = "arn:aws:s3:::out"};
    return channels_->Create(std::move(c));
  }

  // `arn` with one field replaced (0 partition, 1 service, 2 region, 3 account, 4 resource).
  static std::string WithField(const std::string& arn, int field, std::string value) {
    auto a = aws::ParseArn(arn);
    EXPECT_TRUE(a.has_value()) << arn;
    std::string* fields[] = {&a->partition, &a->service, &a->region, &a->account, &a->resource};
    *fields[field] = std::move(value);
    return a->ToString();
  }

  std::unique_ptr<ChannelManager> channels_;
};

TEST_F(ChannelManagerTest, CreatedChannelIsNamedByItsArn) {
  ASSERT_OK_AND_ASSIGN(ChannelConfig c, CreateChannel("to-s3"));
  EXPECT_EQ(c.arn, "arn:aws:kinesis:eu-west-1:123456789012:channel/" + c.id);
  EXPECT_EQ(channels_->ArnFor(c.id), c.arn);
  EXPECT_EQ(channels_->IdOf(c.arn), c.id);
  EXPECT_TRUE(channels_->Owns(c.arn));
  ASSERT_OK_AND_ASSIGN(ChannelConfig described, channels_->Describe(c.arn));
  EXPECT_EQ(described.id, c.id);
  EXPECT_EQ(described.name, "to-s3");
  EXPECT_OK(channels_->Tag(c.arn, {{"team", "data"}}));
  ASSERT_OK_AND_ASSIGN(auto tags, channels_->Tags(c.arn));
  EXPECT_EQ(tags.at("team"), "data");
  EXPECT_OK(channels_->Delete(c.arn));
}

TEST_F(ChannelManagerTest, ArnOfAnotherPlaceIsNoChannelOfOurs) {
  ASSERT_OK_AND_ASSIGN(ChannelConfig c, CreateChannel("to-s3"));
  const std::string others[] = {
      WithField(c.arn, 0, "aws-cn"),
      WithField(c.arn, 1, "firehose"),
      WithField(c.arn, 2, "us-east-1"),
      WithField(c.arn, 3, "000000000000"),
      WithField(c.arn, 4, "stream/" + c.id),
      WithField(c.arn, 4, c.id),  // no resource type
      "channel/" + c.id,
      c.id,
      "",
  };
  for (const std::string& arn : others) {
    SCOPED_TRACE(arn);
    EXPECT_FALSE(channels_->Owns(arn));
    EXPECT_FALSE(channels_->IdOf(arn).has_value());
    auto d = channels_->Describe(arn);
    ASSERT_STATUS(kNotFound, d.status());
    EXPECT_EQ(d.status().message(), "Channel " + arn + " under account 123456789012 not found.");
  }
}

TEST_F(ChannelManagerTest, UnknownIdOfOurArnIsNotFound) {
  ASSERT_OK(CreateChannel("to-s3").status());
  std::string arn = channels_->ArnFor("no-such-id");
  EXPECT_TRUE(channels_->Owns(arn));  // ours by its shape, but no channel has that id
  ASSERT_STATUS(kNotFound, channels_->Describe(arn).status());
  ASSERT_STATUS(kNotFound, channels_->Delete(arn));
}

// A channel made through the Kinesis API (`icestream channels create --pg` of a pool whose
// source is this server) names its stream by ARN and creation time, with no local stream
// id: the server still counts it as its stream's S3 channel, and its stream's retention
// keeps what the channel has not delivered.
// (StoredChannelTest: channels another process put into the store, taken at start.)
class StoredChannelTest : public OrdersStreamTest {
 protected:
  // An S3 channel onto "orders" as another process stores it (defaults filled in), with no
  // local stream id: the caller sets stream_uid / stream_created_ms as the case needs.
  ChannelConfig StoredS3Channel(const std::string& id, const std::string& name,
                                const stream::StreamInfo& orders) {
    ChannelConfig c;
    c.id = id;
    c.name = name;
    c.arn = "arn:aws:kinesis:eu-west-1:123456789012:channel/" + id;
    c.stream_name = "orders";
    c.stream_arn = orders.arn;
    c.destination = S3DestinationConfig{.bucket_arn = "arn:aws:s3:::out"};
    c.created_ms = clock_.NowMillis();
    EXPECT_OK(s3::S3Destination().Prepare(&c));  // the defaults, as the command fills them in
    return c;
  }
  // A manager of this account over the store holding `stored`.
  Result<std::unique_ptr<ChannelManager>> OpenWith(const ChannelConfig& stored,
                                                   ChannelManagerOptions o = {}) {
    ASSIGN_OR_RETURN(auto store, SqliteDeliveryStore::Open(db_.get()));
    RETURN_IF_ERROR(store->SaveChannel(stored));
    o.region = "eu-west-1";
    o.account = "123456789012";
    return OpenManager(o, std::move(store));
  }
};

TEST_F(StoredChannelTest, MadeThroughTheKinesisApiItCountsForItsStreamAndHoldsItsRecords) {
  ASSERT_OK_AND_ASSIGN(auto orders, streams_->Describe("orders"));
  ChannelConfig cli = StoredS3Channel("3b0b6a47-0b7e-4c0e-9d43-5a4d2f1c9e10", "from-cli", orders);
  cli.stream_created_ms = orders.created_ms / 1000 * 1000;  // the API's seconds
  ASSERT_EQ(cli.stream_uid, 0u);
  ASSERT_OK_AND_ASSIGN(auto channels, OpenWith(cli));

  ChannelConfig second;
  second.name = "to-s3";
  second.stream_name = "orders";
  second.destination = S3DestinationConfig{.bucket_arn = "arn:aws:s3:::other"};
  auto made = channels->Create(std::move(second));
  ASSERT_STATUS(kResourceExhausted, made.status());
  EXPECT_NE(made.status().message().find("one channel per destination type"), std::string::npos)
      << made.status().message();

  // Not active yet: it needs the stream from its start.
  auto needed = channels->NeededPosition(orders.uid, "shardId-000000000000");
  ASSERT_TRUE(needed.has_value());
  EXPECT_TRUE(needed->at_start());
  channels->Stop();
}

// A channel whose stream was re-created under its name (the channel names the old stream's
// id) cannot activate: it FAILS naming its source stream, not its destination (the reason
// used to say "cannot write to its destination: The source stream no longer exists.").
TEST_F(StoredChannelTest, AChannelWhoseStreamIsGoneFailsNamingItsSource) {
  ASSERT_OK_AND_ASSIGN(auto orders, streams_->Describe("orders"));
  ChannelConfig old =
      StoredS3Channel("5d1f0c2e-8a4b-4f6e-b7d2-0c9e3a1b2f40", "of-the-old-stream", orders);
  old.stream_uid = orders.uid ^ 1;  // the stream of that name before it was re-created
  old.stream_created_ms = orders.created_ms - 3'600'000;
  ChannelManagerOptions o;
  o.runner.destination_grace_ms = 0;  // the first failed activation attempt is the last
  ASSERT_OK_AND_ASSIGN(auto channels, OpenWith(old, o));
  ChannelConfig now;
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK_AND_ASSIGN(now, channels->Describe(old.arn));
    if (now.status == ChannelStatus::kFailed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(now.status, ChannelStatus::kFailed);
  EXPECT_EQ(now.status_reason.rfind("The channel cannot read its source stream: ", 0), 0u)
      << now.status_reason;
  EXPECT_NE(now.status_reason.find("The source stream no longer exists."), std::string::npos)
      << now.status_reason;
  channels->Stop();
}

}  // namespace
}  // namespace icestream::delivery
