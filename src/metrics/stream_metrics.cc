// Stream metrics: counters, the per-minute ring and the Prometheus families.
#include "metrics/stream_metrics.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <mutex>

#include "metrics/histogram.h"
#include "metrics/prometheus.h"

namespace icestream::metrics {

namespace {

using Counter = std::atomic<uint64_t>;

void Add(Counter& c, uint64_t n) { c.fetch_add(n, std::memory_order_relaxed); }
uint64_t Value(const Counter& c) { return c.load(std::memory_order_relaxed); }

// A gauge taken from the last event is shown only while it is this fresh: CloudWatch
// has no datapoint for a minute without calls, and a stale age would page someone.
constexpr int64_t kGaugeFreshMs = 60 * 1000;

struct ShardCounters {
  Counter incoming_bytes{0}, incoming_records{0}, outgoing_bytes{0}, outgoing_records{0};
  Counter write_exceeded{0}, read_exceeded{0};
  std::atomic<int64_t> iterator_age_ms{0}, last_read_ms{0};

  std::mutex ring_mu;
  std::array<int64_t, StreamMetrics::kRingMinutes> ring_minute;
  std::array<uint64_t, StreamMetrics::kRingMinutes> ring_bytes{}, ring_records{};

  ShardCounters() { ring_minute.fill(-1); }

  void AddIncoming(int64_t minute, uint64_t bytes, uint64_t records) {
    Add(incoming_bytes, bytes);
    Add(incoming_records, records);
    size_t slot = static_cast<size_t>(minute % StreamMetrics::kRingMinutes);
    std::lock_guard lock(ring_mu);
    if (ring_minute[slot] != minute) {
      ring_minute[slot] = minute;
      ring_bytes[slot] = 0;
      ring_records[slot] = 0;
    }
    ring_bytes[slot] += bytes;
    ring_records[slot] += records;
  }
};

struct ConsumerCounters {
  Counter subscribe_success{0}, rate_exceeded{0};
  Counter event_bytes{0}, event_records{0}, event_success{0};
  std::atomic<int64_t> millis_behind{0}, last_event_ms{0};
};

}  // namespace

struct StreamMetrics::Entry {
  std::string name;
  Counter incoming_bytes{0}, incoming_records{0};
  Counter put_record_bytes{0}, put_record_success{0};
  Histogram put_record_latency;
  Counter put_records_bytes{0}, put_records_success{0}, put_records_total{0};
  Counter put_records_successful{0}, put_records_failed{0}, put_records_throttled{0};
  Histogram put_records_latency;
  Counter get_records_bytes{0}, get_records_records{0}, get_records_success{0};
  Histogram get_records_latency;
  Counter write_exceeded{0}, read_exceeded{0};

  mutable std::mutex mu;  // guards the two maps (not the counters inside)
  std::map<uint32_t, std::unique_ptr<ShardCounters>> shards;
  std::map<std::string, std::unique_ptr<ConsumerCounters>, std::less<>> consumers;

  ShardCounters& Shard(uint32_t index) {
    std::lock_guard lock(mu);
    auto& s = shards[index];
    if (!s) s = std::make_unique<ShardCounters>();
    return *s;
  }
  ConsumerCounters& Consumer(std::string_view consumer) {
    std::lock_guard lock(mu);
    auto it = consumers.find(consumer);
    if (it == consumers.end()) {
      it = consumers.emplace(std::string(consumer), std::make_unique<ConsumerCounters>()).first;
    }
    return *it->second;
  }
};

void PutTally::Add(uint32_t shard, uint64_t bytes, PutOutcome outcome) {
  if (outcome == PutOutcome::kFailed) {
    ++failed_;
    return;
  }
  constexpr size_t kLinear = 16;
  PerShard* s = nullptr;
  if (last_ < shards_.size() && shards_[last_].shard == shard) {
    s = &shards_[last_];
  } else if (shards_.size() <= kLinear) {
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (shards_[i].shard == shard) {
        s = &shards_[i];
        last_ = i;
        break;
      }
    }
  } else if (auto it = index_.find(shard); it != index_.end()) {
    s = &shards_[it->second];
    last_ = it->second;
  }
  if (s == nullptr) {
    last_ = shards_.size();
    s = &shards_.emplace_back(PerShard{shard, 0, 0, 0});
    if (shards_.size() == kLinear + 1) {
      for (size_t i = 0; i < shards_.size(); ++i) index_[shards_[i].shard] = i;
    } else if (shards_.size() > kLinear + 1) {
      index_[shard] = last_;
    }
  }
  if (outcome == PutOutcome::kOk) {
    ++s->ok_records;
    s->ok_bytes += bytes;
    ++ok_;
    ok_bytes_ += bytes;
  } else {
    ++s->throttled;
    ++throttled_;
  }
}

