// Reading Kinesis shards through the API.
#include "source/kinesis/kinesis_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "aws/cbor.h"
#include "common/base64.h"
#include "common/clock.h"
#include "source/kinesis/records_page.h"
#include "stream/sequence_number.h"

namespace icestream::source {

using delivery::Position;
using nlohmann::json;

bool PaceReadsFor(const std::string& url) {
  std::string_view u = url;
  size_t scheme = u.find("://");
  if (scheme != std::string_view::npos) u.remove_prefix(scheme + 3);
  u = u.substr(0, u.find_first_of("/:"));
  auto ends = [&](std::string_view suffix) {
    return u.size() >= suffix.size() && u.substr(u.size() - suffix.size()) == suffix;
  };
  return ends(".amazonaws.com") || ends(".amazonaws.com.cn");
}

namespace {

int64_t NowMs() { return SystemClock::Default()->NowMillis(); }

}  // namespace

// The Kinesis API as the source uses it: JSON 1.1 calls, and GetRecords in CBOR where the
// endpoint speaks it (icestream, kinesalite and AWS do; moto answers CBOR with a 500). CBOR
// carries the records' data as raw bytes, which spares the endpoint the base64 encoding
// and this side the decoding and a copy (the answer's body is the records' storage).
//
// Which one an endpoint speaks is learned from its first answers: a CBOR answer (success
// or error) settles CBOR; an answer that is neither CBOR nor one of Kinesis's own errors
// is retried in JSON, and a JSON call that then succeeds settles JSON for the endpoint.
// Thread-safety: as AwsJsonClient.
class KinesisApi {
 public:
  KinesisApi(std::unique_ptr<AwsJsonClient> client, bool try_cbor)
      : client_(std::move(client)), wire_(try_cbor ? kTryCbor : kJson) {}

  Result<json> Call(const std::string& operation, const json& body,
                    std::string* error_type = nullptr) {
    return client_->Call(operation, body, error_type);
  }

  Result<RecordsPage> GetRecords(const std::string& iterator, int limit) {
    int wire = wire_.load(std::memory_order_relaxed);
    if (wire != kJson) {
      std::string payload;
      aws::CborAppendHead(&payload, 5, 2);
      aws::CborAppendText(&payload, "ShardIterator");
      aws::CborAppendText(&payload, iterator);
      aws::CborAppendText(&payload, "Limit");
      aws::CborAppendInt(&payload, limit);
      ASSIGN_OR_RETURN(auto resp, client_->Post("GetRecords", aws::kCborContentType, payload));
      const bool cbor = IsCborAnswer(resp);
      if (cbor && Settle(kCbor)) {
        spdlog::info("kinesis source: {} answers GetRecords in CBOR", client_->endpoint().url);
      }
      if (resp.status == 200 && cbor) {
        auto page = CborPage(std::move(resp.body));
        if (page.ok()) return page;
        // An answer that cannot be read is not a reason to stop reading: kinesalite 3.3.3
        // cuts its CBOR answers at 16 KiB (its encoder's stream buffer), so a large
        // GetRecords answer is truncated. The iterator was not used up by an answer never
        // read: ask again in JSON, and stay with JSON for this endpoint.
        if (wire_.exchange(kJson) != kJson) {
          spdlog::warn(
              "kinesis source: {} sent a CBOR GetRecords answer that cannot be read ({}); "
              "reading in JSON from now on",
              client_->endpoint().url, page.status().message());
        }
        ASSIGN_OR_RETURN(auto j, client_->Call("GetRecords", json{{"ShardIterator", iterator},
                                                                  {"Limit", limit}}));
        return JsonPage(j);
      }
      if (resp.status == 200) {
        // An endpoint that answers JSON whatever it is asked (the answer is still good).
        auto j = json::parse(resp.body, nullptr, false);
        if (!j.is_discarded() && j.is_object()) {
          Settle(kJson);
          return JsonPage(j);
        }
        if (wire == kCbor) return Unavailable("GetRecords: the answer is neither CBOR nor JSON");
      } else {
        std::string type;
        Status st = AwsJsonClient::ErrorOf("GetRecords", resp, &type);
        if (cbor || wire == kCbor || !Unspoken(resp.status, type)) return st;
      }
      // Not (yet) known to speak CBOR, and this answer says nothing about the records:
      // ask again in JSON.
      ASSIGN_OR_RETURN(
          auto j, client_->Call("GetRecords", json{{"ShardIterator", iterator}, {"Limit", limit}}));
      if (Settle(kJson)) {
        spdlog::info(
            "kinesis source: {} does not answer GetRecords in CBOR (HTTP {}); reading in JSON",
            client_->endpoint().url, resp.status);
      }
      return JsonPage(j);
    }
    ASSIGN_OR_RETURN(
        auto j, client_->Call("GetRecords", json{{"ShardIterator", iterator}, {"Limit", limit}}));
    return JsonPage(j);
  }

