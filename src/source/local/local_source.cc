// The local record source over the shard logs.
#include "source/local/local_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

#include "stream/model.h"
#include "stream/sequence_number.h"

namespace icestream::source {

using delivery::Position;

namespace {

Position PositionBefore(uint64_t uid, uint32_t shard, uint64_t next_offset) {
  if (next_offset == 0) return Position{};
  return Position{stream::SequenceNumber::ForRecord(uid, shard, next_offset - 1).ToString(),
                  std::nullopt};
}

// The chunk's storage: the log's read buffers and the records' sequence numbers.
struct ChunkStorage {
  std::vector<std::shared_ptr<char[]>> buffers;
  std::string sequences;
};

class LocalRangeReader final : public delivery::RangeReader {
 public:
  LocalRangeReader(std::shared_ptr<log::ShardLog> log, uint64_t uid, uint32_t shard,
                   std::string shard_id, uint64_t next, uint64_t end, size_t chunk_bytes,
                   size_t chunk_records)
      : log_(std::move(log)),
        uid_(uid),
        shard_(shard),
        shard_id_(std::move(shard_id)),
        next_(next),
        end_(end),
        chunk_bytes_(chunk_bytes),
        chunk_records_(chunk_records) {}

  ~LocalRangeReader() override { StopAhead(); }

  Result<bool> Next(delivery::StreamChunk* chunk) override {
    while (next_ < end_) {
      ASSIGN_OR_RETURN(log::ViewResult read, Read(next_));
      // More of the range follows: read it while this chunk is converted.
      if (read.next_offset < end_ && !read.records.empty()) ReadAhead(read.next_offset);
      if (read.records.empty()) {
        spdlog::warn("{}: records {} to {} are gone (retention) and cannot be delivered", shard_id_,
                     next_, end_ - 1);
        next_ = end_;
        break;
      }
      if (read.records.front().offset != next_) {
        spdlog::warn("{}: records {} to {} are gone (retention) and cannot be delivered", shard_id_,
                     next_, read.records.front().offset - 1);
      }
      next_ = read.next_offset;
      auto storage = std::make_shared<ChunkStorage>();
      storage->buffers = std::move(read.buffers);
      storage->sequences.reserve(read.records.size() * stream::kSequenceNumberDigits);
      stream::ShardSequenceWriter sequences(uid_, shard_);
      for (const auto& r : read.records) sequences.AppendRecord(r.offset, &storage->sequences);
      chunk->records.clear();
      chunk->records.reserve(read.records.size());
      const char* seq = storage->sequences.data();
      for (const auto& r : read.records) {
        chunk->records.push_back({std::string_view(seq, stream::kSequenceNumberDigits), r.offset,
                                  r.arrival_ms, r.partition_key, r.data});
        seq += stream::kSequenceNumberDigits;
      }
      chunk->storage = std::move(storage);
      chunk->padding = log::kViewPadding;
      return true;
    }
    return false;
  }

 private:
  // The chunk at `from`, where the last one ended: from the reader thread, which reads on
  // from there, while it has one; here once it stopped (after a failure it reported).
  Result<log::ViewResult> Read(uint64_t from) {
    if (ahead_thread_.joinable()) {
      std::unique_lock lock(ahead_mu_);
      ahead_cv_.wait(lock, [&] { return !ahead_.empty() || ahead_done_; });
      if (!ahead_.empty()) {
        Result<log::ViewResult> r = std::move(ahead_.front());
        ahead_.pop_front();
        ahead_cv_.notify_all();
        return r;
      }
      lock.unlock();
      StopAhead();
    }
    return log_->ReadViews(from, chunk_records_, chunk_bytes_, end_);
  }

