// ShardLog tests on real files: round trips, damage on purpose, recovery, indexes,
// retention, concurrency.
#include "log/shard_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "common/fs.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "log/committer.h"

namespace icestream::log {
namespace {

class ShardLogTest : public ::testing::Test {
 protected:
  void SetUp() override { committer_ = std::make_unique<Committer>(2); }
  void TearDown() override {
    log_.reset();
    committer_->Stop();
  }

  void Open(LogOptions opts = {}) {
    log_.reset();
    ASSERT_OK_AND_ASSIGN(log_, ShardLog::Open(dir_.string(), opts, &clock_, committer_.get()));
  }

  // Appends and waits until durable.
  AppendInfo AppendSync(const std::vector<std::pair<std::string, std::string>>& recs) {
    std::vector<AppendRecord> in;
    for (const auto& [k, d] : recs) in.push_back({k, d});
    std::promise<Status> done;
    auto info = log_->Append(in, [&](const Status& st) { done.set_value(st); });
    EXPECT_OK(info);
    Status st = done.get_future().get();
    EXPECT_OK(st);
    return *info;
  }

  // Reads `want` (record i: key "k<i+1>", data want[i]) back through ReadViews from `from` to
  // its end, each record checked byte for byte; the results go to *held when given (their
  // views must stay valid while held).
  void ExpectViewsFrom(const std::vector<std::string>& want, uint64_t from, size_t max_records,
                       std::vector<ViewResult>* held = nullptr) {
    uint64_t next = from;
    while (next < want.size()) {
      ASSERT_OK_AND_ASSIGN(auto v, log_->ReadViews(next, max_records, 1u << 20));
      ASSERT_FALSE(v.records.empty());
      for (const auto& r : v.records) {
        ASSERT_EQ(r.offset, next);
        ASSERT_EQ(r.partition_key, "k" + std::to_string(next + 1));
        ASSERT_TRUE(r.data == want[next]) << "record " << next;
        ++next;
      }
      ASSERT_EQ(v.next_offset, next);
      if (held != nullptr) held->push_back(std::move(v));
    }
  }

  // ReadViews from the start until a read fails or `count` records were read: the failure
  // (OK when none) and the offset the reads reached.
  std::pair<Status, uint64_t> ReadViewsUntilFailure(uint64_t count, size_t max_records) {
    uint64_t next = 0;
    while (next < count) {
      auto v = log_->ReadViews(next, max_records, 1u << 20);
      if (!v.ok()) return {v.status(), next};
      next = v->next_offset;
    }
    return {Status::OK(), next};
  }

  // Flips the byte of `path` at `at` through the file (the page cache sees it too), as a
  // disk would hand back a damaged byte.
  static void FlipByte(const std::string& path, off_t at) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    char c;
    ASSERT_EQ(::pread(fd, &c, 1, at), 1);
    c ^= 0x5a;
    ASSERT_EQ(::pwrite(fd, &c, 1, at), 1);
    ::close(fd);
  }

  std::string ActivePath() {
    auto names = *fs::ListDir(dir_.string());
    std::string last;
    for (auto& n : names) {
      if (n.ends_with(".log")) last = n;
    }
    return (dir_ / last).string();
  }

  testing::TempDir tmp_;  // first: outlives everything that writes into it
  std::filesystem::path dir_ = tmp_.path();
  ManualClock clock_{1'700'000'000'000};
  std::unique_ptr<Committer> committer_;
  std::shared_ptr<ShardLog> log_;
};

TEST_F(ShardLogTest, AppendReadRoundTrip) {
  Open();
  auto a = AppendSync({{"k1", "one"}, {"k2", "two"}});
  EXPECT_EQ(a.first_offset, 0u);
  auto b = AppendSync({{"k3", ""}, {"k4", std::string(100000, 'x')}});
  EXPECT_EQ(b.first_offset, 2u);
  EXPECT_EQ(log_->committed_end(), 4u);
  ASSERT_OK_AND_ASSIGN(auto r, log_->Read(0, 100, 10 << 20));
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.records[0].partition_key, "k1");
  EXPECT_EQ(r.records[1].data, "two");
  EXPECT_EQ(r.records[2].data, "");
  EXPECT_EQ(r.records[3].data.size(), 100000u);
  EXPECT_EQ(r.next_offset, 4u);
  auto mid = log_->Read(1, 2, 10 << 20);
  ASSERT_EQ(mid->records.size(), 2u);
  EXPECT_EQ(mid->records[0].offset, 1u);
  EXPECT_EQ(mid->next_offset, 3u);
  // Byte limit: at least one record, then stop before exceeding.
  auto small = log_->Read(0, 100, 5);
  EXPECT_EQ(small->records.size(), 1u);
}