  const AwsJsonClient& client() const { return *client_; }

  // Whether ListShards may carry a ShardFilter: until the endpoint refuses one (AWS and
  // icestream honour it; kinesalite 3.3.3 and moto ignore it, which is harmless).
  bool shard_filter() const { return shard_filter_.load(std::memory_order_relaxed); }
  void RefuseShardFilter(const Status& why) {
    if (shard_filter_.exchange(false)) {
      spdlog::info("kinesis source: {} refuses ListShards' ShardFilter ({}); listing without it",
                   client_->endpoint().url, why.message());
    }
  }

 private:
  enum : int { kTryCbor, kCbor, kJson };

  // Whether an error answer to a CBOR request may mean the endpoint does not speak CBOR:
  // AWS's answers to a content type it does not know (404 UnknownOperationException), a
  // body it cannot read (SerializationException), unsupported media, and servers that
  // fail on it (moto's 500). Kinesis's own errors (throttling, expired iterator, …) in
  // JSON are real answers.
  static bool Unspoken(int status, const std::string& type) {
    return status == 404 || status == 415 || status >= 500 || type == "UnknownOperationException" ||
           type == "SerializationException" || type.empty();
  }

  // Settles the wire once (kTryCbor → kCbor or kJson); true when this call settled it.
  bool Settle(int wire) {
    int expected = kTryCbor;
    return wire_.compare_exchange_strong(expected, wire);
  }

  std::unique_ptr<AwsJsonClient> client_;
  std::atomic<int> wire_;
  std::atomic<bool> shard_filter_{true};
};

namespace {

// GetShardIterator from a position.
json IteratorRequest(const std::string& stream, const std::string& shard, const Position& after) {
  json req = {{"StreamName", stream}, {"ShardId", shard}};
  if (after.at_start()) {
    req["ShardIteratorType"] = "TRIM_HORIZON";
  } else if (auto t = after.timestamp_ms()) {
    req["ShardIteratorType"] = "AT_TIMESTAMP";
    req["Timestamp"] = static_cast<double>(*t) / 1000.0;
  } else if (after.sub_sequence) {
    req["ShardIteratorType"] = "AT_SEQUENCE_NUMBER";
    req["StartingSequenceNumber"] = after.sequence;
  } else {
    req["ShardIteratorType"] = "AFTER_SEQUENCE_NUMBER";
    req["StartingSequenceNumber"] = after.sequence;
  }
  return req;
}

// A GetRecords answer of an iterator that outlived its life (ExpiredIteratorException):
// not a failure, a new iterator is due.
bool Expired(const Status& st) {
  return st.code() == StatusCode::kFailedPrecondition &&
         st.message().find("ExpiredIteratorException") != std::string::npos;
}

// What a read costs of the shard's 2 MiB/s: the records' data and partition keys (as AWS
// and `serve --aws-strict` count it).
size_t ReadBytes(const Answer& a) {
  size_t n = 0;
  for (const auto& r : a.records) n += r.data.size() + r.partition_key.size();
  return n;
}

// One paced call: waits for the shard's turn (false: cancelled), runs `call`, releases.
template <typename Fn>
auto Paced(ShardPacer& pacer, ShardPacer::Call kind, const std::atomic<bool>* cancel, Fn&& call)
    -> std::optional<decltype(call())> {
  if (!pacer.Acquire(kind, cancel)) return std::nullopt;
  auto r = call();
  size_t bytes = 0;
  if constexpr (std::is_same_v<decltype(r), Result<RecordsPage>>) {
    if (r.ok() && r->answer) bytes = ReadBytes(*r->answer);
  }
  pacer.Release(kind, bytes, !r.ok() && r.status().code() == StatusCode::kThrottled);
  return r;
}

// Whether a record lies after a position (a time position: arrived at or after it; a
// position inside an aggregate: the aggregate itself is still due).
bool After(const delivery::StreamRecord& r, const Position& p) {
  if (p.at_start()) return true;
  if (auto t = p.timestamp_ms()) return r.arrival_ms >= *t;
  int c = delivery::CompareSequenceNumbers(r.sequence_number, p.sequence);
  return c > 0 || (c == 0 && p.sub_sequence.has_value());
}

class KinesisShardSource;

// One shard's reader: a thread that keeps a buffer of what follows `start_`.
class ShardReader {
 public:
  ShardReader(std::shared_ptr<KinesisApi> client, const KinesisSourceOptions& options,
              std::shared_ptr<std::atomic<uint64_t>> buffered_total, std::string stream,
              std::string shard, std::shared_ptr<ShardPacer> pacer)
      : client_(std::move(client)),
        options_(options),
        total_(std::move(buffered_total)),
        stream_(std::move(stream)),
        shard_(std::move(shard)),
        pacer_(std::move(pacer)) {}
  ~ShardReader() {
    Stop();
    total_->fetch_sub(bytes_);
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cancel_.store(true);  // a wait for the shard's pacer ends too
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // The engine stands at `after`: the buffer drops what is before it, or starts over
  // when `after` is not where the buffer is. Starts the thread on first use.
  void Sync(const Position& after) {
    std::lock_guard lock(mu_);
    last_interest_ms_ = NowMs();
    if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { Loop(); });
    if (start_ == after) return;
    // Records up to `after` are delivered: drop them, if `after` is one of them.
    bool inside = false;
    if (!after.at_start() && !after.timestamp_ms()) {
      for (const auto& a : buffer_) {
        for (const auto& r : a->records) {
          if (r.sequence_number == std::string_view(after.sequence)) inside = true;
        }
      }
    }
    if (inside && !after.sub_sequence) {
      while (!buffer_.empty()) {
        auto& front = buffer_.front();
        auto& recs = front->records;
        size_t keep = 0;
        while (keep < recs.size() && !After(recs[keep], after)) ++keep;
        if (keep == recs.size()) {
          Hold(-static_cast<int64_t>(front->data_bytes));
          count_ -= recs.size();
          buffer_.pop_front();
          continue;
        }
        if (keep > 0) {
          // Readers that took chunks of this answer hold their own copies of the views;
          // the bytes stay as they are.
          for (size_t i = 0; i < keep; ++i) {
            Hold(-static_cast<int64_t>(recs[i].data.size()));
            front->data_bytes -= recs[i].data.size();
          }
          count_ -= keep;
          recs.erase(recs.begin(), recs.begin() + static_cast<ptrdiff_t>(keep));
        }
        break;
      }
      start_ = after;
      return;
    }
    // Somewhere else: start over from there.
    ++restarts_;
    buffer_.clear();
    Hold(-static_cast<int64_t>(bytes_));
    count_ = 0;
    iterator_.clear();
    ended_ = false;
    start_ = after;
    next_poll_ms_ = 0;
    cv_.notify_all();
  }

