// Offline shard-log check and repair (see repair.h).
#include "log/repair.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "common/fs.h"
#include "log/format.h"
#include "log/segment.h"
#include "log/shard_dir.h"

namespace icestream::log {

namespace {

constexpr uint64_t kNoNext = std::numeric_limits<uint64_t>::max();

std::string Range(uint64_t from, uint64_t to) {  // [from, to)
  return to - from == 1 ? fmt::format("offset {}", from)
                        : fmt::format("offsets {}..{}", from, to - 1);
}

// True when `dir`/<base>.idx describes exactly what the scan found.
bool IndexMatches(const std::string& dir, const SegmentScan& scan) {
  auto bytes = fs::ReadFile(fs::Join(dir, Segment::IndexFileName(scan.base_offset)));
  if (!bytes.ok()) return false;
  auto idx = DecodeIndex(*bytes);
  return idx.ok() && idx->base_offset == scan.base_offset && idx->end_offset == scan.end_offset &&
         idx->valid_bytes == scan.valid_end;
}

Status WriteIndex(const std::string& dir, const SegmentScan& scan) {
  SegmentIndex idx{scan.base_offset, scan.end_offset, scan.valid_end, scan.last_arrival_ms,
                   scan.entries};
  return fs::WriteFileAtomic(fs::Join(dir, Segment::IndexFileName(scan.base_offset)),
                             EncodeIndex(idx));
}

// Truncates `path` to `size` and syncs it.
Status CutFile(const std::string& path, uint64_t size) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + path, errno);
  int rc = ::ftruncate(fd, static_cast<off_t>(size));
  if (rc == 0) rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError("cut " + path, err);
  return Status::OK();
}

// Copies the frames of `run` from `src` into a new segment file named by its first offset.
Status WriteRun(const std::string& dir, const std::string& src, const SegmentScan::Run& run) {
  int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + src, errno);
  std::string frames(run.end_position - run.position, '\0');
  auto got = fs::PReadFull(fd, frames.data(), frames.size(), run.position, src);
  ::close(fd);
  if (!got.ok()) return got.status();
  if (*got != frames.size()) return Corruption("segment " + src + " shrank during the repair");
  return fs::WriteFileAtomic(fs::Join(dir, Segment::FileName(run.first_offset)),
                             EncodeSegmentHeader(run.first_offset) + frames);
}

// Plans (and with `repair` carries out) the salvage of a damaged segment: keep the valid
// prefix, move each intact run below `next_base` into its own segment, drop the rest.
// Returns the base of the last segment written (the new active one when `active`).
Status Salvage(const std::string& dir, const SegmentScan& scan, uint64_t next_base, bool active,
               uint64_t index_interval_bytes, bool repair, ShardCheck* out) {
  std::string path = fs::Join(dir, Segment::FileName(scan.base_offset));
  std::vector<SegmentScan::Run> runs;
  for (const auto& r : scan.intact_runs) {
    if (r.first_offset >= next_base) break;
    SegmentScan::Run kept = r;
    if (kept.end_offset > next_base) continue;  // overlaps the next segment: not trusted
    if (!runs.empty() && kept.first_offset < runs.back().end_offset) continue;
    runs.push_back(kept);
  }
  out->actions.push_back(fmt::format(
      "{}: cut at file position {} (keeps {})", Segment::FileName(scan.base_offset), scan.valid_end,
      scan.end_offset > scan.base_offset ? Range(scan.base_offset, scan.end_offset)
                                         : std::string("no records")));
  uint64_t at = scan.end_offset;
  for (const auto& r : runs) {
    if (r.first_offset > at) {
      out->actions.push_back(fmt::format("drop {} ({} record(s): damaged)",
                                         Range(at, r.first_offset), r.first_offset - at));
      out->dropped_records += r.first_offset - at;
    }
    out->actions.push_back(fmt::format("move {} unchanged into new segment {}",
                                       Range(r.first_offset, r.end_offset),
                                       Segment::FileName(r.first_offset)));
    at = r.end_offset;
  }
  if (next_base != kNoNext && at < next_base) {
    out->actions.push_back(
        fmt::format("drop {} ({} record(s): damaged)", Range(at, next_base), next_base - at));
    out->dropped_records += next_base - at;
  } else if (next_base == kNoNext &&
             scan.file_size > (runs.empty() ? scan.valid_end : runs.back().end_position)) {
    out->actions.push_back(
        "drop the bytes after the last intact record (damaged or never acknowledged)");
  }
  if (!repair) return Status::OK();
  // New files first, the cut last: a crash in between leaves the damaged original, which
  // a second run of the repair handles the same way.
  for (const auto& r : runs) {
    RETURN_IF_ERROR(WriteRun(dir, path, r));
    bool last = active && &r == &runs.back();
    if (!last) {
      ASSIGN_OR_RETURN(SegmentScan moved,
                       Segment::Examine(fs::Join(dir, Segment::FileName(r.first_offset)),
                                        r.first_offset, false, index_interval_bytes));
      RETURN_IF_ERROR(WriteIndex(dir, moved));
    }
  }
  RETURN_IF_ERROR(CutFile(path, scan.valid_end));
  // The cut segment is sealed now unless it stays the last one.
  if (!active || !runs.empty()) {
    SegmentScan cut = scan;
    cut.file_size = scan.valid_end;
    RETURN_IF_ERROR(WriteIndex(dir, cut));
  }
  return Status::OK();
}

}  // namespace

