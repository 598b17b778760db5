// Test support for ChannelManager's unit tests (channel_manager_test, _reload_test): one
// test's meta.db with the stream "orders" in a real stream store, its local source, local
// buckets, and a manager opened over them with the S3 destination. Header-only: tests only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "common/clock.h"
#include "common/sqlite.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "delivery/channel_manager.h"
#include "delivery/s3/s3_sink.h"
#include "objectstore/local_store.h"
#include "source/local/local_source.h"
#include "stream/stream_manager.h"

namespace icestream::delivery {

class OrdersStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, Database::Open(dir_.Path("meta.db")));
    stream::StreamManagerOptions so;
    so.data_dir = dir_.Path();
    so.retention_check_interval_ms = 3600 * 1000;
    ASSERT_OK_AND_ASSIGN(streams_, stream::StreamManager::Open(so, &clock_, db_.get()));
    ASSERT_OK(streams_->CreateStream({.name = "orders", .mode = stream::StreamMode::kOnDemand}));
    sources_ = std::make_unique<source::LocalSourceProvider>(streams_.get());
  }

  // A manager over `store`, this test's source and buckets; o.data_dir is this test's.
  Result<std::unique_ptr<ChannelManager>> OpenManager(ChannelManagerOptions o,
                                                      std::unique_ptr<DeliveryStore> store) {
    o.data_dir = dir_.Path();
    return ChannelManager::Open(o, sources_.get(), std::move(store), buckets_,
                                {std::make_shared<s3::S3Destination>()}, &clock_);
  }

  testing::TempDir dir_;  // first: removed after everything that writes into it
  SystemClock clock_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<stream::StreamManager> streams_;
  std::unique_ptr<source::LocalSourceProvider> sources_;
  std::shared_ptr<objectstore::LocalObjectStore> buckets_ =
      std::make_shared<objectstore::LocalObjectStore>(dir_.Path("buckets"));
};

}  // namespace icestream::delivery