  delivery::ShardBacklog Backlog(bool closed) {
    std::lock_guard lock(mu_);
    delivery::ShardBacklog b;
    b.records = count_;
    b.bytes = bytes_;
    if (!buffer_.empty() && !buffer_.front()->records.empty()) {
      b.oldest_arrival_ms = buffer_.front()->records.front().arrival_ms;
    }
    b.finished = closed && ended_ && count_ == 0 && !start_.sub_sequence;
    return b;
  }

  Result<delivery::PlannedRange> Plan(const Position& after, uint64_t max_bytes,
                                      size_t max_records) {
    std::lock_guard lock(mu_);
    if (!(start_ == after) || count_ == 0) {
      return FailedPrecondition(shard_ + " has no record read yet after " +
                                delivery::PositionText(after));
    }
    delivery::PlannedRange r;
    r.after = after;
    for (const auto& a : buffer_) {
      for (const auto& rec : a->records) {
        if (r.records > 0 && (r.records >= max_records || r.bytes + rec.data.size() > max_bytes)) {
          return r;
        }
        r.last_sequence = std::string(rec.sequence_number);
        ++r.records;
        r.bytes += rec.data.size();
      }
    }
    return r;
  }

  // The buffered records from `after` to `last`, when the buffer holds all of them.
  std::optional<std::vector<delivery::StreamChunk>> Take(const Position& after,
                                                         const std::string& last) {
    std::lock_guard lock(mu_);
    if (!(start_ == after)) return std::nullopt;
    std::vector<delivery::StreamChunk> out;
    for (const auto& a : buffer_) {
      delivery::StreamChunk c;
      c.storage = a;
      for (const auto& rec : a->records) {
        c.records.push_back(rec);
        if (rec.sequence_number == std::string_view(last)) {
          out.push_back(std::move(c));
          return out;
        }
      }
      out.push_back(std::move(c));
    }
    return std::nullopt;  // `last` is not (or no longer) buffered
  }

