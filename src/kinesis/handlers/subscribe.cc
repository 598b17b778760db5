// SubscribeToShard over HTTP/1.1 (chunked transfer; aws-api.md §A.10, §B.1): an
// `application/vnd.amazon.eventstream` body with an `initial-response` event, then
// `SubscribeToShardEvent` events (Records, ContinuationSequenceNumber,
// MillisBehindLatest, ChildShards at the shard's end). A subscription lasts 5 minutes;
// a second one for the same consumer and shard within 5 s is refused
// (ResourceInUseException), a later one takes over and the first ends with a
// ResourceInUseException event.
//
// Each subscription runs on its own thread: it reads the shard's log from its position,
// sends what it finds (at most 1 MiB of data per event) and, when nothing is new, sleeps
// until the next Put completes (StreamManager::WaitForAppend), so records reach the
// consumer within milliseconds of their acknowledgement without a polling interval. It
// reads nothing while more than kMaxPendingBytes wait for the socket: a slow consumer
// holds a bounded amount of memory and slows nobody else.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <thread>

#include "aws/event_stream.h"
#include "common/base64.h"
#include "kinesis/context.h"
#include "metrics/stream_metrics.h"
#include "stream/sequence_number.h"

namespace icestream::kinesis {

using nlohmann::json;
using stream::SequenceNumber;
using stream::ShardIdString;

namespace {

constexpr int64_t kSubscriptionMs = 5 * 60 * 1000;
constexpr int64_t kTakeOverAfterMs = 5000;
constexpr int64_t kHeartbeatMs = 2000;  // an event at least this often, records or not
constexpr size_t kMaxEventBytes = 1u << 20;
constexpr size_t kMaxPendingBytes = 4u << 20;
constexpr auto kIdleWait = std::chrono::milliseconds(5);   // while the socket is backed up
constexpr auto kTipWait = std::chrono::milliseconds(100);  // at the tip, between appends

std::string Event(std::string_view type, std::string_view payload) {
  return aws::EncodeEventMessage({{":event-type", std::string(type)},
                                  {":content-type", "application/json"},
                                  {":message-type", "event"}},
                                 payload);
}

std::string ExceptionEvent(std::string_view type, std::string_view message) {
  return aws::EncodeEventMessage({{":exception-type", std::string(type)},
                                  {":content-type", "application/json"},
                                  {":message-type", "exception"}},
                                 json{{"message", message}}.dump());
}

struct Subscription {
  std::atomic<bool> cancelled{false};
  std::atomic<bool> taken_over{false};
  std::atomic<bool> done{false};
  int64_t started_ms = 0;
  std::thread thread;
};

// Events recently sent, by the position they start at. Consumers that follow the same
// shard's tip wake on the same Put and would each read and encode the same records (the
// records as JSON, base64, CRCs: most of the push cost); the first one encodes, the others
// send its bytes. Records are immutable, so an event from position P to Q is the same for
// everyone; only MillisBehindLatest is as of its making (at most kMaxAgeMs ago).
class EventCache {
 public:
  struct Event {
    uint64_t uid = 0;
    uint32_t shard = 0;
    uint64_t from = 0;
    uint64_t next = 0;
    bool shard_end = false;
    int64_t made_ms = 0;
    std::string bytes;  // the framed event
    // For the SubscribeToShardEvent metrics of every consumer that sends it.
    uint64_t records = 0;
    uint64_t data_bytes = 0;
    int64_t millis_behind = 0;
  };

  std::shared_ptr<const Event> Find(uint64_t uid, uint32_t shard, uint64_t from, int64_t now) {
    std::lock_guard lock(mu_);
    for (auto it = recent_.rbegin(); it != recent_.rend(); ++it) {
      const Event& e = **it;
      if (e.uid == uid && e.shard == shard && e.from == from && now - e.made_ms <= kMaxAgeMs) {
        return *it;
      }
    }
    return nullptr;
  }

  void Add(std::shared_ptr<const Event> e) {
    std::lock_guard lock(mu_);
    bytes_ += e->bytes.size();
    recent_.push_back(std::move(e));
    while (!recent_.empty() && (bytes_ > kMaxBytes || recent_.size() > kMaxEvents)) {
      bytes_ -= recent_.front()->bytes.size();
      recent_.pop_front();
    }
  }

