// SubscribeToShard over HTTP/1.1 (chunked transfer) and HTTP/2 (aws-api.md §A.10, §B.1):
// an `application/vnd.amazon.eventstream` body with an `initial-response` event, then
// `SubscribeToShardEvent` events (Records, ContinuationSequenceNumber,
// MillisBehindLatest, ChildShards at the shard's end). A subscription lasts 5 minutes;
// a second one for the same consumer and shard within 5 s is refused
// (ResourceInUseException), a later one takes over and the first ends with a
// ResourceInUseException event.
//
// Subscriptions are tasks of a small pool of threads (kinesis/push_pool.h), not a thread
// each: a subscription's step reads its shard's log from its position and sends what it
// finds (at most 1 MiB of data per event); at the tip it asks to be woken by the next
// append to its own shard (StreamManager::WhenAppended) or by its heartbeat timer, so
// records reach the consumer within milliseconds of their acknowledgement and a Put
// wakes no subscriber of another shard. While its body writer is congested (a slow
// consumer, or an HTTP/2 connection whose budget is spent) it reads nothing and waits for
// the writer to have room: a slow consumer holds a bounded amount of memory and slows
// nobody else.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <set>
#include <thread>

#include "aws/event_stream.h"
#include "common/base64.h"
#include "kinesis/context.h"
#include "kinesis/push_pool.h"
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
// Events one step sends at most before the task yields its pool thread to others.
constexpr int kEventsPerStep = 8;

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

class Pusher;

struct Subscription {
  std::atomic<bool> cancelled{false};
  std::atomic<bool> taken_over{false};
  std::atomic<bool> done{false};
  int64_t started_ms = 0;
  std::weak_ptr<Pusher> pusher;  // woken when cancelled
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

class SubscriptionHub : public std::enable_shared_from_this<SubscriptionHub> {
 public:
  explicit SubscriptionHub(size_t threads) : pool_(threads) {}
  ~SubscriptionHub() { Stop(); }

  EventCache& events() { return events_; }
  PushPool& pool() { return pool_; }

  // Registers a subscription of `key` (consumer ARN + shard); nullptr while another one
  // started less than 5 s ago is running. An older one is told it was taken over.
  std::shared_ptr<Subscription> Claim(const std::string& key, int64_t now);
  // Starts the subscription's pusher on the pool; during Stop, ends it at once.
  void Start(const std::shared_ptr<Subscription>& sub, std::shared_ptr<Pusher> pusher);
  // Wakes the subscription's pusher (cancelled, taken over).
  void Poke(const std::shared_ptr<Subscription>& sub);
  // Ends every subscription (their bodies are finished) and joins the pool's threads.
  void Stop();

 private:
  void Reap();  // under mu_