Result<ShardCheck> CheckShardLog(const std::string& dir, bool repair,
                                 uint64_t index_interval_bytes) {
  ShardCheck out;
  ASSIGN_OR_RETURN(ShardDirListing listing, ListShardDir(dir));
  for (const auto& n : listing.temporary) {
    out.findings.push_back(n + ": a temporary file left by an interrupted write");
    out.actions.push_back("remove " + n);
    if (repair) RETURN_IF_ERROR(fs::RemoveFile(fs::Join(dir, n)));
  }
  // A stray file is not part of the log: it is named, and neither read nor counted (its
  // name would otherwise look like a segment far ahead, and every offset up to it like
  // lost records).
  for (const auto& [name, why] : listing.strays) {
    out.notes.push_back(name + ": stray file, not part of the log (" + why +
                        "); left alone: move it away if it is not needed");
  }
  std::vector<uint64_t> bases = std::move(listing.segments);
  for (size_t i = 0; i < bases.size(); ++i) {
    bool active = i + 1 == bases.size();
    uint64_t next = active ? kNoNext : bases[i + 1];
    std::string name = Segment::FileName(bases[i]);
    std::string path = fs::Join(dir, name);
    auto scanned = Segment::Examine(path, bases[i], active, index_interval_bytes);
    if (!scanned.ok()) {
      out.findings.push_back(name + ": " + scanned.status().message());
      out.actions.push_back(name +
                            ": nothing (the operator must move this file away to accept its loss)");
      out.repairable = false;
      continue;
    }
    const SegmentScan& scan = *scanned;
    // A gap to the next segment that an index vouches for was left by an earlier repair.
    bool short_of_next = !active && scan.end_offset < next && !IndexMatches(dir, scan);
    if (scan.kind == SegmentScan::Kind::kTornTail) {
      out.findings.push_back(name + ": " + scan.Describe());
      out.actions.push_back(
          fmt::format("{}: cut the torn tail at file position {}", name, scan.valid_end));
      if (repair) RETURN_IF_ERROR(CutFile(path, scan.valid_end));
    } else if (scan.kind == SegmentScan::Kind::kCorrupt || short_of_next) {
      out.findings.push_back(
          name + ": " +
          (scan.kind == SegmentScan::Kind::kCorrupt
               ? scan.Describe()
               : fmt::format("ends at offset {}, but the next segment starts at {}",
                             scan.end_offset, next)));
      RETURN_IF_ERROR(Salvage(dir, scan, next, active, index_interval_bytes, repair, &out));
    } else if (!active && !IndexMatches(dir, scan)) {
      out.findings.push_back(name + ": its index file is missing or does not match the segment");
      out.actions.push_back(name + ": rebuild the index");
      if (repair) RETURN_IF_ERROR(WriteIndex(dir, scan));
    }
  }
  return out;
}

}  // namespace icestream::log