 private:
  static constexpr int64_t kMaxAgeMs = 1000;
  static constexpr size_t kMaxBytes = 32u << 20;
  static constexpr size_t kMaxEvents = 256;
  std::mutex mu_;
  std::deque<std::shared_ptr<const Event>> recent_;
  size_t bytes_ = 0;
};

}  // namespace

class SubscriptionHub {
 public:
  EventCache& events() { return events_; }

  ~SubscriptionHub() { Stop(); }

  // Registers a subscription of `key` (consumer ARN + shard); nullptr while another one
  // started less than 5 s ago is running. An older one is told it was taken over.
  std::shared_ptr<Subscription> Claim(const std::string& key, int64_t now) {
    std::lock_guard lock(mu_);
    Reap();
    auto it = active_.find(key);
    if (it != active_.end() && !it->second->done &&
        now - it->second->started_ms < kTakeOverAfterMs) {
      return nullptr;
    }
    if (it != active_.end() && !it->second->done) {
      it->second->taken_over = true;
      it->second->cancelled = true;
    }
    auto sub = std::make_shared<Subscription>();
    sub->started_ms = now;
    active_[key] = sub;
    all_.push_back(sub);
    return sub;
  }

  // Runs `fn` on the subscription's own thread; during Stop, at once on this thread (it
  // sees the cancellation and only ends the body).
  void Run(const std::shared_ptr<Subscription>& sub, std::function<void()> fn) {
    std::unique_lock lock(mu_);
    if (stopping_) {
      sub->cancelled = true;
      lock.unlock();
      fn();
      return;
    }
    sub->thread = std::thread(std::move(fn));
  }

  // Joins under the lock (subscription threads never take it), so that Reap and Stop
  // never join one thread twice.
  void Stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& s : all_) s->cancelled = true;
    for (auto& s : all_) {
      if (s->thread.joinable()) s->thread.join();
    }
  }

 private:
  // Joins the threads of ended subscriptions and forgets them (under mu_).
  void Reap() {
    for (auto& s : all_) {
      if (s->done && s->thread.joinable()) s->thread.join();
    }
    std::erase_if(all_, [](const auto& s) { return s->done && !s->thread.joinable(); });
    std::erase_if(active_, [](const auto& kv) { return kv.second->done.load(); });
  }

  EventCache events_;
  std::mutex mu_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Subscription>> active_;
  std::vector<std::shared_ptr<Subscription>> all_;
};

std::shared_ptr<SubscriptionHub> MakeSubscriptionHub() {
  return std::make_shared<SubscriptionHub>();
}
void StopSubscriptions(SubscriptionHub& hub) { hub.Stop(); }

namespace {

// The event body of one read (records written directly, as GetRecords does).
std::string EventJson(const stream::ShardReadResult& r, uint64_t uid, uint32_t shard,
                      uint64_t next_offset) {
  std::string out = "{";
  AppendRecordsJson(&out, r, uid, shard);
  // Where AFTER_SEQUENCE_NUMBER resumes: after the last record sent (or the shard start).
  SequenceNumber cont = next_offset == 0 ? SequenceNumber::ShardStart(uid, shard)
                                         : SequenceNumber::ForRecord(uid, shard, next_offset - 1);
  out += R"(,"ContinuationSequenceNumber":")" + cont.ToString() + "\"";
  out += R"(,"MillisBehindLatest":)" + std::to_string(r.millis_behind_latest);
  if (r.shard_end) out += R"(,"ChildShards":)" + ChildShardsJson(r.children).dump();
  out += "}";
  return out;
}

}  // namespace