  EventCache events_;
  PushPool pool_;
  std::mutex mu_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Subscription>> active_;
  // Owns the pushers (the pool, watchers and timers hold them weakly), with their
  // subscriptions: ended ones are dropped by Reap.
  std::vector<std::pair<std::shared_ptr<Subscription>, std::shared_ptr<Pusher>>> running_;
};

std::shared_ptr<SubscriptionHub> MakeSubscriptionHub(size_t threads) {
  return std::make_shared<SubscriptionHub>(threads);
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

// One subscription's pushing, as a task of the hub's pool. Every step runs on a pool
// thread (never two at once) and returns without blocking; it is woken by an append to
// its shard, by its writer having room, by its heartbeat timer, or by cancellation.
class Pusher : public PushPool::Task, public std::enable_shared_from_this<Pusher> {
 public:
  struct Params {
    Context* ctx = nullptr;
    std::weak_ptr<SubscriptionHub> hub;
    std::shared_ptr<Subscription> sub;
    std::shared_ptr<http::BodyWriter> writer;
    std::shared_ptr<log::ShardLog> log;
    std::string stream_name;
    uint64_t uid = 0;
    uint32_t shard = 0;
    uint64_t at = 0;
    ConsumerArnParts consumer;
  };
  explicit Pusher(Params p) : p_(std::move(p)) {}

  void Step() override {
    if (done_) return;
    auto hub = p_.hub.lock();
    if (!hub) return;
    Context& c = *p_.ctx;
    http::BodyWriter& w = *p_.writer;
    int64_t now = c.clock->NowMillis();
    if (!started_) {
      started_ = true;
      begin_ = last_check_ = now;
      w.Write(Event("initial-response", "{}"));
    }
    for (int i = 0; i < kEventsPerStep; ++i) {
      if (p_.sub->cancelled || w.closed() || now - begin_ >= kSubscriptionMs) return Finish();
      if (now - last_check_ >= kHeartbeatMs) {
        // A deregistered consumer's subscriptions end.
        last_check_ = now;
        auto current = c.streams->Describe(p_.stream_name);
        auto state = current.ok() ? ConsumerStatusOf(*current, p_.consumer, now) : std::nullopt;
        if (!state || *state != "ACTIVE") {
          w.Write(ExceptionEvent("ResourceNotFoundException",
                                 fmt::format("Consumer {} under account {} not found.",
                                             p_.consumer.name, c.options.account)));
          return Finish();
        }
      }
      if (w.congested()) {
        // Nothing is read while the consumer (or its connection) is backed up.
        std::weak_ptr<Pusher> weak = weak_from_this();
        std::weak_ptr<SubscriptionHub> weak_hub = p_.hub;
        w.WhenWritable([weak, weak_hub] { WakeUp(weak, weak_hub); });
        return;
      }
      if (auto e = hub->events().Find(p_.uid, p_.shard, p_.at, now)) {
        if (c.metrics) {
          c.metrics->OnSubscribeEvent(p_.uid, p_.stream_name, p_.consumer.name, p_.shard,
                                      e->records, e->data_bytes, e->millis_behind);
        }
        w.Write(e->bytes);
        p_.at = e->next;
        last_event_ = now;
        if (e->shard_end) return Finish();
        continue;
      }
      auto r = c.streams->Read(p_.stream_name, p_.uid, p_.shard, p_.at, 10000, kMaxEventBytes);
      if (!r.ok()) {
        auto e = aws::KinesisError(r.status());
        w.Write(
            ExceptionEvent(e.http_status >= 500 ? "InternalFailureException" : e.type, e.message));
        return Finish();
      }
      bool records = !r->records.empty();
      if (records || r->shard_end || now - last_event_ >= kHeartbeatMs) {
        std::string bytes =
            Event("SubscribeToShardEvent", EventJson(*r, p_.uid, p_.shard, r->next_offset));
        uint64_t data_bytes = 0;
        for (const auto& rec : r->records) data_bytes += rec.data.size();
        // Heartbeats (no records) are cheap and say how far behind *now*: not shared.
        if (records || r->shard_end) {
          hub->events().Add(std::make_shared<const EventCache::Event>(
              EventCache::Event{p_.uid, p_.shard, p_.at, r->next_offset, r->shard_end, now, bytes,
                                r->records.size(), data_bytes, r->millis_behind_latest}));
        }
        if (c.metrics) {
          c.metrics->OnSubscribeEvent(p_.uid, p_.stream_name, p_.consumer.name, p_.shard,
                                      r->records.size(), data_bytes, r->millis_behind_latest);
        }
        w.Write(std::move(bytes));
        p_.at = r->next_offset;
        last_event_ = now;
        if (r->shard_end) return Finish();
      }
      if (!records) {
        // At the tip: woken by the next append to this shard, or for the next heartbeat.
        std::weak_ptr<Pusher> weak = weak_from_this();
        std::weak_ptr<SubscriptionHub> weak_hub = p_.hub;
        hub->pool().WakeAt(shared_from_this(),
                           PushPool::Clock::now() + std::chrono::milliseconds(std::max<int64_t>(
                                                        1, last_event_ + kHeartbeatMs - now)));
        // One callback pending at a time: an idle subscription's heartbeats must not pile up
        // callbacks (a pending one fires on the next append whatever position it knew).
        if (!watching_->exchange(true)) {
          c.streams->WhenAppended(p_.uid, p_.shard, *p_.log, p_.at,
                                  [weak, weak_hub, watching = watching_] {
                                    watching->store(false);
                                    WakeUp(weak, weak_hub);
                                  });
        }
        return;
      }
    }
    hub->pool().Wake(shared_from_this());  // more to send: after the others had a turn
  }

  // Ends the body (with the take-over event when another subscription took over).
  void Finish() {
    if (done_) return;
    done_ = true;
    if (p_.sub->taken_over) {
      p_.writer->Write(ExceptionEvent(
          "ResourceInUseException", "Another subscription for this consumer and shard took over."));
    }
    p_.writer->Finish();
    p_.sub->done = true;
  }

  static void WakeUp(const std::weak_ptr<Pusher>& weak,
                     const std::weak_ptr<SubscriptionHub>& weak_hub) {
    auto hub = weak_hub.lock();
    auto task = weak.lock();
    if (hub && task) hub->pool().Wake(task);
  }

 private:
  Params p_;
  std::shared_ptr<std::atomic<bool>> watching_ = std::make_shared<std::atomic<bool>>(false);
  bool started_ = false;
  bool done_ = false;
  int64_t begin_ = 0;
  int64_t last_event_ = 0;
  int64_t last_check_ = 0;
};

}  // namespace

std::shared_ptr<Subscription> SubscriptionHub::Claim(const std::string& key, int64_t now) {
  std::shared_ptr<Subscription> old;
  std::shared_ptr<Subscription> sub;
  {
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
      old = it->second;
    }
    sub = std::make_shared<Subscription>();
    sub->started_ms = now;
    active_[key] = sub;
  }
  if (old) Poke(old);
  return sub;
}

