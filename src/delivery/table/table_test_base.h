// Test support for the table destination's unit tests (table_sink_test, table_parts_test):
// a batch's records in memory (VectorSource), a commit fence that can be switched off
// (SwitchFence), and TableTestBase — one test's meta.db, local buckets, the "tables"
// warehouse and a schema registry holding the "orders" schema, with the channel config of
// a JSON table channel onto db.orders partitioned by hour. Header-only: tests only.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/sqlite.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "delivery/delivery_store.h"
#include "delivery/table/table_sink.h"
#include "iceberg/table_files.h"
#include "iceberg/warehouses.h"
#include "objectstore/local_store.h"
#include "registry/registry.h"

namespace icestream::delivery::table {

// The records of one batch in memory (the engine's RecordSource; the thing under test is
// what reads it). Records of one range come in chunks of at most `max_chunk`. With
// `padding`, the records lie in one buffer as a log's read buffer holds them, each
// followed by bytes that would close or extend a cut JSON text (`}`, `"]}`, digits) and
// the buffer by `padding` more, and chunks say so (RecordChunk::padding).
class VectorSource final : public RecordSource {
 public:
  struct Rec {
    size_t range;
    std::string seq;
    uint64_t ordinal;
    std::string data;
  };
  explicit VectorSource(std::vector<Rec> recs, int64_t arrival_ms = 1'780'000'000'000,
                        size_t max_chunk = std::numeric_limits<size_t>::max(), size_t padding = 0)
      : recs_(std::move(recs)), arrival_ms_(arrival_ms), max_chunk_(max_chunk), padding_(padding) {
    if (padding_ == 0) return;
    std::vector<size_t> at;
    for (const auto& r : recs_) {
      at.push_back(arena_.size());
      arena_ += r.data;
      arena_ += "}\"]}9,\"x\":1}";
    }
    arena_.append(padding_, '}');
    for (size_t i = 0; i < recs_.size(); ++i) {
      views_.push_back(std::string_view(arena_).substr(at[i], recs_[i].data.size()));
    }
  }
  Result<bool> Next(RecordChunk* chunk) override {
    std::lock_guard lock(mu_);
    if (at_ >= recs_.size()) return false;
    chunk->records.clear();
    chunk->range = recs_[at_].range;
    while (at_ < recs_.size() && recs_[at_].range == chunk->range &&
           chunk->records.size() < max_chunk_) {
      const Rec& r = recs_[at_];
      std::string_view data = padding_ > 0 ? views_[at_] : std::string_view(r.data);
      ++at_;
      chunk->records.push_back({r.seq, r.ordinal, arrival_ms_, std::nullopt, "pk", data, {}});
    }
    chunk->storage = nullptr;  // the strings live in recs_ (and arena_)
    chunk->padding = padding_;
    return true;
  }
  Status Rewind() override {
    std::lock_guard lock(mu_);
    at_ = 0;
    return Status::OK();
  }

 private:
  std::mutex mu_;
  std::vector<Rec> recs_;
  const int64_t arrival_ms_;
  const size_t max_chunk_;
  const size_t padding_;
  std::string arena_;                    // padding_: every record's data, then junk
  std::vector<std::string_view> views_;  // into arena_
  size_t at_ = 0;
};

// A commit fence that refuses (as a pool's lease check does once the lease moved) when
// `holds` is false.
class SwitchFence final : public iceberg::CommitFence {
 public:
  Status Check(iceberg::CatalogStore::Tx&) const override {
    return holds.load() ? Status::OK() : Fenced("fenced: the lease moved");
  }
  std::atomic<bool> holds{true};
};

class TableTestBase : public ::testing::Test {
 protected:
  // Opens the stores and registers `schema` as version 1 of default-registry/orders.
  void OpenStores(const char* schema) {
    std::filesystem::create_directories(dir_.path() / "buckets" / "dlq");
    std::filesystem::create_directories(dir_.path() / "tables" / "tables");
    ASSERT_OK_AND_ASSIGN(db_, Database::Open(dir_.Path("meta.db")));
    buckets_ = std::make_shared<objectstore::LocalObjectStore>(dir_.Path("buckets"));
    tables_ = std::make_unique<objectstore::LocalObjectStore>(dir_.Path("tables"));
    warehouses_ = std::make_unique<iceberg::Warehouses>(db_.get(), tables_.get(), &clock_,
                                                        "us-east-1", "000000000000");
    ASSERT_OK_AND_ASSIGN(registry_, registry::SchemaRegistry::Open(db_.get(), &clock_));
    // The default registry may exist already; then it must be readable.
    if (auto made = registry_->CreateRegistry(registry::kDefaultRegistry, "", {}); !made.ok()) {
      ASSERT_OK(registry_->GetRegistry(registry::kDefaultRegistry))
          << "after CreateRegistry said " << made.status().ToString();
    }
    ASSERT_OK(registry_->CreateSchema(registry::kDefaultRegistry, true, "orders",
                                      registry::DataFormat::kJson, registry::Compatibility::kNone,
                                      "", {}, std::string(schema)));
  }

  // The table destination's services over this test's warehouse and registry.
  TableServices Services() const {
    TableServices ts;
    iceberg::Warehouses* wh = warehouses_.get();
    ts.bucket_name = [wh](std::string_view arn) { return wh->BucketName(arn); };
    ts.catalog = [wh](const std::string& b) { return wh->CatalogFor(b); };
    ts.io = [wh](const std::string& b) { return wh->Io(b); };
    ts.registry = registry_.get();
    return ts;
  }

  // A JSON table channel onto db.orders of the "tables" bucket, partitioned by the hour
  // of its `ts` column.
  static ChannelConfig TableChannel() {
    ChannelConfig c;
    c.id = "chan-id";
    c.name = "chan";
    c.arn = "arn:aws:kinesis:us-east-1:000000000000:channel/chan-id";
    c.stream_arn = "arn:aws:kinesis:us-east-1:000000000000:stream/s";
    c.stream_name = "s";
    c.record_format = RecordFormat::kJson;
    c.gsr_schema_arn = "arn:aws:glue:us-east-1:000000000000:schema/default-registry/orders";
    TableDestinationConfig t;
    t.table_bucket_arn = "arn:aws:s3tables:us-east-1:000000000000:bucket/tables";
    t.ns = "db";
    t.table_name = "orders";
    t.partition_fields = {{"ts", "TIME_HOUR"}};
    c.destination = t;
    return c;
  }

  // Rows and files of db.orders' current snapshot (-1: no such table).
  int64_t LiveRows(size_t* files = nullptr) {
    auto cat = warehouses_->CatalogFor("tables");
    auto t = (*cat)->LoadTable({{"db"}, "orders"});
    if (!t.ok()) return -1;
    if (!t->metadata.CurrentSnapshot()) return 0;
    auto io = warehouses_->Io("tables");
    auto entries = iceberg::LiveEntries(**io, *t->metadata.CurrentSnapshot());
    EXPECT_OK(entries);
    int64_t rows = 0;
    for (const auto& e : *entries) rows += e.data_file.record_count;
    if (files) *files = entries->size();
    return rows;
  }

  testing::TempDir dir_;  // first: removed after everything that writes into it
  ManualClock clock_{1'780'000'000'000};
  std::unique_ptr<Database> db_;
  std::shared_ptr<objectstore::LocalObjectStore> buckets_;
  std::unique_ptr<objectstore::LocalObjectStore> tables_;
  std::unique_ptr<iceberg::Warehouses> warehouses_;
  std::unique_ptr<registry::SchemaRegistry> registry_;
};

}  // namespace icestream::delivery::table