void SubscribeToShard(Context& ctx, Call& call, aws::Params& p) {
  auto consumer_arn = p.Str("ConsumerARN");
  auto shard_id = p.Str("ShardId");
  const json* start = p.Struct("StartingPosition");
  p.Required("consumerARN", consumer_arn.has_value());
  p.Required("shardId", shard_id.has_value());
  p.Required("startingPosition", start != nullptr);
  ConsumerArnParts consumer;
  if (consumer_arn) consumer = ReadConsumerArn(ctx, p);
  if (shard_id) CheckShardIdMember(p, "shardId", *shard_id);
  std::optional<std::string> type, seq;
  std::optional<int64_t> ts;
  if (start) {
    aws::Params sp(*start);
    type = sp.Str("Type");
    seq = sp.Str("SequenceNumber");
    ts = sp.TimestampMs("Timestamp");
    p.Absorb(sp);
    p.Required("startingPosition.type", type.has_value());
    if (type) {
      p.Enum("startingPosition.type", *type,
             {"AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER", "TRIM_HORIZON", "LATEST",
              "AT_TIMESTAMP"});
    }
    if (seq) {
      p.Pattern("startingPosition.sequenceNumber", *seq, aws::MatchesDecimal(*seq, 129),
                "0|([1-9]\\d{0,128})");
    }
  }
  if (auto e = p.Error()) return call.Fail(*e);
  if (call.auth_error) return call.Fail(*call.auth_error);

  auto info = ctx.streams->Describe(consumer.stream);
  if (!info.ok()) return call.Fail(info.status());
  int64_t now = ctx.clock->NowMillis();
  auto status = ConsumerStatusOf(*info, consumer, now);
  if (!status) {
    return call.Fail(NotFound(fmt::format("Consumer {} under account {} not found.", *consumer_arn,
                                          ctx.options.account)));
  }
  if (*status != "ACTIVE") {
    return call.Fail(
        FailedPrecondition(fmt::format("Consumer {} under account {} is {}, not ACTIVE.",
                                       *consumer_arn, ctx.options.account, *status)));
  }
  auto idx = stream::ParseShardId(*shard_id);
  if (!idx || !info->FindShard(*idx)) {
    return call.Fail(NotFound(fmt::format("Shard {} in stream {} under account {} does not exist",
                                          *shard_id, info->name, ctx.options.account)));
  }
  bool by_seq = *type == "AT_SEQUENCE_NUMBER" || *type == "AFTER_SEQUENCE_NUMBER";
  if (by_seq != seq.has_value()) {
    return call.Fail(
        aws::InvalidArgumentError(fmt::format("StartingPosition type {} {} a SequenceNumber.",
                                              *type, by_seq ? "needs" : "does not take")));
  }
  if (*type == "AT_TIMESTAMP" && !ts) {
    return call.Fail(
        aws::InvalidArgumentError("StartingPosition type AT_TIMESTAMP needs a Timestamp."));
  }
  auto bounds = ctx.streams->Bounds(info->name, info->uid, *idx);
  if (!bounds.ok()) return call.Fail(bounds.status());
  uint64_t offset = 0;
  if (*type == "TRIM_HORIZON") {
    offset = bounds->trim_horizon;
  } else if (*type == "LATEST") {
    offset = bounds->end;
  } else if (*type == "AT_TIMESTAMP") {
    auto o = ctx.streams->OffsetAtTime(info->name, info->uid, *idx, std::min(*ts, now));
    if (!o.ok()) return call.Fail(o.status());
    offset = *o;
  } else {
    auto sn = SequenceNumber::Parse(*seq);
    if (!sn || sn->stream_uid != info->uid || sn->shard_index != *idx) {
      return call.Fail(aws::InvalidArgumentError(fmt::format(
          "StartingSequenceNumber {} used in SubscribeToShard on shard {} in stream {} under "
          "account {} is invalid.",
          *seq, ShardIdString(*idx), info->name, ctx.options.account)));
    }
    uint64_t pos = sn->position;
    offset = *type == "AT_SEQUENCE_NUMBER" ? (pos == 0 ? 0 : pos - 1) : pos;
  }

  auto sub = ctx.subscriptions->Claim(*consumer_arn + "|" + ShardIdString(*idx), now);
  if (ctx.metrics) ctx.metrics->OnSubscribe(info->uid, info->name, consumer.name, sub != nullptr);
  if (!sub) {
    return call.Fail(FailedPrecondition(fmt::format(
        "Another active subscription exists for consumer {} on shard {}; a new one may take over "
        "5 seconds after it started.",
        *consumer_arn, ShardIdString(*idx))));
  }
  http::Response res;
  res.SetHeader("Content-Type", "application/vnd.amazon.eventstream");
  res.SetHeader("x-amzn-RequestId", call.request_id);
  std::string stream_name = info->name;
  uint64_t uid = info->uid;
  uint32_t shard = *idx;
  std::shared_ptr<SubscriptionHub> hub = ctx.subscriptions;
  Context* c = &ctx;
  res.stream = [hub, sub, c, stream_name, uid, shard, offset,
                consumer](std::shared_ptr<http::BodyWriter> w) {
    hub->Run(sub, [hub, sub, c, stream_name, uid, shard, offset, consumer, w] {
      w->Write(Event("initial-response", "{}"));
      uint64_t at = offset;
      int64_t begin = c->clock->NowMillis();
      int64_t last_event = 0;
      int64_t last_check = begin;
      while (!sub->cancelled && !w->closed()) {
        int64_t now_ms = c->clock->NowMillis();
        if (now_ms - begin >= kSubscriptionMs) break;
        if (now_ms - last_check >= kHeartbeatMs) {
          // A deregistered consumer's subscriptions end.
          last_check = now_ms;
          auto current = c->streams->Describe(stream_name);
          auto state = current.ok() ? ConsumerStatusOf(*current, consumer, now_ms) : std::nullopt;
          if (!state || *state != "ACTIVE") {
            w->Write(ExceptionEvent("ResourceNotFoundException",
                                    fmt::format("Consumer {} under account {} not found.",
                                                consumer.name, c->options.account)));
            break;
          }
        }
        if (w->pending_bytes() > kMaxPendingBytes) {
          std::this_thread::sleep_for(kIdleWait);
          continue;
        }
        if (auto e = hub->events().Find(uid, shard, at, now_ms)) {
          if (c->metrics) {
            c->metrics->OnSubscribeEvent(uid, stream_name, consumer.name, shard, e->records,
                                         e->data_bytes, e->millis_behind);
          }
          w->Write(e->bytes);
          at = e->next;
          last_event = now_ms;
          if (e->shard_end) break;
          continue;
        }
        uint64_t epoch = c->streams->append_epoch();
        auto r = c->streams->Read(stream_name, uid, shard, at, 10000, kMaxEventBytes);
        if (!r.ok()) {
          auto e = aws::KinesisError(r.status());
          w->Write(ExceptionEvent(e.http_status >= 500 ? "InternalFailureException" : e.type,
                                  e.message));
          break;
        }
        bool send = !r->records.empty() || r->shard_end || now_ms - last_event >= kHeartbeatMs;
        if (send) {
          std::string bytes =
              Event("SubscribeToShardEvent", EventJson(*r, uid, shard, r->next_offset));
          uint64_t data_bytes = 0;
          for (const auto& rec : r->records) data_bytes += rec.data.size();
          // Heartbeats (no records) are cheap and say how far behind *now*: not shared.
          if (!r->records.empty() || r->shard_end) {
            hub->events().Add(std::make_shared<const EventCache::Event>(
                EventCache::Event{uid, shard, at, r->next_offset, r->shard_end, now_ms, bytes,
                                  r->records.size(), data_bytes, r->millis_behind_latest}));
          }
          if (c->metrics) {
            c->metrics->OnSubscribeEvent(uid, stream_name, consumer.name, shard, r->records.size(),
                                         data_bytes, r->millis_behind_latest);
          }
          w->Write(std::move(bytes));
          at = r->next_offset;
          last_event = now_ms;
          if (r->shard_end) break;
        }
        // Nothing new: sleep until some Put completes (or a heartbeat is due), not on a timer.
        if (r->records.empty()) c->streams->WaitForAppend(epoch, kTipWait);
      }
      if (sub->taken_over) {
        w->Write(ExceptionEvent("ResourceInUseException",
                                "Another subscription for this consumer and shard took over."));
      }
      w->Finish();
      sub->done = true;
    });
  };
  call.respond(std::move(res));
}

}  // namespace icestream::kinesis