TEST_F(ShardLogTest, RecordsAFrameCannotHoldAreRefused) {
  Open();
  std::string max_key(kMaxPartitionKeyBytes, 'k');
  AppendSync({{max_key, "fits"}});  // the largest key a frame holds round-trips
  std::string too_long = max_key + "k";
  std::vector<AppendRecord> in = {{too_long, "x"}};
  auto info = log_->Append(in, [](const Status&) { ADD_FAILURE() << "must not be queued"; });
  EXPECT_STATUS(kInvalidArgument, info);
  ASSERT_OK_AND_ASSIGN(auto r, log_->Read(0, 100, 1 << 20));
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].partition_key, max_key);
  EXPECT_EQ(r.records[0].data, "fits");
}

TEST_F(ShardLogTest, ReopenKeepsEverything) {
  Open();
  for (int i = 0; i < 50; ++i) AppendSync({{"k", "v" + std::to_string(i)}});
  Open();
  EXPECT_EQ(log_->committed_end(), 50u);
  auto r = log_->Read(0, 1000, 10 << 20);
  ASSERT_EQ(r->records.size(), 50u);
  EXPECT_EQ(r->records[49].data, "v49");
  EXPECT_EQ(AppendSync({{"k", "after"}}).first_offset, 50u);
}

TEST_F(ShardLogTest, TornTailIsTruncatedAtEveryCut) {
  Open();
  AppendSync({{"a", "first"}, {"b", "second"}});
  AppendSync({{"c", "third-record-payload"}});
  log_.reset();
  std::string path = ActivePath();
  std::string whole = *fs::ReadFile(path);
  size_t third = whole.size() - FrameSize(1, 20);
  for (size_t cut = third; cut < whole.size(); ++cut) {
    ASSERT_OK(fs::WriteFileAtomic(path, whole.substr(0, cut)));
    Open();
    EXPECT_EQ(log_->committed_end(), 2u) << "cut at " << cut;
    auto r = log_->Read(0, 10, 1 << 20);
    ASSERT_EQ(r->records.size(), 2u);
    EXPECT_EQ(std::filesystem::file_size(path), third);
    // New appends continue at the right offset after the truncation.
    EXPECT_EQ(AppendSync({{"d", "new"}}).first_offset, 2u);
    log_.reset();
  }
}

// A flipped byte in a record that a later write follows is damage to acknowledged data,
// not a torn tail: nothing is cut, the shard is not opened (before: the record and all
// after it were cut, and their offsets handed out again).
TEST_F(ShardLogTest, FlippedByteInDurableRecordRefusesTheShardAndCutsNothing) {
  Open();
  AppendSync({{"a", "1111"}});
  AppendSync({{"b", "2222"}});
  AppendSync({{"c", "3333"}});
  log_.reset();
  std::string path = ActivePath();
  std::string bytes = *fs::ReadFile(path);
  size_t second = kSegmentHeaderSize + FrameSize(1, 4);
  bytes[second + kFrameHeaderSize + 2] ^= 0x40;  // inside the second record's data
  ASSERT_OK(fs::WriteFileAtomic(path, bytes));
  auto r = ShardLog::Open(dir_.string(), {}, &clock_, committer_.get());
  ASSERT_STATUS(kCorruption, r);
  EXPECT_NE(r.status().message().find("offset 1"), std::string::npos) << r.status().message();
  EXPECT_EQ(*fs::ReadFile(path), bytes);  // untouched
  ASSERT_OK_AND_ASSIGN(auto scan, Segment::Examine(path, 0, /*active=*/true, 1 << 16));
  EXPECT_EQ(scan.kind, SegmentScan::Kind::kCorrupt);
  EXPECT_EQ(scan.end_offset, 1u);
  ASSERT_EQ(scan.intact_runs.size(), 1u);
  EXPECT_EQ(scan.intact_runs[0].first_offset, 2u);
}

// Within the last write (one pwrite, several frames) a damaged frame followed by intact
// frames of the same write is what a power cut leaves (pages written out of order): that
// write was never acknowledged, so it is cut.
TEST_F(ShardLogTest, HoleInsideTheLastWriteIsATornTail) {
  Open();
  AppendSync({{"a", "1111"}});
  AppendSync({{"b", "2222"}, {"c", "3333"}, {"d", "4444"}});
  log_.reset();
  std::string path = ActivePath();
  std::string bytes = *fs::ReadFile(path);
  size_t second = kSegmentHeaderSize + FrameSize(1, 4);
  std::fill(bytes.begin() + static_cast<long>(second) + 4,
            bytes.begin() + static_cast<long>(second) + 20, '\0');
  ASSERT_OK(fs::WriteFileAtomic(path, bytes));
  Open();
  EXPECT_EQ(log_->committed_end(), 1u);
  EXPECT_EQ(std::filesystem::file_size(path), second);
  EXPECT_EQ(AppendSync({{"e", "new"}}).first_offset, 1u);
}