  bool idle(int64_t now) const {
    std::lock_guard lock(mu_);
    return now - last_interest_ms_ > options_.idle_reader_ms;
  }
  Status last_error() const {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  // Buffered bytes change by `delta` (mu_ held): this shard's and the provider's total.
  void Hold(int64_t delta) {
    bytes_ = static_cast<uint64_t>(static_cast<int64_t>(bytes_) + delta);
    total_->fetch_add(static_cast<uint64_t>(delta));
  }
  // Whether the buffer takes no more now (mu_ held).
  bool Full() const {
    if (bytes_ >= options_.max_buffered_bytes_per_shard) return true;
    return bytes_ >= options_.reserved_bytes_per_shard &&
           total_->load() >= options_.max_buffered_bytes_total;
  }

  void Loop() {
    std::unique_lock lock(mu_);
    int failures = 0;
    while (!stopping_) {
      int64_t now = NowMs();
      bool full = Full();
      if (ended_ || full || now < next_poll_ms_) {
        int64_t wait = ended_ || full ? 200 : std::max<int64_t>(1, next_poll_ms_ - now);
        cv_.wait_for(lock, std::chrono::milliseconds(wait));
        continue;
      }
      // The position to read from: after the last buffered record, else the start.
      Position from = start_;
      if (!buffer_.empty() && !buffer_.back()->records.empty()) {
        from = Position{std::string(buffer_.back()->records.back().sequence_number), std::nullopt};
      }
      std::string iterator = iterator_;
      const uint64_t restarts_then = restarts_;
      lock.unlock();
      Status st;
      std::string next;
      bool end = false;
      bool expired = false;
      int64_t behind = 0;
      std::shared_ptr<Answer> answer;
      const bool fresh = iterator.empty();  // taken in this round (cannot have aged)
      if (iterator.empty()) {
        auto it = Paced(*pacer_, ShardPacer::Call::kGetShardIterator, &cancel_, [&] {
          return client_->Call("GetShardIterator", IteratorRequest(stream_, shard_, from));
        });
        if (!it) {
          lock.lock();
          continue;  // stopping
        }
        if (it->ok()) {
          iterator = (*it)->value("ShardIterator", "");
        } else {
          st = it->status();
        }
      }
      if (st.ok() && !iterator.empty()) {
        auto r = Paced(*pacer_, ShardPacer::Call::kGetRecords, &cancel_,
                       [&] { return client_->GetRecords(iterator, options_.get_records_limit); });
        if (!r) {
          lock.lock();
          continue;  // stopping
        }
        if (!r->ok()) {
          st = r->status();
          // An iterator just taken that is already expired is the endpoint's trouble (a
          // clock, a TTL shorter than a call): a failure, backed off, not a renewal loop.
          expired = Expired(st) && !fresh;
          if (st.code() == StatusCode::kFailedPrecondition) iterator.clear();
        } else {
          answer = std::move((*r)->answer);
          end = (*r)->end;
          next = std::move((*r)->next);
          behind = (*r)->behind_ms;
        }
      }
      lock.lock();
      // The engine moved elsewhere meanwhile: the answer is of no use. (An engine that
      // only went on within the buffer — a batch delivered — keeps it: it continues the
      // buffer. Dropping it then read every page twice whenever a batch ended during a
      // call, which a backlog's reads nearly always do.)
      if (restarts_ != restarts_then) continue;
      now = NowMs();
      if (expired) {
        // Paused (a stopped process, a long GC, a busy machine) longer than the iterator
        // lives (AWS: 5 minutes): nothing is wrong, a new one from the last record read.
        spdlog::info("kinesis source: the iterator of {} of {} expired; a new one from {}", shard_,
                     stream_, delivery::PositionText(from));
        iterator_.clear();
        next_poll_ms_ = now;
        continue;
      }
      if (!st.ok()) {
        error_ = st;
        ++failures;
        iterator_ = iterator;
        int64_t backoff = std::min<int64_t>(30000, 500LL << std::min(failures, 6));
        if (st.code() == StatusCode::kThrottled) backoff = std::max<int64_t>(backoff, 1000);
        next_poll_ms_ = now + backoff;
        if (failures == 1 || failures % 20 == 0) {
          spdlog::warn("kinesis source: {} of {}: {} (retrying)", shard_, stream_, st.ToString());
        }
        continue;
      }
      failures = 0;
      error_ = Status::OK();
      if (answer && !answer->records.empty()) {
        // Drop anything at or before where the buffer stands (an AT_SEQUENCE iterator's
        // first record, a time start's earlier ones do not occur: AT_TIMESTAMP starts there).
        auto& recs = answer->records;
        recs.erase(std::remove_if(recs.begin(), recs.end(),
                                  [&](const delivery::StreamRecord& r) { return !After(r, from); }),
                   recs.end());
        // What the answer holds now (Sync subtracts it when the answer goes).
        answer->data_bytes = 0;
        for (const auto& r : recs) answer->data_bytes += r.data.size();
        Hold(static_cast<int64_t>(answer->data_bytes));
        count_ += recs.size();
        if (!recs.empty()) buffer_.push_back(std::move(answer));
      }
      iterator_ = end ? std::string() : next;
      ended_ = end;
      // Behind: the next call as soon as the shard's pacer allows (its calls a second, its
      // bytes a second with pace_reads); caught up: the next look after the poll interval.
      next_poll_ms_ = behind > 0 ? now : now + options_.poll_interval_ms;
    }
  }

  std::shared_ptr<KinesisApi> client_;
  const KinesisSourceOptions& options_;
  const std::shared_ptr<std::atomic<uint64_t>> total_;
  const std::string stream_;
  const std::string shard_;
  const std::shared_ptr<ShardPacer> pacer_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};
  Position start_{"<unset>", std::nullopt};
  uint64_t restarts_ = 0;  // times the buffer started over somewhere else (Sync)
  std::deque<std::shared_ptr<Answer>> buffer_;
  uint64_t bytes_ = 0;
  uint64_t count_ = 0;
  std::string iterator_;
  bool ended_ = false;
  int64_t next_poll_ms_ = 0;
  int64_t last_interest_ms_ = 0;
  Status error_;
  std::thread thread_;
};

// A replayed range that is no longer buffered: read again from its start.
class DirectRangeReader final : public delivery::RangeReader {
 public:
  DirectRangeReader(std::shared_ptr<KinesisApi> client, std::shared_ptr<ShardPacer> pacer,
                    std::string stream, std::string shard, Position after, std::string last,
                    int limit)
      : client_(std::move(client)),
        pacer_(std::move(pacer)),
        stream_(std::move(stream)),
        shard_(std::move(shard)),
        after_(std::move(after)),
        last_(std::move(last)),
        limit_(limit) {}

