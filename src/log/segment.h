// Segment: one segment file of a shard log and its sparse index (docs/formats/log.md).
//
// Lifetime: owned by ShardLog through shared_ptr. Only the active segment keeps a
// descriptor of its own (for writing); sealed segments are read through descriptors
// borrowed from the SegmentFileCache. Readers hold a FileHandle while they pread, so a
// segment deleted by retention stays readable until the last reader is done.
// Thread-safety: the mutable fields are written only by the shard's committer thread;
// `entries` is guarded by ShardLog's segment lock, the sizes are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "log/format.h"
#include "log/segment_files.h"

namespace icestream::log {

// What a scan of one segment file found (Segment::Examine). The valid prefix runs from
// the header to the first frame that is not valid (bad CRC or length, wrong offset, cut
// short by the end of the file); anything after it is the damaged region, where intact
// frames (whole, right CRC, an offset at or after the expected one) are looked for.
struct SegmentScan {
  enum class Kind {
    kClean,     // the valid prefix is the whole file
    kTornTail,  // the damage can only be an unfinished last write: cut it
    kCorrupt,   // damage to data that was durable: never cut, the shard is not opened
  };
  uint64_t base_offset = 0;
  uint64_t file_size = 0;
  uint64_t valid_end = 0;   // file position after the valid prefix
  uint64_t end_offset = 0;  // offset after the valid prefix
  int64_t first_arrival_ms = 0;
  int64_t last_arrival_ms = 0;
  std::vector<IndexEntry> entries;  // sparse index of the valid prefix
  bool write_start_seen = false;    // a frame carries kFrameFlagWriteStart (a current writer)
  // Runs of consecutive intact frames found after the damage, in file order.
  struct Run {
    uint64_t position = 0;      // file position of its first frame
    uint64_t end_position = 0;  // file position after its last frame
    uint64_t first_offset = 0;
    uint64_t end_offset = 0;  // offset after its last frame
  };
  std::vector<Run> intact_runs;
  // An intact frame after the damage starts a write: that write came after the damaged
  // one, which had therefore been synced and acknowledged.
  bool write_follows_damage = false;
  Kind kind = Kind::kClean;

  uint64_t intact_records() const;
  // A one-line description for logs and `icestream fsck`.
  std::string Describe() const;
};

class Segment {
 public:
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates a new, empty segment file with its header, fsyncs it and its folder.
  static Result<std::shared_ptr<Segment>> Create(const std::string& dir, uint64_t base_offset,
                                                 SegmentFileCache* cache);
  // Opens an existing sealed segment: loads its .idx, or rebuilds the index by scanning.
  // A sealed segment holds the offsets up to `next_base` (the next segment's first); one
  // whose scan stops short is damaged: it still opens, and reads stop at the damage with
  // an error (they never skip it).
  static Result<std::shared_ptr<Segment>> OpenSealed(const std::string& dir, uint64_t base_offset,
                                                     uint64_t next_base,
                                                     uint64_t index_interval_bytes,
                                                     SegmentFileCache* cache);
  // Opens the last segment for appending. A torn tail (SegmentScan::kTornTail) is cut and
  // reported in `truncated_bytes`; damage to durable records (kCorrupt) fails with
  // kCorruption and leaves the file untouched.
  static Result<std::shared_ptr<Segment>> OpenActive(const std::string& dir, uint64_t base_offset,
                                                     uint64_t index_interval_bytes,
                                                     SegmentFileCache* cache,
                                                     uint64_t* truncated_bytes);
  // Reads the segment file at `path` and classifies it, as OpenActive would (`active`) or
  // as a sealed segment (any damage is corruption). Changes nothing.
  static Result<SegmentScan> Examine(const std::string& path, uint64_t base_offset, bool active,
                                     uint64_t index_interval_bytes);

  static std::string FileName(uint64_t base_offset);       // 20-digit name + ".log"
  static std::string IndexFileName(uint64_t base_offset);  // 20-digit name + ".idx"