// Files written before write-start marks existed cannot tell a torn write from damage:
// intact frames after a bad one there are treated as corruption.
TEST_F(ShardLogTest, UnmarkedFramesAfterDamageAreCorruption) {
  std::filesystem::create_directories(dir_);
  std::string bytes = EncodeSegmentHeader(0);
  for (uint64_t o = 0; o < 3; ++o) {
    std::string f(FrameSize(1, 4), '\0');
    EncodeFrame(f.data(), o, 1700000000000, "k", "data");
    bytes += f;
  }
  bytes[kSegmentHeaderSize + FrameSize(1, 4) + kFrameHeaderSize + 1] ^= 1;
  std::string path = (dir_ / Segment::FileName(0)).string();
  ASSERT_OK(fs::WriteFileAtomic(path, bytes));
  auto r = ShardLog::Open(dir_.string(), {}, &clock_, committer_.get());
  EXPECT_STATUS(kCorruption, r);
  // Without anything intact after the damage it is still a torn tail.
  ASSERT_OK(fs::WriteFileAtomic(path, bytes.substr(0, bytes.size() - FrameSize(1, 4))));
  Open();
  EXPECT_EQ(log_->committed_end(), 1u);
}

// One damaged record in a sealed segment: reads return what precedes it, then stop at it
// with an error that names the offset and no file path; they never skip it — with or
// without the index file. Records of later segments stay readable.
TEST_F(ShardLogTest, DamageInASealedSegmentStopsReadsWithAClearError) {
  LogOptions opts;
  opts.segment_bytes = 2048;
  Open(opts);
  for (int i = 0; i < 30; ++i)
    AppendSync({{"k", std::string(300, static_cast<char>('a' + i % 26))}});
  log_.reset();
  ASSERT_OK_AND_ASSIGN(auto listing, fs::ListDir(dir_.string()));
  std::string first;
  for (auto& n : listing) {
    if (n.ends_with(".log")) {
      first = n;
      break;
    }
  }
  std::string path = (dir_ / first).string();
  std::string bytes = *fs::ReadFile(path);
  size_t third = kSegmentHeaderSize + 2 * FrameSize(1, 300);
  bytes[third + kFrameHeaderSize + 10] ^= 0x08;  // record at offset 2
  ASSERT_OK(fs::WriteFileAtomic(path, bytes));
  for (bool with_index : {true, false}) {
    if (!with_index) {
      ASSERT_OK(fs::RemoveFile((dir_ / (first.substr(0, 20) + ".idx")).string()));
    }
    Open(opts);
    ASSERT_OK_AND_ASSIGN(auto r, log_->Read(0, 1000, 1 << 20));
    EXPECT_EQ(r.records.size(), 2u);
    EXPECT_EQ(r.next_offset, 2u);
    auto at = log_->Read(2, 1000, 1 << 20);
    ASSERT_STATUS(kCorruption, at) << (with_index ? "index" : "no index");
    EXPECT_NE(at.status().message().find("offset 2"), std::string::npos) << at.status().message();
    EXPECT_EQ(at.status().message().find('/'), std::string::npos) << at.status().message();
    auto past = log_->Read(3, 1000, 1 << 20);  // the same segment, after the damage
    EXPECT_FALSE(past.ok() && !past->records.empty() && past->records[0].offset != 3);
    ASSERT_OK_AND_ASSIGN(auto later, log_->Read(25, 1000, 1 << 20));
    EXPECT_EQ(later.records.front().offset, 25u);
  }
}

