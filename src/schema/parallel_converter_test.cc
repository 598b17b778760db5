// Tests of the parallel converter: every record lands once whatever the thread count and
// prefetching, blocks made ahead really are made ahead, errors stop every thread (the
// prefetcher too), and each block's rejections come back with it.
#include "schema/parallel_converter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/status_assertions.h"
#include "format/parquet/file_reader.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/json_rows.h"
#include "format/parquet/output_stream.h"

namespace icestream::schema {
namespace {

namespace pq = format::parquet;

constexpr const char* kSchema = R"({"type":"object","required":["id"],"properties":{
  "id":{"type":"integer"},"name":{"type":"string"}}})";

// Record i: {"id":i,"name":"n<i % 7>"}; every 10th one has a string id (rejected).
std::string Record(int i) {
  if (i % 10 == 9) return "{\"id\":\"x" + std::to_string(i) + "\",\"name\":\"bad\"}";
  return "{\"id\":" + std::to_string(i) + ",\"name\":\"n" + std::to_string(i % 7) + "\"}";
}

struct Outcome {
  Status status;
  std::vector<int64_t> placed_seqs;  // in the order `place` saw them
  std::vector<int64_t> ids;          // of the rows in the file, sorted
  std::vector<size_t> rejected;      // record numbers, sorted
  std::set<std::thread::id> next_threads;
};

class ParallelConverterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(schema_, LoadConvertibleSchema(kSchema));
    for (int i = 0; i < kRecords; ++i) records_.push_back(Record(i));
  }

  // Converts records_ in blocks of `block` records into one file; `on_next(seq)` and
  // `on_place(seq)` run inside the callbacks (to gate them, or to fail).
  Outcome Run(ParallelConverterOptions po, size_t block,
              const std::function<Status(int64_t)>& on_next = nullptr,
              const std::function<Status(int64_t)>& on_place = nullptr) {
    Outcome o;
    std::string bytes;
    pq::StringOutputStream sink(&bytes);
    pq::WriterOptions wo;
    wo.row_group_size = 4 << 10;  // several row groups, some cut inside blocks
    wo.page_size = 1 << 10;
    auto writer = pq::FileWriter::Make(schema_.schema, &sink, wo);
    EXPECT_OK(writer.status());
    if (!writer.ok()) return o;
    int64_t seq = 0;
    size_t at = 0;
    std::mutex next_mu;
    auto next = [&](ConvertBlock* b) -> Result<bool> {
      {
        std::lock_guard lock(next_mu);
        o.next_threads.insert(std::this_thread::get_id());
      }
      b->records.clear();
      if (on_next) RETURN_IF_ERROR(on_next(seq));
      if (at >= records_.size()) return false;
      for (size_t n = 0; n < block && at < records_.size(); ++n)
        b->records.push_back(records_[at++]);
      b->seq = seq++;
      // The block's first record number, handed back through the owner.
      b->owner = std::make_shared<size_t>(at - b->records.size());
      return true;
    };
    auto place = [&](ConvertedBlock&& done) -> Status {
      o.placed_seqs.push_back(done.seq);
      if (on_place) RETURN_IF_ERROR(on_place(done.seq));
      if (done.owner) {
        size_t first = *static_cast<size_t*>(done.owner.get());
        for (const auto& r : done.rejections) o.rejected.push_back(first + r.index);
      }
      for (auto& [key, groups] : done.row_groups)
        for (auto& g : groups) RETURN_IF_ERROR((*writer)->AppendRowGroup(&g));
      return Status::OK();
    };
    o.status =
        ParallelConverter::Run(schema_, (*writer)->schema(), (*writer)->options(), po, next, place);
    if (!o.status.ok()) return o;
    EXPECT_OK((*writer)->Close().status());
    auto reader = pq::ParquetFileReader::Open(bytes);
    EXPECT_OK(reader.status());
    if (!reader.ok()) return o;
    std::string rows;
    for (int g = 0; g < (*reader)->num_row_groups(); ++g)
      EXPECT_OK(pq::AppendJsonRows(**reader, g, &rows));
    std::istringstream in(rows);
    for (std::string line; std::getline(in, line);) {
      auto p = line.find("\"id\":");
      if (p != std::string::npos) o.ids.push_back(std::stoll(line.substr(p + 5)));
    }
    std::sort(o.ids.begin(), o.ids.end());
    std::sort(o.rejected.begin(), o.rejected.end());
    return o;
  }

  void ExpectEveryRecordOnce(const Outcome& o) {
    std::vector<int64_t> want_ids;
    std::vector<size_t> want_rejected;
    for (int i = 0; i < kRecords; ++i) {
      if (i % 10 == 9) {
        want_rejected.push_back(static_cast<size_t>(i));
      } else {
        want_ids.push_back(i);
      }
    }
    EXPECT_EQ(o.ids, want_ids);
    EXPECT_EQ(o.rejected, want_rejected);
  }

  static constexpr int kRecords = 20000;
  ConvertibleSchema schema_;
  std::vector<std::string> records_;
};