  // Reads the chunks from `from` on a thread of its own, up to kReadAhead of them ahead of
  // the converters. A backlog's chunks come from the disk (O_DIRECT below the log's cache
  // window) and a block takes several chunks at once: with one chunk read ahead, the
  // converters waited for the disk at nearly every block.
  void ReadAhead(uint64_t from) {
    if (ahead_thread_.joinable()) return;
    ahead_done_ = false;
    ahead_stop_ = false;
    try {
      ahead_thread_ = std::thread([this, from] {
        uint64_t at = from;
        for (;;) {
          {
            std::unique_lock lock(ahead_mu_);
            ahead_cv_.wait(lock, [&] { return ahead_stop_ || ahead_.size() < kReadAhead; });
            if (ahead_stop_) break;
          }
          Result<log::ViewResult> r = log_->ReadViews(at, chunk_records_, chunk_bytes_, end_);
          const bool last = !r.ok() || r->records.empty() || r->next_offset >= end_;
          if (r.ok()) at = r->next_offset;
          std::lock_guard lock(ahead_mu_);
          ahead_.push_back(std::move(r));
          ahead_cv_.notify_all();
          if (last) break;
        }
        std::lock_guard lock(ahead_mu_);
        ahead_done_ = true;
        ahead_cv_.notify_all();
      });
    } catch (const std::system_error&) {
      // No thread to spare: the next chunks are read when asked for.
    }
  }

  void StopAhead() {
    if (!ahead_thread_.joinable()) return;
    {
      std::lock_guard lock(ahead_mu_);
      ahead_stop_ = true;
      ahead_cv_.notify_all();
    }
    ahead_thread_.join();
    ahead_.clear();
  }

  static constexpr size_t kReadAhead = 3;

  std::shared_ptr<log::ShardLog> log_;
  const uint64_t uid_;
  const uint32_t shard_;
  const std::string shard_id_;
  uint64_t next_;
  const uint64_t end_;
  const size_t chunk_bytes_;
  const size_t chunk_records_;
  // The reader thread's chunks, in order; the first starts at next_.
  std::mutex ahead_mu_;
  std::condition_variable ahead_cv_;
  std::deque<Result<log::ViewResult>> ahead_;
  bool ahead_done_ = false;  // the thread read its last chunk (the range's end, or a failure)
  bool ahead_stop_ = false;
  std::thread ahead_thread_;  // last: started after the members it uses
};

class LocalShardSource final : public delivery::ShardSource {
 public:
  LocalShardSource(stream::StreamManager* streams, std::string stream_name, uint64_t uid)
      : streams_(streams), stream_name_(std::move(stream_name)), uid_(uid) {}

  uint64_t LocalStreamUid() const override { return uid_; }

  Result<std::vector<delivery::SourceShard>> Shards() override {
    ASSIGN_OR_RETURN(stream::StreamInfo info, Info(/*refresh=*/true));
    std::vector<delivery::SourceShard> out;
    for (const auto& s : info.shards) {
      delivery::SourceShard d;
      d.id = stream::ShardIdString(s.index);
      for (auto p : {s.parent, s.adjacent_parent}) {
        if (p) d.parents.push_back(stream::ShardIdString(*p));
      }
      d.closed = s.end_offset.has_value();
      out.push_back(std::move(d));
    }
    return out;
  }

  Result<Position> StartPosition(const std::string& shard,
                                 const delivery::StartingPosition& start) override {
    ASSIGN_OR_RETURN(Shard s, Open(shard));
    uint64_t at = s.end;
    if (start.type == "TRIM_HORIZON") {
      at = s.log->start_offset();
    } else if (start.type == "AT_TIMESTAMP") {
      auto o = s.log->OffsetAtTime(start.timestamp_ms);
      at = o.ok() ? std::min(*o, s.end) : s.end;
    }
    return PositionBefore(uid_, s.index, at);
  }

  Result<delivery::ShardBacklog> Backlog(const std::string& shard, const Position& after) override {
    ASSIGN_OR_RETURN(Shard s, Open(shard));
    ASSIGN_OR_RETURN(uint64_t next, NextOffset(s, after));
    delivery::ShardBacklog b;
    uint64_t start = s.log->start_offset();
    if (next < start) {
      b.trimmed_to = PositionBefore(uid_, s.index, start);
      b.trimmed_records = start - next;
      return b;
    }
    if (s.end > next) {
      b.records = s.end - next;
      b.bytes = s.log->ApproximateBytes(next, s.end);
      auto a = s.log->ArrivalOf(next);
      if (a.ok()) b.oldest_arrival_ms = *a;
    }
    b.finished = s.closed && next >= s.end && !after.sub_sequence;
    return b;
  }