// A failed write (here: the file size limit, as a full disk would) refuses that write
// and what queued behind it; once the condition clears, writes succeed again without a
// reopen, at the offsets the refused records would have had.
TEST_F(ShardLogTest, FailedWriteHealsWithoutRestart) {
  Open();
  AppendSync({{"k", "before"}});
  std::string path = ActivePath();
  uint64_t size = std::filesystem::file_size(path);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = size + 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::promise<Status> failed;
  std::vector<AppendRecord> recs = {{"k", std::string(1000, 'x')}};
  ASSERT_OK_AND_ASSIGN(auto info,
                       log_->Append(recs, [&](const Status& st) { failed.set_value(st); }));
  EXPECT_EQ(info.first_offset, 1u);
  Status st = failed.get_future().get();
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_STATUS(kIOError, st);
  EXPECT_EQ(st.message().find('/'), std::string::npos) << st.message();  // no path for clients
  EXPECT_TRUE(log_->write_error().has_value());
  EXPECT_EQ(std::filesystem::file_size(path), size);  // the partial write was cut
  EXPECT_EQ(log_->committed_end(), 1u);
  EXPECT_EQ(AppendSync({{"k", "after"}}).first_offset, 1u);
  EXPECT_FALSE(log_->write_error().has_value());
  auto r = log_->Read(0, 10, 1 << 20);
  ASSERT_EQ(r->records.size(), 2u);
  EXPECT_EQ(r->records[1].data, "after");
  log_.reset();
  Open();
  EXPECT_EQ(log_->committed_end(), 2u);
}

// Drain waits for queued appends and reports the end that is on disk.
TEST_F(ShardLogTest, DrainReturnsTheDurableEnd) {
  Open();
  std::vector<AppendRecord> recs = {{"k", "v"}};
  for (int i = 0; i < 50; ++i) ASSERT_OK(log_->Append(recs, [](const Status&) {}));
  EXPECT_EQ(log_->Drain(), 50u);
}

// Sealed segments keep no descriptor of their own: descriptors come from a bounded cache.
TEST_F(ShardLogTest, SealedSegmentsAreOpenedOnDemand) {
  LogOptions opts;
  opts.segment_bytes = 1024;
  opts.file_cache = std::make_shared<SegmentFileCache>(2);
  Open(opts);
  for (int i = 0; i < 40; ++i) AppendSync({{"k", std::string(200, 'd')}});
  ASSERT_GT(log_->segment_count(), 6u);
  auto open_fds = [] {
    size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n += e.exists() ? 1 : 0;
    return n;
  };
  size_t before = open_fds();
  for (int round = 0; round < 3; ++round) {
    ASSERT_OK_AND_ASSIGN(auto r, log_->Read(0, 1000, 1 << 20));
    EXPECT_EQ(r.records.size(), 40u);
  }
  EXPECT_LE(opts.file_cache->size(), 2u);
  EXPECT_LE(open_fds(), before + 2);
  Open(opts);  // reopening does not keep them open either
  EXPECT_LE(opts.file_cache->size(), 2u);
  EXPECT_EQ(log_->Read(0, 1000, 1 << 20)->records.size(), 40u);
}

TEST_F(ShardLogTest, GarbageAfterTailIsRemoved) {
  Open();
  AppendSync({{"a", "x"}});
  log_.reset();
  std::string path = ActivePath();
  std::string bytes = *fs::ReadFile(path);
  size_t good = bytes.size();
  bytes += std::string(1000, '\0');
  ASSERT_OK(fs::WriteFileAtomic(path, bytes));
  Open();
  EXPECT_EQ(log_->committed_end(), 1u);
  EXPECT_EQ(std::filesystem::file_size(path), good);
}

TEST_F(ShardLogTest, SegmentsRollAndIndexesSurviveOrRebuild) {
  LogOptions opts;
  opts.segment_bytes = 4096;
  opts.index_interval_bytes = 512;
  Open(opts);
  std::mt19937 rng(3);
  std::vector<std::string> expect;
  for (int i = 0; i < 300; ++i) {
    std::string d(rng() % 300, static_cast<char>('a' + i % 26));
    expect.push_back(d);
    AppendSync({{"pk" + std::to_string(i), d}});
  }
  EXPECT_GT(log_->segment_count(), 10u);
  auto check = [&] {
    for (uint64_t o : {0ull, 1ull, 57ull, 123ull, 250ull, 299ull}) {
      ASSERT_OK_AND_ASSIGN(auto r, log_->Read(o, 1, 1 << 20));
      ASSERT_EQ(r.records.size(), 1u);
      EXPECT_EQ(r.records[0].offset, o);
      EXPECT_EQ(r.records[0].data, expect[o]);
    }
    auto all = log_->Read(0, 10000, 64 << 20);
    EXPECT_EQ(all->records.size(), 300u);
  };
  check();
  Open(opts);
  check();
  // Damage one index and remove another: both are rebuilt from their segments.
  auto names = *fs::ListDir(dir_.string());
  std::vector<std::string> idx;
  for (auto& n : names) {
    if (n.ends_with(".idx")) idx.push_back(n);
  }
  ASSERT_GE(idx.size(), 2u);
  ASSERT_OK(fs::RemoveFile((dir_ / idx[0]).string()));
  std::string b = *fs::ReadFile((dir_ / idx[1]).string());
  b[b.size() / 2] ^= 0x10;
  ASSERT_OK(fs::WriteFileAtomic((dir_ / idx[1]).string(), b));
  Open(opts);
  check();
}