StreamMetrics::StreamMetrics(const Clock* clock) : clock_(clock) {}
StreamMetrics::~StreamMetrics() = default;

std::shared_ptr<StreamMetrics::Entry> StreamMetrics::Find(uint64_t uid) const {
  std::shared_lock lock(mu_);
  auto it = entries_.find(uid);
  return it == entries_.end() ? nullptr : it->second;
}

std::shared_ptr<StreamMetrics::Entry> StreamMetrics::Get(uint64_t uid, std::string_view stream) {
  if (auto e = Find(uid)) return e;
  std::unique_lock lock(mu_);
  auto& e = entries_[uid];
  if (!e) {
    e = std::make_shared<Entry>();
    e->name = std::string(stream);
  }
  return e;
}

void StreamMetrics::OnPutRecord(uint64_t uid, std::string_view stream, uint32_t shard,
                                uint64_t bytes, PutOutcome outcome, int64_t latency_ns) {
  auto e = Get(uid, stream);
  if (outcome == PutOutcome::kOk) {
    Add(e->put_record_bytes, bytes);
    Add(e->put_record_success, 1);
    Add(e->incoming_bytes, bytes);
    Add(e->incoming_records, 1);
    e->put_record_latency.ObserveNanos(latency_ns);
    e->Shard(shard).AddIncoming(clock_->NowMillis() / 60000, bytes, 1);
  } else if (outcome == PutOutcome::kThrottled) {
    Add(e->write_exceeded, 1);
    Add(e->Shard(shard).write_exceeded, 1);
  }
}

void StreamMetrics::OnPutRecords(uint64_t uid, std::string_view stream, const PutTally& tally,
                                 int64_t latency_ns) {
  auto e = Get(uid, stream);
  Add(e->put_records_total, tally.ok() + tally.throttled() + tally.failed());
  Add(e->put_records_successful, tally.ok());
  Add(e->put_records_failed, tally.failed());
  Add(e->put_records_throttled, tally.throttled());
  Add(e->put_records_bytes, tally.ok_bytes());
  Add(e->incoming_bytes, tally.ok_bytes());
  Add(e->incoming_records, tally.ok());
  Add(e->write_exceeded, tally.throttled());
  // AWS: "the number of PutRecords operations where at least one record succeeded".
  if (tally.ok() > 0) {
    Add(e->put_records_success, 1);
    e->put_records_latency.ObserveNanos(latency_ns);
  }
  int64_t minute = clock_->NowMillis() / 60000;
  for (const auto& s : tally.shards()) {
    ShardCounters& c = e->Shard(s.shard);
    if (s.ok_records > 0) c.AddIncoming(minute, s.ok_bytes, s.ok_records);
    if (s.throttled > 0) Add(c.write_exceeded, s.throttled);
  }
}

void StreamMetrics::OnGetRecords(uint64_t uid, std::string_view stream, uint32_t shard,
                                 uint64_t records, uint64_t bytes, int64_t millis_behind,
                                 int64_t latency_ns) {
  auto e = Get(uid, stream);
  Add(e->get_records_success, 1);
  Add(e->get_records_records, records);
  Add(e->get_records_bytes, bytes);
  e->get_records_latency.ObserveNanos(latency_ns);
  ShardCounters& c = e->Shard(shard);
  Add(c.outgoing_records, records);
  Add(c.outgoing_bytes, bytes);
  c.iterator_age_ms.store(millis_behind, std::memory_order_relaxed);
  c.last_read_ms.store(clock_->NowMillis(), std::memory_order_relaxed);
}

void StreamMetrics::OnReadThrottled(uint64_t uid, std::string_view stream, uint32_t shard) {
  auto e = Get(uid, stream);
  Add(e->read_exceeded, 1);
  Add(e->Shard(shard).read_exceeded, 1);
}

