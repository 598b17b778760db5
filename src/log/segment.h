// Segment: one segment file of a shard log and its sparse index (docs/formats/log.md).
//
// Lifetime: owned by ShardLog through shared_ptr; readers hold a shared_ptr while they
// pread, so a segment deleted by retention stays readable until the last reader is done
// (its file is unlinked at once, its descriptor closed in the destructor).
// Thread-safety: the mutable fields are written only by the shard's committer thread;
// `entries` is guarded by ShardLog's segment lock, the sizes are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "log/format.h"

namespace icestream::log {

class Segment {
 public:
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates a new, empty segment file with its header, fsyncs it and its folder.
  static Result<std::shared_ptr<Segment>> Create(const std::string& dir, uint64_t base_offset);
  // Opens an existing sealed segment: loads its .idx, or rebuilds it by scanning.
  static Result<std::shared_ptr<Segment>> OpenSealed(const std::string& dir, uint64_t base_offset,
                                                     uint64_t index_interval_bytes);
  // Opens the last segment for appending: scans every frame and truncates the file after
  // the last valid one (a torn tail). `truncated_bytes` reports what was cut.
  static Result<std::shared_ptr<Segment>> OpenActive(const std::string& dir, uint64_t base_offset,
                                                     uint64_t index_interval_bytes,
                                                     uint64_t* truncated_bytes);

  static std::string FileName(uint64_t base_offset);      // 20-digit name + ".log"
  static std::string IndexFileName(uint64_t base_offset);  // 20-digit name + ".idx"

  // Writes the .idx file (atomically) and marks the segment sealed. Committer thread only.
  Status Seal();
  // Appends `n` bytes at the end of the valid data (not yet durable). Committer only.
  Status WriteAt(const char* data, size_t n, uint64_t position);
  // fdatasync (or nothing when fsync is disabled).
  Status Sync();
  // Drops the page-cache pages of [0, position) — durable, clean bytes only. Cheap to call
  // often: does nothing until `position` has moved at least 4 MiB past the last drop,
  // unless `force`. Committer only.
  void DropCacheBelow(uint64_t position, bool force = false);
  // Deletes the files; the object stays readable through open descriptors.
  void Unlink();

  uint64_t base_offset() const { return base_offset_; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // Published state (what readers may see).
  uint64_t durable_bytes() const { return durable_bytes_.load(std::memory_order_acquire); }
  uint64_t end_offset() const { return end_offset_.load(std::memory_order_acquire); }
  int64_t last_arrival_ms() const { return last_arrival_ms_.load(std::memory_order_acquire); }
  int64_t first_arrival_ms() const { return first_arrival_ms_.load(std::memory_order_acquire); }
  bool empty() const { return end_offset() == base_offset_; }

  void Publish(uint64_t durable_bytes, uint64_t end_offset, int64_t first_arrival_ms,
               int64_t last_arrival_ms);

  // Sparse index; guarded by the owning ShardLog's segment lock.
  std::vector<IndexEntry>& entries() { return entries_; }
  const std::vector<IndexEntry>& entries() const { return entries_; }
  uint64_t last_indexed_position() const { return last_indexed_position_; }
  void set_last_indexed_position(uint64_t p) { last_indexed_position_ = p; }

 private:
  Segment(std::string dir, uint64_t base_offset, int fd);
  // Scans frames from the header on; fills the index and published state. Returns the
  // position after the last valid frame.
  Result<uint64_t> Scan(uint64_t index_interval_bytes, uint64_t file_size);

  std::string dir_;
  std::string path_;
  uint64_t base_offset_;
  int fd_;
  std::vector<IndexEntry> entries_;
  uint64_t last_indexed_position_ = 0;
  uint64_t cache_dropped_below_ = 0;
  std::atomic<uint64_t> durable_bytes_{kSegmentHeaderSize};
  std::atomic<uint64_t> end_offset_;
  std::atomic<int64_t> first_arrival_ms_{0};
  std::atomic<int64_t> last_arrival_ms_{0};
};

}  // namespace icestream::log