// Bytes of `path` resident in the page cache (mincore over a read-only mapping).
uint64_t ResidentBytes(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st {};
  ::fstat(fd, &st);
  uint64_t resident = 0;
  if (st.st_size > 0) {
    void* m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      long page = ::sysconf(_SC_PAGESIZE);
      std::vector<unsigned char> vec((st.st_size + page - 1) / page);
      if (::mincore(m, static_cast<size_t>(st.st_size), vec.data()) == 0) {
        for (unsigned char v : vec) resident += (v & 1) ? page : 0;
      }
      ::munmap(m, static_cast<size_t>(st.st_size));
    }
  }
  ::close(fd);
  return resident;
}

TEST_F(ShardLogTest, OnlyTheNewestWindowStaysInThePageCache) {
  std::filesystem::create_directories(dir_);
  struct statfs fs_info {};
  if (::statfs(dir_.c_str(), &fs_info) == 0 && fs_info.f_type == TMPFS_MAGIC) {
    GTEST_SKIP() << "tmpfs pages are the files themselves; there is no cache to drop";
  }
  LogOptions opts;
  opts.segment_bytes = 24ull << 20;
  opts.cache_window_bytes = 8ull << 20;
  Open(opts);
  std::string d(512 << 10, 'x');
  for (int i = 0; i < 120; ++i) {  // 60 MiB over three segments
    d[0] = static_cast<char>(i);
    AppendSync({{"pk", d}});
  }
  EXPECT_GE(log_->segment_count(), 3u);
  uint64_t resident = 0;
  ASSERT_OK_AND_ASSIGN(auto names, fs::ListDir(dir_.string()));
  for (const auto& n : names) {
    if (n.ends_with(".log")) resident += ResidentBytes((dir_ / n).string());
  }
  // The window plus the 4 MiB drop step (and a page of slack per file); without the
  // drop-behind all 60 MiB would be cached on a machine with free memory.
  EXPECT_LE(resident, (8ull << 20) + (4ull << 20) + (64ull << 10));
  // Dropped pages are still data: everything reads back.
  ASSERT_OK_AND_ASSIGN(auto all, log_->Read(0, 1000, 256ull << 20));
  ASSERT_EQ(all.records.size(), 120u);
  for (int i = 0; i < 120; ++i) EXPECT_EQ(static_cast<uint8_t>(all.records[i].data[0]), i);
}

// Records the log dropped from the page cache (a backlog) are read around the cache: they
// come back byte for byte from any start offset, through Read and ReadViews, with frames at
// every alignment and larger than a read, and reading them leaves the pages uncached (a
// buffered read would cache them again). A damaged record among them is still found.
TEST_F(ShardLogTest, RecordsBelowTheWindowAreReadAroundTheCache) {
  std::filesystem::create_directories(dir_);
  struct statfs fs_info {};
  ASSERT_EQ(::statfs(dir_.c_str(), &fs_info), 0);
  const bool tmpfs = fs_info.f_type == TMPFS_MAGIC;  // no cache to drop: reads still work
  LogOptions opts;
  opts.segment_bytes = 16ull << 20;
  opts.cache_window_bytes = 4ull << 20;
  Open(opts);
  std::mt19937 rng(7);
  std::vector<std::string> want;
  uint64_t total = 0;
  while (total < (40ull << 20)) {  // 40 MiB over three segments
    size_t n = want.size() % 97 == 5 ? (5u << 20) + 3 : 1 + rng() % 6000;
    std::string d(n, '\0');
    for (auto& c : d) c = static_cast<char>(rng());
    total += n;
    want.push_back(std::move(d));
    AppendSync({{"k" + std::to_string(want.size()), want.back()}});
  }
  auto resident = [&] {
    uint64_t r = 0;
    auto names = fs::ListDir(dir_.string());
    if (!names.ok()) return r;
    for (const auto& n : *names) {
      if (n.ends_with(".log")) r += ResidentBytes((dir_ / n).string());
    }
    return r;
  };
  for (uint64_t from : {uint64_t{0}, uint64_t{1}, uint64_t{13}, uint64_t{want.size() / 3},
                        uint64_t{want.size() / 2 + 1}}) {
    ASSERT_NO_FATAL_FAILURE(ExpectViewsFrom(want, from, 1000));
  }
  ASSERT_OK_AND_ASSIGN(auto all, log_->Read(0, 100000, 1ull << 30));
  ASSERT_EQ(all.records.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_TRUE(all.records[i].data == want[i]) << i;
  if (!tmpfs) {
    // The window, the drop step and a page per file: the 36 MiB below were not cached again.
    EXPECT_LE(resident(), (4ull << 20) + (4ull << 20) + (64ull << 10));
  }

  // A flipped byte in the first segment (long dropped from the cache) stops the read there.
  std::string first;
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> names, fs::ListDir(dir_.string()));
  for (const auto& n : names) {
    if (n.ends_with(".log")) {
      first = (dir_ / n).string();
      break;
    }
  }
  ASSERT_NO_FATAL_FAILURE(FlipByte(first, 3 << 20));
  auto [st, reached] = ReadViewsUntilFailure(want.size(), 1000);
  EXPECT_STATUS(kCorruption, st);
  EXPECT_LT(reached, want.size());
}