TEST_F(ParallelConverterTest, EveryRecordLandsOnceWithAnyThreadsAndPrefetching) {
  for (int threads : {1, 2, 3}) {
    for (int prefetch : {0, 1, 3}) {
      for (bool carry : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << threads << " thread(s), prefetch " << prefetch << (carry ? ", carry" : ""));
        ParallelConverterOptions po;
        po.threads = threads;
        po.prefetch_blocks = prefetch;
        po.carry_across_blocks = carry;
        Outcome o = Run(po, 700);
        ASSERT_OK(o.status);
        ExpectEveryRecordOnce(o);
        if (!carry) {
          // In block order, each once.
          std::vector<int64_t> want(o.placed_seqs.size());
          for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<int64_t>(i);
          EXPECT_EQ(o.placed_seqs, want);
        }
      }
    }
  }
}

TEST_F(ParallelConverterTest, APrefetcherMakesTheNextBlockWhileOneIsConverted) {
  // One converting thread: without a prefetcher, block 1 is made only after block 0 is
  // placed. With one, it is made while block 0 is converted, on another thread.
  std::mutex mu;
  std::condition_variable cv;
  bool block1_made = false;
  auto on_next = [&](int64_t seq) {
    if (seq == 1) {
      std::lock_guard lock(mu);
      block1_made = true;
      cv.notify_all();
    }
    return Status::OK();
  };
  auto on_place = [&](int64_t seq) {
    if (seq != 0) return Status::OK();
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return block1_made; }))
      return Internal("block 1 was not made while block 0 was placed");
    return Status::OK();
  };
  ParallelConverterOptions po;
  po.threads = 1;
  po.prefetch_blocks = 1;
  Outcome o = Run(po, 1000, on_next, on_place);
  ASSERT_OK(o.status);
  ExpectEveryRecordOnce(o);
  EXPECT_EQ(o.next_threads.size(), 1u);
  EXPECT_EQ(o.next_threads.count(std::this_thread::get_id()), 0u)
      << "blocks are made on the prefetcher's thread";
}

TEST_F(ParallelConverterTest, AFailingSourceOrPlaceStopsEveryThreadAndThePrefetcher) {
  for (int prefetch : {0, 2}) {
    SCOPED_TRACE(::testing::Message() << "prefetch " << prefetch);
    ParallelConverterOptions po;
    po.threads = 2;
    po.prefetch_blocks = prefetch;
    Outcome o = Run(po, 500, [](int64_t seq) {
      return seq == 5 ? Unavailable("the log went away") : Status::OK();
    });
    EXPECT_EQ(o.status.code(), StatusCode::kUnavailable);
    EXPECT_NE(o.status.message().find("the log went away"), std::string::npos);
    o = Run(po, 500, nullptr, [](int64_t seq) {
      return seq == 3 ? Internal("the file could not be written") : Status::OK();
    });
    EXPECT_EQ(o.status.code(), StatusCode::kInternal);
    EXPECT_LE(o.placed_seqs.size(), 4u) << "nothing is placed after the failure";
  }
}

}  // namespace
}  // namespace icestream::schema