  // Each call waits for the shard's pacer (shared with the shard's reader): a replay
  // never adds to the shard's call rate. A throttling answer (another consumer of the
  // shard) holds the pacer back a second and is tried again, 20 times at most.
  Result<bool> Next(delivery::StreamChunk* chunk) override {
    for (int attempt = 0; !done_; ++attempt) {
      if (iterator_.empty()) {
        auto it = *Paced(*pacer_, ShardPacer::Call::kGetShardIterator, nullptr, [&] {
          return client_->Call("GetShardIterator", IteratorRequest(stream_, shard_, after_));
        });
        if (!it.ok()) {
          if (it.status().code() == StatusCode::kThrottled && attempt < 20) continue;
          return it.status();
        }
        iterator_ = it->value("ShardIterator", "");
      }
      auto r = *Paced(*pacer_, ShardPacer::Call::kGetRecords, nullptr,
                      [&] { return client_->GetRecords(iterator_, limit_); });
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kThrottled && attempt < 20) continue;
        if (r.status().code() == StatusCode::kFailedPrecondition) {  // expired iterator
          iterator_.clear();
          continue;
        }
        return r.status();
      }
      std::shared_ptr<Answer> answer = std::move(r->answer);
      const bool end = r->end;
      iterator_ = end ? std::string() : std::move(r->next);
      chunk->records.clear();
      for (const auto& rec : answer->records) {
        if (!After(rec, after_)) continue;
        chunk->records.push_back(rec);
        if (rec.sequence_number == std::string_view(last_)) {
          done_ = true;
          break;
        }
        if (delivery::CompareSequenceNumbers(rec.sequence_number, last_) > 0) {
          chunk->records.pop_back();
          done_ = true;
          break;
        }
      }
      if (!chunk->records.empty()) {
        after_ = Position{std::string(chunk->records.back().sequence_number), std::nullopt};
        chunk->storage = std::move(answer);
        return true;
      }
      if (end) {
        done_ = true;  // the shard ended before `last`: records are gone (retention)
        spdlog::warn("kinesis source: {} ended before {}: the rest of the batch is gone", shard_,
                     last_);
        break;
      }
    }
    return false;
  }

 private:
  std::shared_ptr<KinesisApi> client_;
  const std::shared_ptr<ShardPacer> pacer_;
  const std::string stream_;
  const std::string shard_;
  Position after_;
  const std::string last_;
  const int limit_;
  std::string iterator_;
  bool done_ = false;
};