void SubscriptionHub::Start(const std::shared_ptr<Subscription>& sub,
                            std::shared_ptr<Pusher> pusher) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      sub->pusher = pusher;
      running_.emplace_back(sub, pusher);
      pool_.Wake(pusher);
      return;
    }
  }
  sub->cancelled = true;
  pusher->Step();  // sees the cancellation: ends the body
  pusher->Finish();
}

void SubscriptionHub::Poke(const std::shared_ptr<Subscription>& sub) {
  if (auto p = sub->pusher.lock()) pool_.Wake(p);
}

void SubscriptionHub::Reap() {
  std::erase_if(running_, [](const auto& sp) { return sp.first->done.load(); });
  std::erase_if(active_, [](const auto& kv) { return kv.second->done.load(); });
}

void SubscriptionHub::Stop() {
  std::vector<std::pair<std::shared_ptr<Subscription>, std::shared_ptr<Pusher>>> running;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [key, sub] : active_) sub->cancelled = true;
    running.swap(running_);
  }
  pool_.Stop();  // no step runs after this
  for (auto& [sub, p] : running) p->Finish();
}

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
      p.Enum("startingPosition.type", *type, kIteratorTypes);
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
    return call.Fail(stream::ShardNotFoundError(*shard_id, info->name, ctx.options.account));
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
  auto log = ctx.streams->ShardLogFor(info->uid, *idx);
  if (!log.ok()) return call.Fail(log.status());
  http::Response res;
  res.SetHeader("Content-Type", "application/vnd.amazon.eventstream");
  res.SetHeader("x-amzn-RequestId", call.request_id);
  Pusher::Params params;
  params.ctx = &ctx;
  params.hub = ctx.subscriptions;
  params.sub = sub;
  params.log = std::move(*log);
  params.stream_name = info->name;
  params.uid = info->uid;
  params.shard = *idx;
  params.at = offset;
  params.consumer = consumer;
  std::shared_ptr<SubscriptionHub> hub = ctx.subscriptions;
  res.stream = [hub, params = std::move(params)](std::shared_ptr<http::BodyWriter> w) mutable {
    params.writer = std::move(w);
    auto claimed = params.sub;
    hub->Start(claimed, std::make_shared<Pusher>(std::move(params)));
  };
  call.respond(std::move(res));
}

}  // namespace icestream::kinesis