// How many mappings of `path` the process holds (/proc/self/maps).
int MappingsOf(const std::string& path) {
  std::ifstream in("/proc/self/maps");  // sized 0: read to the end, not by its size
  const std::string maps((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int n = 0;
  for (size_t at = maps.find(path); at != std::string::npos; at = maps.find(path, at + 1)) ++n;
  return n;
}

// Records in the cache window (the newer part of a backlog) come back as views of the
// cached pages, mapped rather than copied out: byte for byte from any start, the segment
// mapped while a result holds its views and unmapped after, the last records (whose
// padding would pass the durable end) read instead, and a changed byte among them still
// caught by its checksum.
TEST_F(ShardLogTest, RecordsInTheWindowAreViewsOfTheCachedPages) {
  LogOptions opts;
  opts.cache_window_bytes = 64ull << 20;
  Open(opts);
  std::mt19937 rng(11);
  std::vector<std::string> want;
  uint64_t total = 0;
  while (total < (6ull << 20)) {
    std::string d(1 + rng() % 3000, '\0');
    for (auto& c : d) c = static_cast<char>(rng());
    total += d.size();
    want.push_back(std::move(d));
    AppendSync({{"k" + std::to_string(want.size()), want.back()}});
  }
  const std::string segment = ActivePath();
  EXPECT_EQ(MappingsOf(segment), 0);
  for (uint64_t from :
       {uint64_t{0}, uint64_t{7}, uint64_t{want.size() / 2 + 1}, uint64_t{want.size() - 3}}) {
    std::vector<ViewResult> held;
    ASSERT_NO_FATAL_FAILURE(ExpectViewsFrom(want, from, 100000, &held));
    // A read of a MiB maps; the records' views stay readable while it is held.
    if (from == 0) {
      EXPECT_GE(MappingsOf(segment), 1);
    }
    held.clear();
    EXPECT_EQ(MappingsOf(segment), 0) << "a read's mapping outlived its result";
  }
  // A byte changed in the cached pages.
  ASSERT_NO_FATAL_FAILURE(FlipByte(segment, 1 << 20));
  auto [st, reached] = ReadViewsUntilFailure(want.size(), 100000);
  EXPECT_STATUS(kCorruption, st);
  EXPECT_LT(reached, want.size());
}

// A read under a MiB (ArrivalOf reads 256 KiB to find one record, on every scheduling pass
// of a shard with a backlog) neither maps the cached pages nor takes a fresh buffer, both of
// which fault pages in: it reads into a buffer an earlier read gave back.
TEST_F(ShardLogTest, SmallReadsReuseTheirBuffersInsteadOfFaultingInNewPages) {
  Open();
  const std::string d(1000, 'a');
  for (int i = 0; i < 3000; ++i) AppendSync({{"k", d}});
  ASSERT_OK(log_->ArrivalOf(0).status());  // the first read's buffer may be new
  auto faults = [] {
    rusage u{};
    ::getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt + u.ru_majflt;
  };
  const long before = faults();
  for (uint64_t at = 0; at < 200; ++at) ASSERT_OK(log_->ArrivalOf(at * 7).status());
  // Mapped per read, these 200 took 1,000 faults.
  EXPECT_LT(faults() - before, 200);
}

TEST_F(ShardLogTest, DamagedSegmentHeaderRefusesToOpenAndDeletesNothing) {
  LogOptions opts;
  opts.segment_bytes = 1024;
  Open(opts);
  for (int i = 0; i < 20; ++i) AppendSync({{"k", std::string(200, 'h')}});
  log_.reset();
  auto names = *fs::ListDir(dir_.string());
  std::string first;
  for (auto& n : names) {
    if (n.ends_with(".log")) {
      first = n;
      break;
    }
  }
  std::string path = (dir_ / first).string();
  std::string bytes = *fs::ReadFile(path);
  bytes[8] = 9;  // version
  ASSERT_OK(fs::WriteFileAtomic(path, bytes));
  auto r = ShardLog::Open(dir_.string(), opts, &clock_, committer_.get());
  EXPECT_STATUS(kCorruption, r);
  EXPECT_EQ(*fs::ListDir(dir_.string()), names);  // every file still there
}

TEST_F(ShardLogTest, InterruptedSegmentCreationLeavesOnlyATempFile) {
  Open();
  AppendSync({{"k", "v"}});
  log_.reset();
  // A segment that was being created when the process died: header not yet renamed in.
  ASSERT_OK(fs::WriteFileAtomic((dir_ / "00000000000000000001.log.tmp").string(), "ISLO"));
  Open();
  EXPECT_EQ(log_->committed_end(), 1u);
  EXPECT_FALSE(fs::Exists((dir_ / "00000000000000000001.log.tmp").string()));
  EXPECT_EQ(AppendSync({{"k", "w"}}).first_offset, 1u);
}

TEST_F(ShardLogTest, SealedSegmentShorterThanItsIndexIsRescanned) {
  LogOptions opts;
  opts.segment_bytes = 2048;
  Open(opts);
  for (int i = 0; i < 30; ++i) AppendSync({{"k", std::string(300, 's')}});
  log_.reset();
  std::string first;
  auto listing = *fs::ListDir(dir_.string());
  for (auto& n : listing) {
    if (n.ends_with(".log")) {
      first = n;
      break;
    }
  }
  std::string path = (dir_ / first).string();
  std::string bytes = *fs::ReadFile(path);
  ASSERT_OK(fs::WriteFileAtomic(path, bytes.substr(0, bytes.size() - 100)));
  Open(opts);
  // The records before the damage are read; reading stops there and does not hang.
  ASSERT_OK_AND_ASSIGN(auto r, log_->Read(0, 1000, 1 << 20));
  EXPECT_GT(r.records.size(), 0u);
  auto at = log_->Read(r.next_offset, 1000, 1 << 20);
  EXPECT_STATUS(kCorruption, at);
}

TEST_F(ShardLogTest, SmallByteBudgetStillReturnsOneRecordAtATime) {
  Open();
  AppendSync({{"k", std::string(300000, 'a')}, {"k", "b"}, {"k", "c"}});
  auto r = log_->Read(0, 10, 1000);
  ASSERT_EQ(r->records.size(), 1u);
  EXPECT_EQ(r->next_offset, 1u);
  auto r2 = log_->Read(1, 10, 1000);
  EXPECT_EQ(r2->records.size(), 2u);
}

TEST_F(ShardLogTest, TimeLookup) {
  LogOptions opts;
  opts.segment_bytes = 2048;
  opts.index_interval_bytes = 256;
  Open(opts);
  int64_t t0 = clock_.NowMillis();
  for (int i = 0; i < 100; ++i) {
    AppendSync({{"k", std::string(100, 'z')}});
    clock_.Advance(10);
  }
  EXPECT_EQ(*log_->OffsetAtTime(t0 - 1000), 0u);
  EXPECT_EQ(*log_->OffsetAtTime(t0), 0u);
  EXPECT_EQ(*log_->OffsetAtTime(t0 + 1), 1u);
  EXPECT_EQ(*log_->OffsetAtTime(t0 + 500), 50u);
  EXPECT_EQ(*log_->OffsetAtTime(t0 + 995), 100u);  // after everything: the end
  EXPECT_EQ(*log_->ArrivalOf(42), t0 + 420);
}

TEST_F(ShardLogTest, ApproximateBytesFollowsTheIndex) {
  LogOptions opts;
  opts.segment_bytes = 16 << 10;
  opts.index_interval_bytes = 1024;
  Open(opts);
  for (int i = 0; i < 100; ++i) AppendSync({{"kk", std::string(1000, 'a')}});
  const uint64_t frame = FrameSize(2, 1000);
  EXPECT_GT(log_->segment_count(), 3u);
  // Exact over whole segments, within one index interval per segment boundary otherwise.
  uint64_t all = log_->ApproximateBytes(0, 100);
  EXPECT_EQ(all, 100 * frame);
  uint64_t mid = log_->ApproximateBytes(20, 60);
  EXPECT_NEAR(static_cast<double>(mid), 40.0 * frame, 2.0 * 1024 + 2 * frame);
  EXPECT_EQ(log_->ApproximateBytes(60, 60), 0u);
  EXPECT_EQ(log_->ApproximateBytes(90, 1000), log_->ApproximateBytes(90, 100));
}

TEST_F(ShardLogTest, ArrivalTimeNeverGoesBackwards) {
  Open();
  AppendSync({{"k", "a"}});
  clock_.Advance(-5000);
  auto info = AppendSync({{"k", "b"}});
  auto r = log_->Read(0, 2, 1 << 20);
  EXPECT_EQ(r->records[1].arrival_ms, r->records[0].arrival_ms);
  EXPECT_EQ(info.arrival_ms, r->records[0].arrival_ms);
}

TEST_F(ShardLogTest, RetentionDeletesExpiredSegmentsOnly) {
  LogOptions opts;
  opts.segment_bytes = 1024;
  Open(opts);
  for (int i = 0; i < 40; ++i) AppendSync({{"k", std::string(200, 'r')}});
  size_t before = log_->segment_count();
  ASSERT_GT(before, 5u);
  clock_.Advance(3600 * 1000);
  for (int i = 0; i < 10; ++i) AppendSync({{"k", std::string(200, 'n')}});
  int64_t cutoff = clock_.NowMillis() - 1000;
  // A reader still needs offset 20: segments holding it stay.
  int deleted = *log_->ApplyRetention(cutoff, 20);
  EXPECT_GT(deleted, 0);
  EXPECT_LE(log_->start_offset(), 20u);
  deleted = *log_->ApplyRetention(cutoff, UINT64_MAX);
  EXPECT_GT(deleted, 0);
  EXPECT_GE(log_->start_offset(), 30u);
  auto r = log_->Read(0, 1000, 64 << 20);  // clamped to the trim horizon
  ASSERT_FALSE(r->records.empty());
  EXPECT_EQ(r->records.front().offset, log_->start_offset());
  EXPECT_EQ(r->records.back().offset, 49u);
  // After a restart the trim horizon is the same.
  uint64_t start = log_->start_offset();
  Open(opts);
  EXPECT_EQ(log_->start_offset(), start);
  EXPECT_EQ(log_->committed_end(), 50u);
}

TEST_F(ShardLogTest, ExpiredActiveSegmentIsRolledThenDeleted) {
  Open();
  for (int i = 0; i < 5; ++i) AppendSync({{"k", "old"}});
  clock_.Advance(48 * 3600 * 1000LL);
  int64_t cutoff = clock_.NowMillis() - 24 * 3600 * 1000LL;
  EXPECT_EQ(*log_->ApplyRetention(cutoff, UINT64_MAX), 0);
  // The roll happens on the committer thread; wait for it.
  for (int i = 0; i < 200 && log_->segment_count() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(log_->segment_count(), 2u);
  EXPECT_EQ(*log_->ApplyRetention(cutoff, UINT64_MAX), 1);
  EXPECT_EQ(log_->start_offset(), 5u);
  EXPECT_TRUE(log_->Read(0, 10, 1 << 20)->records.empty());
  Open();
  EXPECT_EQ(log_->start_offset(), 5u);
  EXPECT_EQ(AppendSync({{"k", "new"}}).first_offset, 5u);
}

TEST_F(ShardLogTest, ConcurrentAppendsAreGroupCommittedInOrder) {
  Open();
  constexpr int kThreads = 8, kPer = 200;
  std::vector<std::thread> threads;
  std::atomic<int> acked{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i) {
        std::string d = std::to_string(t) + ":" + std::to_string(i);
        std::promise<Status> p;
        ASSERT_OK(log_->Append({{"k", d}}, [&](const Status& st) { p.set_value(st); }));
        ASSERT_OK(p.get_future().get());
        acked++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(acked.load(), kThreads * kPer);
  auto r = log_->Read(0, 100000, 64 << 20);
  ASSERT_EQ(r->records.size(), static_cast<size_t>(kThreads * kPer));
  // Per producer, its records appear in the order it wrote them.
  std::vector<int> last(kThreads, -1);
  for (size_t i = 0; i < r->records.size(); ++i) {
    EXPECT_EQ(r->records[i].offset, i);
    const auto& d = r->records[i].data;
    int t = std::stoi(d.substr(0, d.find(':')));
    int n = std::stoi(d.substr(d.find(':') + 1));
    EXPECT_EQ(n, last[t] + 1);
    last[t] = n;
  }
}

}  // namespace
}  // namespace icestream::log