  // Writes the .idx file (atomically). Committer thread only.
  Status Seal();
  // Once the next segment exists: the segment's own descriptor is released and reads
  // borrow from the cache. Committer thread only.
  void CloseForWriting();
  // Appends `n` bytes at the end of the valid data (not yet durable). Committer only.
  Status WriteAt(const char* data, size_t n, uint64_t position);
  // fdatasync.
  Status Sync();
  // Cuts the file back to `position` (after a failed write) and syncs. Committer only.
  Status TruncateTo(uint64_t position);
  // Drops the page-cache pages of [0, position) — durable, clean bytes only. Cheap to call
  // often: does nothing until `position` has moved at least 4 MiB past the last drop,
  // unless `force`. Committer only.
  void DropCacheBelow(uint64_t position, bool force = false);
  // [0, this) was dropped from the page cache (DropCacheBelow): readers take it from the
  // disk around the cache. Any thread.
  uint64_t cache_dropped_below() const {
    return cache_dropped_below_.load(std::memory_order_relaxed);
  }
  // Deletes the files; readers holding a handle keep reading.
  void Unlink();
  // Forgets the cached descriptor (the shard's folder is being deleted).
  void ReleaseFiles();

  // A descriptor to read the file with: the active segment's own, or a cached one.
  // kNotFound when the file was deleted meanwhile.
  Result<std::shared_ptr<FileHandle>> ReadHandle() const;

  uint64_t base_offset() const { return base_offset_; }
  const std::string& path() const { return path_; }

  // Published state (what readers may see).
  uint64_t durable_bytes() const { return durable_bytes_.load(std::memory_order_acquire); }
  uint64_t end_offset() const { return end_offset_.load(std::memory_order_acquire); }
  int64_t last_arrival_ms() const { return last_arrival_ms_.load(std::memory_order_acquire); }
  int64_t first_arrival_ms() const { return first_arrival_ms_.load(std::memory_order_acquire); }
  bool empty() const { return end_offset() == base_offset_; }

  void Publish(uint64_t durable_bytes, uint64_t end_offset, int64_t first_arrival_ms,
               int64_t last_arrival_ms);

  // A sealed segment found damaged when it was opened: records from end_offset() on
  // (up to the next segment) cannot be read.
  bool damaged() const { return damaged_; }
  // True the first time it is called for this segment (reports damage once in the log).
  bool FirstDamageReport() const { return !damage_reported_.exchange(true); }

  // Sparse index; guarded by the owning ShardLog's segment lock.
  std::vector<IndexEntry>& entries() { return entries_; }
  const std::vector<IndexEntry>& entries() const { return entries_; }
  uint64_t last_indexed_position() const { return last_indexed_position_; }
  void set_last_indexed_position(uint64_t p) { last_indexed_position_ = p; }

 private:
  Segment(std::string dir, uint64_t base_offset, SegmentFileCache* cache,
          std::shared_ptr<FileHandle> write_handle);
  void AdoptScan(SegmentScan scan);

  std::string dir_;
  std::string path_;
  uint64_t base_offset_;
  SegmentFileCache* cache_;
  mutable std::mutex handle_mu_;
  std::shared_ptr<FileHandle> write_handle_;  // the active segment's; null once sealed
  std::vector<IndexEntry> entries_;
  uint64_t last_indexed_position_ = 0;
  std::atomic<uint64_t> cache_dropped_below_{0};  // written by the committer only
  bool damaged_ = false;
  mutable std::atomic<bool> damage_reported_{false};
  std::atomic<uint64_t> durable_bytes_{kSegmentHeaderSize};
  std::atomic<uint64_t> end_offset_;
  std::atomic<int64_t> first_arrival_ms_{0};
  std::atomic<int64_t> last_arrival_ms_{0};
};

}  // namespace icestream::log