void StreamMetrics::OnSubscribe(uint64_t uid, std::string_view stream, std::string_view consumer,
                                bool ok) {
  auto e = Get(uid, stream);
  ConsumerCounters& c = e->Consumer(consumer);
  Add(ok ? c.subscribe_success : c.rate_exceeded, 1);
}

void StreamMetrics::OnSubscribeEvent(uint64_t uid, std::string_view stream,
                                     std::string_view consumer, uint32_t shard, uint64_t records,
                                     uint64_t bytes, int64_t millis_behind) {
  auto e = Get(uid, stream);
  ConsumerCounters& c = e->Consumer(consumer);
  Add(c.event_success, 1);
  Add(c.event_records, records);
  Add(c.event_bytes, bytes);
  int64_t now = clock_->NowMillis();
  c.millis_behind.store(millis_behind, std::memory_order_relaxed);
  c.last_event_ms.store(now, std::memory_order_relaxed);
  if (records > 0) {
    ShardCounters& s = e->Shard(shard);
    Add(s.outgoing_records, records);
    Add(s.outgoing_bytes, bytes);
  }
}

StreamRates StreamMetrics::IncomingRates(uint64_t uid) const {
  StreamRates out;
  out.minutes = kRingMinutes;
  int64_t now_minute = clock_->NowMillis() / 60000;
  int64_t first = now_minute - kRingMinutes + 1;
  out.first_minute_ms = first * 60000;
  auto e = Find(uid);
  if (!e) return out;
  std::lock_guard lock(e->mu);
  for (const auto& [index, s] : e->shards) {
    ShardRate r;
    r.shard = index;
    r.bytes.assign(kRingMinutes, 0);
    r.records.assign(kRingMinutes, 0);
    bool any = false;
    std::lock_guard ring(s->ring_mu);
    for (int64_t m = first; m <= now_minute; ++m) {
      size_t slot = static_cast<size_t>(m % kRingMinutes);
      if (s->ring_minute[slot] != m) continue;
      r.bytes[static_cast<size_t>(m - first)] = s->ring_bytes[slot];
      r.records[static_cast<size_t>(m - first)] = s->ring_records[slot];
      any = true;
    }
    if (any) out.shards.push_back(std::move(r));
  }
  return out;
}

namespace {

using EntryRef = const StreamMetrics::Entry&;

struct CounterDef {
  const char* name;
  const char* help;
  std::function<uint64_t(EntryRef)> get;
};

}  // namespace