  Result<delivery::PlannedRange> PlanRange(const std::string& shard, const Position& after,
                                           uint64_t max_bytes, size_t max_records) override {
    ASSIGN_OR_RETURN(Shard s, Open(shard));
    ASSIGN_OR_RETURN(uint64_t first, NextOffset(s, after));
    first = std::max(first, s.log->start_offset());
    if (first >= s.end) return FailedPrecondition(shard + " has no record to deliver");
    uint64_t hi = std::min<uint64_t>(s.end, first + std::max<size_t>(1, max_records));
    if (s.log->ApproximateBytes(first, hi) > max_bytes) {
      // The largest end within the byte budget (at least one record).
      uint64_t lo = first + 1;
      while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (s.log->ApproximateBytes(first, mid) <= max_bytes) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      hi = lo;
    }
    delivery::PlannedRange r;
    r.after = after;
    r.last_sequence = stream::SequenceNumber::ForRecord(uid_, s.index, hi - 1).ToString();
    r.records = hi - first;
    r.bytes = s.log->ApproximateBytes(first, hi);
    return r;
  }

  Result<std::unique_ptr<delivery::RangeReader>> OpenRange(const std::string& shard,
                                                           const Position& after,
                                                           const std::string& last_sequence,
                                                           size_t chunk_bytes,
                                                           size_t chunk_records) override {
    ASSIGN_OR_RETURN(Shard s, Open(shard));
    ASSIGN_OR_RETURN(uint64_t first, NextOffset(s, after));
    auto last = stream::SequenceNumber::Parse(last_sequence);
    if (!last || last->stream_uid != uid_ || last->shard_index != s.index || last->position == 0) {
      return InvalidArgument(
          fmt::format("{} is not a sequence number of {}", last_sequence, shard));
    }
    return std::unique_ptr<delivery::RangeReader>(new LocalRangeReader(
        s.log, uid_, s.index, shard, first, last->position, chunk_bytes, chunk_records));
  }

  Result<delivery::StreamChunk> ReadRecord(const std::string& shard,
                                           const std::string& sequence) override {
    ASSIGN_OR_RETURN(Shard s, Open(shard));
    auto seq = stream::SequenceNumber::Parse(sequence);
    if (!seq || seq->stream_uid != uid_ || seq->shard_index != s.index || seq->position == 0) {
      return NotFound(
          fmt::format("{} is not a sequence number of {} of this stream", sequence, shard));
    }
    const uint64_t offset = seq->position - 1;
    if (offset < s.log->start_offset()) {
      return NotFound(
          fmt::format("record {} of {} is past the stream's retention", sequence, shard));
    }
    if (offset >= s.end) return NotFound(fmt::format("{} holds no record {}", shard, sequence));
    // One record: the byte budget only has to let it through.
    LocalRangeReader reader(s.log, uid_, s.index, shard, offset, offset + 1, 64u << 20, 1);
    delivery::StreamChunk chunk;
    ASSIGN_OR_RETURN(bool got, reader.Next(&chunk));
    if (!got || chunk.records.size() != 1 || chunk.records[0].ordinal != offset) {
      return NotFound(
          fmt::format("record {} of {} is past the stream's retention", sequence, shard));
    }
    return chunk;
  }

 private:
  struct Shard {
    uint32_t index = 0;
    std::shared_ptr<log::ShardLog> log;
    uint64_t end = 0;  // committed end, within the shard's end offset
    bool closed = false;
  };

  // The stream's description: fetched by Shards() (once per scheduling pass), reused by
  // the per-shard calls that follow it. A shard closed meanwhile is seen by the next pass
  // (a closed shard's committed end is its end already: resharding drains it first).
  Result<stream::StreamInfo> Info(bool refresh = false) {
    {
      std::lock_guard lock(mu_);
      if (!refresh && cached_) return *cached_;
    }
    auto info = streams_->Describe(stream_name_);
    if (!info.ok() || info->uid != uid_) {
      if (info.ok() || info.status().code() == StatusCode::kNotFound) {
        return NotFound("The source stream no longer exists.");
      }
      return info.status();
    }
    std::lock_guard lock(mu_);
    cached_ = *info;
    return info;
  }