class BufferedRangeReader final : public delivery::RangeReader {
 public:
  explicit BufferedRangeReader(std::vector<delivery::StreamChunk> chunks)
      : chunks_(std::move(chunks)) {}
  Result<bool> Next(delivery::StreamChunk* chunk) override {
    if (at_ >= chunks_.size()) return false;
    *chunk = std::move(chunks_[at_++]);
    return true;
  }

 private:
  std::vector<delivery::StreamChunk> chunks_;
  size_t at_ = 0;
};

class KinesisShardSource final : public delivery::ShardSource {
 public:
  KinesisShardSource(std::shared_ptr<KinesisApi> client, KinesisSourceOptions options,
                     std::shared_ptr<std::atomic<uint64_t>> buffered_total,
                     std::shared_ptr<ShardPacers> pacers, std::string stream, int64_t created_ms)
      : client_(std::move(client)),
        options_(std::move(options)),
        buffered_(std::move(buffered_total)),
        pacers_(std::move(pacers)),
        stream_(std::move(stream)),
        created_ms_(created_ms) {}
  ~KinesisShardSource() override {
    std::lock_guard lock(mu_);
    for (auto& [id, r] : readers_) r->Stop();
  }

  // A shard's reader always may hold this much ahead (more only while the provider's
  // readers hold little together).
  uint64_t MaxPlannedBytes() const override { return options_.reserved_bytes_per_shard; }