std::string StreamMetrics::PrometheusText(const std::vector<StreamView>& live) {
  // Pair every live stream with its entry (or none: all zeros), forget the others.
  std::vector<std::pair<const StreamView*, std::shared_ptr<Entry>>> rows;
  {
    std::unique_lock lock(mu_);
    std::unordered_map<uint64_t, std::shared_ptr<Entry>> kept;
    for (const auto& v : live) {
      auto it = entries_.find(v.uid);
      std::shared_ptr<Entry> e = it == entries_.end() ? nullptr : it->second;
      if (e) kept[v.uid] = e;
      rows.emplace_back(&v, e);
    }
    entries_.swap(kept);
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first->name < b.first->name; });
  static const Entry kZero;
  auto entry = [](const auto& row) -> EntryRef { return row.second ? *row.second : kZero; };
  int64_t now = clock_->NowMillis();
  PrometheusWriter w;

  static const std::vector<CounterDef> kCounters = {
      {"IncomingBytes", "Bytes of data successfully put to the stream (PutRecord and PutRecords).",
       [](EntryRef e) { return Value(e.incoming_bytes); }},
      {"IncomingRecords", "Records successfully put to the stream (PutRecord and PutRecords).",
       [](EntryRef e) { return Value(e.incoming_records); }},
      {"PutRecord_Bytes", "Bytes of data put with successful PutRecord calls.",
       [](EntryRef e) { return Value(e.put_record_bytes); }},
      {"PutRecord_Success", "Successful PutRecord calls.",
       [](EntryRef e) { return Value(e.put_record_success); }},
      {"PutRecords_Bytes", "Bytes of data of the records PutRecords put successfully.",
       [](EntryRef e) { return Value(e.put_records_bytes); }},
      {"PutRecords_Success", "PutRecords calls of which at least one record succeeded.",
       [](EntryRef e) { return Value(e.put_records_success); }},
      {"PutRecords_TotalRecords", "Records sent in PutRecords calls that reached the stream.",
       [](EntryRef e) { return Value(e.put_records_total); }},
      {"PutRecords_SuccessfulRecords", "Records PutRecords put successfully.",
       [](EntryRef e) { return Value(e.put_records_successful); }},
      {"PutRecords_FailedRecords",
       "Records PutRecords refused for an internal failure (not throttling).",
       [](EntryRef e) { return Value(e.put_records_failed); }},
      {"PutRecords_ThrottledRecords",
       "Records PutRecords refused with ProvisionedThroughputExceededException.",
       [](EntryRef e) { return Value(e.put_records_throttled); }},
      {"GetRecords_Bytes", "Bytes of data returned by GetRecords.",
       [](EntryRef e) { return Value(e.get_records_bytes); }},
      {"GetRecords_Records", "Records returned by GetRecords.",
       [](EntryRef e) { return Value(e.get_records_records); }},
      {"GetRecords_Success", "Successful GetRecords calls.",
       [](EntryRef e) { return Value(e.get_records_success); }},
      {"WriteProvisionedThroughputExceeded",
       "Records refused with ProvisionedThroughputExceededException (PutRecord and PutRecords).",
       [](EntryRef e) { return Value(e.write_exceeded); }},
      {"ReadProvisionedThroughputExceeded",
       "GetRecords calls refused with ProvisionedThroughputExceededException.",
       [](EntryRef e) { return Value(e.read_exceeded); }},
  };
  for (const auto& d : kCounters) {
    w.Family(d.name, "counter", d.help);
    for (const auto& row : rows) {
      w.Sample(d.name, {{"stream_name", row.first->name}}, static_cast<double>(d.get(entry(row))));
    }
  }
  struct HistDef {
    const char* name;
    const char* help;
    const Histogram Entry::*h;
  };
  for (const HistDef& d : {HistDef{"PutRecord_Latency_seconds",
                                   "Time from request to answer of successful PutRecord calls.",
                                   &Entry::put_record_latency},
                           HistDef{"PutRecords_Latency_seconds",
                                   "Time from request to answer of successful PutRecords calls.",
                                   &Entry::put_records_latency},
                           HistDef{"GetRecords_Latency_seconds",
                                   "Time from request to answer of successful GetRecords calls.",
                                   &Entry::get_records_latency}}) {
    w.Family(d.name, "histogram", d.help);
    for (const auto& row : rows) {
      w.HistogramSamples(d.name, {{"stream_name", row.first->name}}, (entry(row).*d.h).Read());
    }
  }
  w.Family("GetRecords_IteratorAgeMilliseconds", "gauge",
           "MillisBehindLatest of the last GetRecords call, the largest over the stream's "
           "shards read in the last minute (no sample when none was).");
  for (const auto& row : rows) {
    if (!row.second) continue;
    std::lock_guard lock(row.second->mu);
    int64_t age = -1;
    for (const auto& [index, s] : row.second->shards) {
      if (now - s->last_read_ms.load(std::memory_order_relaxed) > kGaugeFreshMs) continue;
      age = std::max(age, s->iterator_age_ms.load(std::memory_order_relaxed));
    }
    if (age >= 0) {
      w.Sample("GetRecords_IteratorAgeMilliseconds", {{"stream_name", row.first->name}},
               static_cast<double>(age));
    }
  }

  // Enhanced fan-out, by consumer.
  struct ConsumerDef {
    const char* name;
    const char* type;
    const char* help;
    std::function<double(const ConsumerCounters&, int64_t now, bool* show)> get;
  };
  static const std::vector<ConsumerDef> kConsumer = {
      {"SubscribeToShard_Success", "counter", "SubscribeToShard calls that started a subscription.",
       [](const ConsumerCounters& c, int64_t, bool*) {
         return double(Value(c.subscribe_success));
       }},
      {"SubscribeToShard_RateExceeded", "counter",
       "SubscribeToShard calls refused because the consumer's subscription to the shard is "
       "younger than 5 seconds.",
       [](const ConsumerCounters& c, int64_t, bool*) { return double(Value(c.rate_exceeded)); }},
      {"SubscribeToShardEvent_Bytes", "counter", "Bytes of data pushed in SubscribeToShard events.",
       [](const ConsumerCounters& c, int64_t, bool*) { return double(Value(c.event_bytes)); }},
      {"SubscribeToShardEvent_Records", "counter", "Records pushed in SubscribeToShard events.",
       [](const ConsumerCounters& c, int64_t, bool*) { return double(Value(c.event_records)); }},
      {"SubscribeToShardEvent_Success", "counter",
       "SubscribeToShard events pushed (with records or as heartbeats).",
       [](const ConsumerCounters& c, int64_t, bool*) { return double(Value(c.event_success)); }},
      {"SubscribeToShardEvent_MillisBehindLatest", "gauge",
       "MillisBehindLatest of the consumer's last event (no sample when it had none in the "
       "last minute).",
       [](const ConsumerCounters& c, int64_t t, bool* show) {
         *show = t - c.last_event_ms.load(std::memory_order_relaxed) <= kGaugeFreshMs;
         return double(c.millis_behind.load(std::memory_order_relaxed));
       }},
  };
  for (const auto& d : kConsumer) {
    w.Family(d.name, d.type, d.help);
    for (const auto& row : rows) {
      if (!row.second) continue;
      std::lock_guard lock(row.second->mu);
      for (const auto& [consumer, c] : row.second->consumers) {
        bool show = true;
        double v = d.get(*c, now, &show);
        if (show) {
          w.Sample(d.name, {{"stream_name", row.first->name}, {"consumer_name", consumer}}, v);
        }
      }
    }
  }

  // Enhanced shard-level metrics, behind the stream's flags.
  struct ShardDef {
    const char* flag;  // the ShardLevelMetrics name
    const char* type;
    const char* help;
    std::function<double(const ShardCounters&, int64_t now, bool* show)> get;
  };
  static const std::vector<ShardDef> kShard = {
      {"IncomingBytes", "counter", "Bytes of data successfully put to the shard.",
       [](const ShardCounters& s, int64_t, bool*) { return double(Value(s.incoming_bytes)); }},
      {"IncomingRecords", "counter", "Records successfully put to the shard.",
       [](const ShardCounters& s, int64_t, bool*) { return double(Value(s.incoming_records)); }},
      {"OutgoingBytes", "counter",
       "Bytes of data read from the shard (GetRecords and SubscribeToShard).",
       [](const ShardCounters& s, int64_t, bool*) { return double(Value(s.outgoing_bytes)); }},
      {"OutgoingRecords", "counter",
       "Records read from the shard (GetRecords and SubscribeToShard).",
       [](const ShardCounters& s, int64_t, bool*) { return double(Value(s.outgoing_records)); }},
      {"WriteProvisionedThroughputExceeded", "counter",
       "Records refused for the shard with ProvisionedThroughputExceededException.",
       [](const ShardCounters& s, int64_t, bool*) { return double(Value(s.write_exceeded)); }},
      {"ReadProvisionedThroughputExceeded", "counter",
       "GetRecords calls refused for the shard with ProvisionedThroughputExceededException.",
       [](const ShardCounters& s, int64_t, bool*) { return double(Value(s.read_exceeded)); }},
      {"IteratorAgeMilliseconds", "gauge",
       "MillisBehindLatest of the shard's last GetRecords call (no sample when it had none in "
       "the last minute).",
       [](const ShardCounters& s, int64_t t, bool* show) {
         *show = t - s.last_read_ms.load(std::memory_order_relaxed) <= kGaugeFreshMs;
         return double(s.iterator_age_ms.load(std::memory_order_relaxed));
       }},
  };
  static const ShardCounters kZeroShard;
  for (const auto& d : kShard) {
    std::string name = std::string("Shard_") + d.flag;
    w.Family(name, d.type,
             std::string(d.help) + " Enhanced monitoring: only for streams with " + d.flag +
                 " enabled.");
    for (const auto& row : rows) {
      const auto& flags = row.first->shard_level_metrics;
      if (std::find(flags.begin(), flags.end(), d.flag) == flags.end()) continue;
      std::unique_lock<std::mutex> lock;
      if (row.second) lock = std::unique_lock(row.second->mu);
      for (const auto& shard : row.first->shards) {
        const ShardCounters* s = &kZeroShard;
        if (row.second) {
          auto it = row.second->shards.find(shard.index);
          if (it != row.second->shards.end()) s = it->second.get();
        }
        bool show = true;
        double v = d.get(*s, now, &show);
        if (!show) continue;
        w.Sample(name, {{"stream_name", row.first->name}, {"shard_id", shard.id}}, v);
      }
    }
  }
  return w.Take();
}

}  // namespace icestream::metrics