  Result<Shard> Open(const std::string& shard) {
    auto index = stream::ParseShardId(shard);
    if (!index) return InvalidArgument(shard + " is not a shard id");
    Shard s;
    s.index = *index;
    ASSIGN_OR_RETURN(s.log, streams_->ShardLogFor(uid_, *index));
    s.end = s.log->committed_end();
    ASSIGN_OR_RETURN(stream::StreamInfo info, Info());
    if (const stream::ShardInfo* si = info.FindShard(*index); si && si->end_offset) {
      s.end = std::min(s.end, *si->end_offset);
      s.closed = true;
    }
    return s;
  }

  // The first offset after `after` (the aggregate itself when only part of it is done).
  Result<uint64_t> NextOffset(const Shard& s, const Position& after) {
    if (after.at_start()) return uint64_t{0};
    if (auto t = after.timestamp_ms()) {
      // A start set by a worker that reads through the API: the first record at or after
      // the time.
      auto o = s.log->OffsetAtTime(*t);
      return o.ok() ? std::min(*o, s.end) : s.end;
    }
    auto seq = stream::SequenceNumber::Parse(after.sequence);
    if (!seq || seq->stream_uid != uid_ || seq->shard_index != s.index || seq->position == 0) {
      return InvalidArgument(fmt::format("{} is not a sequence number of {}", after.sequence,
                                         stream::ShardIdString(s.index)));
    }
    return after.sub_sequence ? seq->position - 1 : seq->position;
  }

  stream::StreamManager* streams_;
  const std::string stream_name_;
  const uint64_t uid_;
  std::mutex mu_;
  std::optional<stream::StreamInfo> cached_;
};

}  // namespace

Result<delivery::SourceStream> LocalSourceProvider::DescribeStream(const std::string& name) {
  ASSIGN_OR_RETURN(stream::StreamInfo info, streams_->Describe(name));
  delivery::SourceStream s;
  s.name = info.name;
  s.arn = info.arn;
  s.uid = info.uid;
  s.created_ms = info.created_ms;
  s.on_demand = info.mode == stream::StreamMode::kOnDemand;
  s.encryption_type = info.encryption_type;
  s.key_id = info.key_id;
  return s;
}

Result<std::shared_ptr<delivery::ShardSource>> LocalSourceProvider::OpenSource(
    const delivery::ChannelConfig& channel) {
  uint64_t uid = channel.stream_uid;
  if (uid == 0) {
    // Created through the Kinesis API (`icestream channels create --pg`): the channel names
    // its stream by ARN and creation time only. When that is a stream of this server, it is
    // read from the logs here (the sequence numbers are the ones the API gave); otherwise
    // it is another endpoint's stream, for the pool's workers that read that endpoint.
    auto info = streams_->Describe(channel.stream_name);
    if (!info.ok() && info.status().code() != StatusCode::kNotFound) return info.status();
    if (!info.ok() || !delivery::ReadsStream(channel, info->arn, info->created_ms)) {
      return WithSubcode(
          FailedPrecondition(fmt::format("stream {} is not a stream of this server; the pool's "
                                         "workers that read its endpoint deliver it",
                                         channel.stream_arn)),
          delivery::SourceError::kNotThisSource);
    }
    uid = info->uid;
  }
  return std::shared_ptr<delivery::ShardSource>(
      new LocalShardSource(streams_, channel.stream_name, uid));
}

uint64_t LocalSourceProvider::RetentionFloor(const std::optional<Position>& needed) {
  if (!needed) return UINT64_MAX;
  if (needed->at_start()) return 0;
  auto seq = stream::SequenceNumber::Parse(needed->sequence);
  if (!seq) return 0;  // cannot tell: keep everything
  return needed->sub_sequence ? seq->position - 1 : seq->position;
}

Position LegacyPosition(uint64_t stream_uid, uint32_t shard_index, uint64_t next_offset) {
  return PositionBefore(stream_uid, shard_index, next_offset);
}

}  // namespace icestream::source