  // Discovery (ListShards): new shards only come after the known ones in id order, and a
  // closed shard never changes again (it only expires), so between full listings
  // (ShardFilter FROM_TRIM_HORIZON, every full_listing_ms) only what follows the leading
  // run of closed shards is listed (ShardFilter AFTER_SHARD_ID, as KCL and Flink's
  // enumerator do). An endpoint that ignores ShardFilter (kinesalite 3.3.3, moto) answers
  // every shard, and the known ones are simply not taken twice; one that refuses it is
  // listed without it from then on.
  Result<std::vector<delivery::SourceShard>> Shards() override {
    const int64_t now = NowMs();
    std::vector<delivery::SourceShard> known;
    {
      std::lock_guard lock(mu_);
      if (cached_ && now - cached_at_ < options_.shard_list_ms) return *cached_;
      if (cached_ && now - full_listed_at_ < options_.full_listing_ms) {
        for (const auto& sh : *cached_) {
          if (!sh.closed) break;
          known.push_back(sh);
        }
      }
    }
    RETURN_IF_ERROR(CheckIdentity(now));
    const std::string after = known.empty() ? std::string() : known.back().id;
    ASSIGN_OR_RETURN(auto listed, List(after));
    std::vector<delivery::SourceShard> out = std::move(known);
    for (auto& sh : listed) {
      if (after.empty() || ShardIdLess(after, sh.id)) out.push_back(std::move(sh));
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return ShardIdLess(a.id, b.id); });
    std::lock_guard lock(mu_);
    closed_.clear();
    for (const auto& sh : out) closed_[sh.id] = sh.closed;
    cached_ = out;
    cached_at_ = now;
    if (after.empty()) full_listed_at_ = now;
    // Readers of shards the engine stopped asking about end.
    for (auto it = readers_.begin(); it != readers_.end();) {
      if (it->second->idle(now)) {
        it->second->Stop();
        it = readers_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }

  Result<Position> StartPosition(const std::string&,
                                 const delivery::StartingPosition& start) override {
    if (start.type == "TRIM_HORIZON") return Position{};
    // The source cannot name the record before a time: the position is the time itself
    // (the API's AT_TIMESTAMP iterator starts there).
    return Position::AtTimestamp(start.type == "AT_TIMESTAMP" ? start.timestamp_ms : NowMs());
  }

  Result<delivery::ShardBacklog> Backlog(const std::string& shard, const Position& after) override {
    ShardReader* r = Reader(shard);
    r->Sync(after);
    bool closed;
    {
      std::lock_guard lock(mu_);
      closed = closed_[shard];
    }
    return r->Backlog(closed);
  }

  // One GetShardIterator and one GetRecords of a single record: the first pending
  // record's arrival and MillisBehindLatest (a shard read here already: its buffer).
  Result<delivery::ShardBacklog> Behind(const std::string& shard, const Position& after) override {
    {
      std::lock_guard lock(mu_);
      if (readers_.count(shard)) {
        bool closed = closed_[shard];
        ShardReader* r = readers_[shard].get();
        r->Sync(after);
        return r->Backlog(closed);
      }
    }
    // Through the shard's pacer, as every read of the shard.
    std::shared_ptr<ShardPacer> pacer = pacers_->For(stream_, shard);
    ASSIGN_OR_RETURN(auto it, *Paced(*pacer, ShardPacer::Call::kGetShardIterator, nullptr, [&] {
                       return client_->Call("GetShardIterator",
                                            IteratorRequest(stream_, shard, after));
                     }));
    std::string iterator = it.value("ShardIterator", "");
    delivery::ShardBacklog b;
    b.records_exact = false;
    if (iterator.empty()) return b;
    ASSIGN_OR_RETURN(auto page, *Paced(*pacer, ShardPacer::Call::kGetRecords, nullptr,
                                       [&] { return client_->GetRecords(iterator, 1); }));
    for (const auto& rec : page.answer->records) {
      if (!After(rec, after)) continue;
      ++b.records;
      b.bytes += rec.data.size();
      if (b.oldest_arrival_ms < 0) b.oldest_arrival_ms = rec.arrival_ms;
    }
    b.millis_behind = page.behind_ms;
    b.finished = page.end && b.records == 0;
    return b;
  }

  Result<delivery::PlannedRange> PlanRange(const std::string& shard, const Position& after,
                                           uint64_t max_bytes, size_t max_records) override {
    ShardReader* r = Reader(shard);
    r->Sync(after);
    return r->Plan(after, max_bytes, max_records);
  }

  Result<std::unique_ptr<delivery::RangeReader>> OpenRange(const std::string& shard,
                                                           const Position& after,
                                                           const std::string& last, size_t,
                                                           size_t chunk_records) override {
    if (auto chunks = Reader(shard)->Take(after, last)) {
      return std::unique_ptr<delivery::RangeReader>(new BufferedRangeReader(std::move(*chunks)));
    }
    return std::unique_ptr<delivery::RangeReader>(new DirectRangeReader(
        client_, pacers_->For(stream_, shard), stream_, shard, after, last,
        static_cast<int>(
            std::min<size_t>(chunk_records, static_cast<size_t>(options_.get_records_limit)))));
  }

 private:
  ShardReader* Reader(const std::string& shard) {
    std::lock_guard lock(mu_);
    auto& r = readers_[shard];
    if (!r) {
      r = std::make_unique<ShardReader>(client_, options_, buffered_, stream_, shard,
                                        pacers_->For(stream_, shard));
    }
    return r.get();
  }

  // Shard ids in creation order: "shardId-000000000012" (longer ids after shorter ones).
  static bool ShardIdLess(const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  }

  // Every page of ListShards: the shards after `after` (ShardFilter AFTER_SHARD_ID), or all
  // of them ("": FROM_TRIM_HORIZON), without ShardFilter for an endpoint that refuses it.
  Result<std::vector<delivery::SourceShard>> List(const std::string& after) {
    std::vector<delivery::SourceShard> out;
    std::string token;
    bool filter = client_->shard_filter();
    while (true) {
      json req;
      if (!token.empty()) {
        req = json{{"NextToken", token}};  // the token carries the filter
      } else {
        req = json{{"StreamName", stream_}};
        if (filter) {
          req["ShardFilter"] = after.empty() ? json{{"Type", "FROM_TRIM_HORIZON"}}
                                             : json{{"Type", "AFTER_SHARD_ID"}, {"ShardId", after}};
        }
      }
      auto r = client_->Call("ListShards", req);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kNotFound)
          return NotFound("The source stream no longer exists.");
        if (filter && token.empty() && r.status().code() == StatusCode::kInvalidArgument) {
          client_->RefuseShardFilter(r.status());
          filter = false;
          continue;  // the same listing without it
        }
        return r.status();
      }
      for (const auto& sh : r->value("Shards", json::array())) {
        delivery::SourceShard d;
        d.id = sh.value("ShardId", "");
        for (const char* k : {"ParentShardId", "AdjacentParentShardId"}) {
          if (sh.contains(k) && sh[k].is_string()) d.parents.push_back(sh[k].get<std::string>());
        }
        const auto& range = sh.value("SequenceNumberRange", json::object());
        d.closed =
            range.contains("EndingSequenceNumber") && range["EndingSequenceNumber"].is_string();
        out.push_back(std::move(d));
      }
      token = r->contains("NextToken") && (*r)["NextToken"].is_string()
                  ? (*r)["NextToken"].get<std::string>()
                  : "";
      if (token.empty()) return out;
    }
  }

  // The stream is the channel's while its creation time is (checked every 30 s).
  Status CheckIdentity(int64_t now) {
    {
      std::lock_guard lock(mu_);
      if (now - identity_checked_ms_ < 30000) return Status::OK();
    }
    auto d = client_->Call("DescribeStreamSummary", json{{"StreamName", stream_}});
    if (!d.ok()) {
      if (d.status().code() == StatusCode::kNotFound)
        return NotFound("The source stream no longer exists.");
      return d.status();
    }
    const auto& summary = d->value("StreamDescriptionSummary", json::object());
    if (created_ms_ > 0 && summary.contains("StreamCreationTimestamp") &&
        summary["StreamCreationTimestamp"].is_number()) {
      auto created = static_cast<int64_t>(
          std::llround(summary["StreamCreationTimestamp"].get<double>() * 1000.0));
      // Seconds are what every endpoint keeps; compare at that precision.
      if (created / 1000 != created_ms_ / 1000) {
        return NotFound(fmt::format(
            "The source stream no longer exists (a stream named {} was created again).", stream_));
      }
    }
    std::lock_guard lock(mu_);
    identity_checked_ms_ = now;
    return Status::OK();
  }

  std::shared_ptr<KinesisApi> client_;
  const KinesisSourceOptions options_;
  const std::shared_ptr<std::atomic<uint64_t>> buffered_;
  const std::shared_ptr<ShardPacers> pacers_;
  const std::string stream_;
  const int64_t created_ms_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<ShardReader>> readers_;
  std::map<std::string, bool> closed_;
  std::optional<std::vector<delivery::SourceShard>> cached_;
  int64_t cached_at_ = 0;
  int64_t full_listed_at_ = 0;
  int64_t identity_checked_ms_ = -1000000;
};

}  // namespace

Result<std::unique_ptr<KinesisSourceProvider>> KinesisSourceProvider::Make(
    KinesisSourceOptions options) {
  options.endpoint.service = "kinesis";
  options.endpoint.target_prefix = "Kinesis_20131202.";
  ASSIGN_OR_RETURN(auto client, AwsJsonClient::Make(options.endpoint));
  auto api = std::make_shared<KinesisApi>(std::move(client), options.cbor);
  ShardPacerOptions po;
  po.calls_per_second = options.max_calls_per_second;
  po.pace_bytes = options.pace_reads;
  return std::unique_ptr<KinesisSourceProvider>(new KinesisSourceProvider(
      std::move(options), std::move(api), std::make_shared<ShardPacers>(po)));
}

Result<delivery::SourceStream> KinesisSourceProvider::DescribeStream(const std::string& name) {
  ASSIGN_OR_RETURN(auto d, client_->Call("DescribeStreamSummary", json{{"StreamName", name}}));
  const auto& s = d.value("StreamDescriptionSummary", json::object());
  delivery::SourceStream out;
  out.name = s.value("StreamName", name);
  out.arn = s.value("StreamARN", "");
  if (s.contains("StreamCreationTimestamp") && s["StreamCreationTimestamp"].is_number()) {
    out.created_ms =
        static_cast<int64_t>(std::llround(s["StreamCreationTimestamp"].get<double>() * 1000.0));
  }
  const auto& mode = s.value("StreamModeDetails", json::object());
  out.on_demand = mode.value("StreamMode", "ON_DEMAND") == "ON_DEMAND";
  out.encryption_type = s.value("EncryptionType", "NONE");
  out.key_id = s.value("KeyId", "");
  return out;
}

Result<std::shared_ptr<delivery::ShardSource>> KinesisSourceProvider::OpenSource(
    const delivery::ChannelConfig& channel) {
  // A pool may read several endpoints (a server's own streams, a worker's other endpoint):
  // a channel whose stream this endpoint does not have — by ARN and creation time — is
  // another endpoint's, for the processes that read that one; failing it here would fail
  // it for the whole pool. (A stream deleted while it is being delivered fails its channel:
  // ShardSource::Shards answers kNotFound then.)
  auto stream = DescribeStream(channel.stream_name);
  if (!stream.ok() && stream.status().code() != StatusCode::kNotFound) return stream.status();
  if (!stream.ok() || !delivery::ReadsStream(channel, stream->arn, stream->created_ms)) {
    return WithSubcode(
        FailedPrecondition(fmt::format(
            "stream {} is not a stream of {}{}; the pool's processes that read its endpoint "
            "deliver it",
            channel.stream_arn, options_.endpoint.url,
            stream.ok() ? " (a stream of that name there has another ARN or creation time)" : "")),
        delivery::SourceError::kNotThisSource);
  }
  return std::shared_ptr<delivery::ShardSource>(new KinesisShardSource(
      client_, options_, buffered_, pacers_, channel.stream_name, channel.stream_created_ms));
}

}  // namespace icestream::source
