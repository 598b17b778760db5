// S3 sink: batch → objects (+ DLQ object) → uploads with retries.
#include "delivery/s3/s3_sink.h"

#include <fmt/format.h>

#include <atomic>

#include "common/crypto.h"
#include "delivery/dlq.h"
#include "delivery/s3/batch_builder.h"
#include "delivery/s3/key_template.h"

namespace icestream::delivery::s3 {

namespace {

class S3Sink final : public Sink {
 public:
  S3Sink(ChannelConfig config, KeyTemplate tmpl, SinkEnv env)
      : config_(std::move(config)), template_(std::move(tmpl)), env_(std::move(env)) {}

  bool spans_shards() const override { return false; }

  Status Check() override {
    auto check = [&](const std::string& arn, const std::string& owner, const char* what) -> Status {
      ASSIGN_OR_RETURN(std::string bucket, objectstore::BucketFromArn(arn));
      objectstore::ReadOptions ro;
      if (!env_.local_buckets) ro.expected_bucket_owner = owner;
      Status st = env_.buckets->CheckBucket(bucket, ro);
      if (!st.ok()) return st.WithContext(fmt::format("{} bucket {}", what, bucket));
      return Status::OK();
    };
    const auto& d = config_.s3();
    RETURN_IF_ERROR(check(d.bucket_arn, d.expected_bucket_owner, "destination"));
    if (config_.dlq.bucket_arn != d.bucket_arn) {
      RETURN_IF_ERROR(
          check(config_.dlq.bucket_arn, config_.dlq.expected_bucket_owner, "dead-letter queue"));
    }
    if (env_.create_only_keys && !probed_) {
      RETURN_IF_ERROR(ProbeConditionalPut(d.bucket_arn, d.expected_bucket_owner));
      if (config_.dlq.bucket_arn != d.bucket_arn) {
        RETURN_IF_ERROR(
            ProbeConditionalPut(config_.dlq.bucket_arn, config_.dlq.expected_bucket_owner));
      }
      probed_ = true;
    }
    return Status::OK();
  }

  Result<std::map<std::string, Position>> Checkpoints() override {
    return std::map<std::string, Position>{};
  }

  Result<DeliveryCounts> Deliver(const DeliveryBatch& batch, RecordSource* source) override {
    if (batch.ranges.size() != 1) return Internal("an S3 batch covers exactly one shard");
    const RedriveSpan* redrive = batch.redrive.get();
    BatchContext bctx{&config_,         &template_, batch.ranges[0].shard, env_.compression_level,
                      batch.attempt_ms, redrive};
    BatchBuilder builder(bctx);
    RecordChunk chunk;
    for (;;) {
      ASSIGN_OR_RETURN(bool more, source->Next(&chunk));
      if (!more) break;
      for (const auto& rec : chunk.records) {
        RETURN_IF_ERROR(builder.Add({rec.sequence_number, rec.ordinal, rec.arrival_ms, rec.data,
                                     rec.sub_sequence, rec.error, rec.partition_key}));
      }
    }
    ASSIGN_OR_RETURN(BatchResult built, builder.Finish());

    const auto& d = config_.s3();
    ASSIGN_OR_RETURN(std::string bucket, objectstore::BucketFromArn(d.bucket_arn));
    ASSIGN_OR_RETURN(std::string dlq_bucket, objectstore::BucketFromArn(config_.dlq.bucket_arn));
    objectstore::PutOptions opts;
    opts.storage_class = d.storage_class;
    if (!env_.local_buckets) opts.expected_bucket_owner = d.expected_bucket_owner;
    if (config_.encryption) {
      opts.server_side_encryption = "aws:kms";
      opts.sse_kms_key_id = config_.encryption->key_id;
    }
    opts.content_type = config_.record_format == RecordFormat::kByteArray
                            ? "application/octet-stream"
                        : config_.record_format == RecordFormat::kString ? "text/plain"
                                                                         : "application/x-ndjson";
    DeliveryCounts counts;
    counts.records_in = built.records_in;
    counts.bytes_in = built.bytes_in;
    counts.failed = built.failed_records;
    counts.rejects = built.rejects;
    for (const auto& obj : built.objects) {
      // One attempt: a failure the runner can retry comes back as is (kUnavailable), and
      // the replay rewrites the same keys with the same bytes.
      bool present = false;
      Status st = Write(bucket, obj.key, obj.body, opts, &present);
      if (!st.ok()) {
        Log({{"eventType", "DeliveryFailed"},
             {"shardId", bctx.shard_id},
             {"destination", bucket + "/" + obj.key},
             {"errorMessage", st.message()}});
        return st.WithContext("Delivery to the destination failed");
      }
      counts.bytes_out += obj.body.size();
      counts.bytes_processed += obj.raw_bytes;
      counts.delivered += obj.records;
      ++counts.deliveries;
      Log({{"eventType", "DeliverySucceeded"},
           {"streamName", config_.stream_name},
           {"shardId", bctx.shard_id},
           {"firstSequenceNumber", obj.first_sequence_number},
           {"lastSequenceNumber", obj.last_sequence_number},
           {"destination", "s3://" + bucket + "/" + obj.key},
           {"records", obj.records},
           {"bytes", obj.body.size()},
           {"alreadyPresent", present}});
    }
    if (built.dlq) {
      objectstore::PutOptions dopts;
      dopts.content_type = "application/x-ndjson";
      if (!env_.local_buckets) dopts.expected_bucket_owner = config_.dlq.expected_bucket_owner;
      bool present = false;
      Status st = Write(dlq_bucket, built.dlq->key, built.dlq->body, dopts, &present);
      if (!st.ok()) {
        Log({{"eventType", "DLQWriteFailed"}, {"errorMessage", st.message()}});
        return st.WithContext("Writing to the dead-letter queue failed");
      }
      counts.dlq_records = built.dlq->records;
      Log({{"eventType", "DLQWrite"},
           {"shardId", bctx.shard_id},
           {"destination", "s3://" + dlq_bucket + "/" + built.dlq->key},
           {"records", built.dlq->records}});
    }
    if (redrive) {
      // The entries' outcomes before the progress moves (the store, after this returns).
      RedriveBatchOutcome outcome =
          RedriveReport(*redrive, source->Missing(), built.redrive_rejects);
      objectstore::PutOptions ropts;
      ropts.content_type = "application/x-ndjson";
      if (!env_.local_buckets) ropts.expected_bucket_owner = config_.dlq.expected_bucket_owner;
      std::string report_key = ReportKey(config_, redrive->id, redrive->from);
      if (Status st = env_.buckets->Put(dlq_bucket, report_key, outcome.report, ropts); !st.ok()) {
        return st.WithContext("Writing the redrive's report failed");
      }
      counts.redrive = outcome.after;
    }
    return counts;
  }

 private:
  // Puts one object of a batch. With create-only keys the object is created only where
  // its key is free (If-None-Match: *); a key that is taken (412) holds this batch's object
  // already when its bytes are these bytes — an earlier attempt whose answer was lost, or
  // another process replaying the same plan (keys and bytes are functions of the plan) —
  // and *present is set. Other bytes under the key are never overwritten: kAlreadyExists
  // (the channel fails with the key in its reason), since either someone else writes
  // there or the batch is no longer what was planned, and neither is delivered by
  // replacing the object.
  Status Write(const std::string& bucket, const std::string& key, std::string_view body,
               objectstore::PutOptions opts, bool* present) {
    *present = false;
    if (!env_.create_only_keys) return env_.buckets->Put(bucket, key, body, opts);
    opts.if_none_match = true;
    Status st = env_.buckets->Put(bucket, key, body, opts);
    if (st.code() != StatusCode::kConflict) return st;
    objectstore::ReadOptions ro;
    ro.expected_bucket_owner = opts.expected_bucket_owner;
    auto held = env_.buckets->Get(bucket, key, ro);
    if (!held.ok()) {
      // Taken, then gone (a lifecycle rule, a person): not ours to judge; retried.
      if (held.status().code() == StatusCode::kNotFound) {
        return Unavailable(fmt::format("s3://{}/{} was there and is gone; retrying", bucket, key));
      }
      return held.status();
    }
    if (*held == body) {
      *present = true;
      return Status::OK();
    }
    return AlreadyExists(fmt::format(
        "s3://{}/{} already holds an object with other bytes ({} bytes, this batch's are {}); "
        "in a pool, S3 channels create their objects and never overwrite one",
        bucket, key, held->size(), body.size()));
  }

  // Whether the store honours If-None-Match: * on PUT (the second create of one key must
  // fail). Stores that ignore it would let two processes overwrite each other's objects
  // unseen: refused (kInvalidArgument, so the channel FAILS with this reason). The probe
  // object is removed again.
  Status ProbeConditionalPut(const std::string& arn, const std::string& owner) {
    ASSIGN_OR_RETURN(std::string bucket, objectstore::BucketFromArn(arn));
    objectstore::PutOptions o;
    o.if_none_match = true;
    o.content_type = "text/plain";
    if (!env_.local_buckets) o.expected_bucket_owner = owner;
    const std::string key = fmt::format("kinesis-channel/probes/{}/conditional-put-{:016x}",
                                        config_.id, crypto::RandomU64());
    RETURN_IF_ERROR(env_.buckets->Put(bucket, key, "icestream conditional PUT probe", o)
                        .WithContext("probing conditional PUT on bucket " + bucket));
    Status again = env_.buckets->Put(bucket, key, "icestream conditional PUT probe", o);
    objectstore::ReadOptions ro;
    ro.expected_bucket_owner = o.expected_bucket_owner;
    (void)env_.buckets->Delete(bucket, key, ro);  // best effort: a leftover probe is tiny
    if (again.code() == StatusCode::kConflict) return Status::OK();
    if (!again.ok()) return again.WithContext("probing conditional PUT on bucket " + bucket);
    return InvalidArgument(fmt::format(
        "the S3 store of bucket {} does not honour conditional PUT (If-None-Match: *): a pool "
        "of processes delivers an S3 channel only to a store that creates objects without "
        "overwriting (AWS S3, Ceph radosgw, ...); deliver this channel from one "
        "`icestream serve` without --pg, or use such a store",
        bucket));
  }

  void Log(nlohmann::json event) {
    if (!env_.log_event) return;
    event["channelARN"] = config_.arn;
    env_.log_event(std::move(event));
  }

  const ChannelConfig config_;
  const KeyTemplate template_;
  SinkEnv env_;
  std::atomic<bool> probed_{false};  // create-only keys: the store's conditional PUT was checked
};

}  // namespace

Status S3Destination::Prepare(ChannelConfig* c) {
  auto& d = c->s3();
  if (d.output_key_template.empty()) d.output_key_template = std::string(kDefaultKeyTemplate);
  if (c->dlq.bucket_arn.empty()) {
    c->dlq.bucket_arn = d.bucket_arn;
    c->dlq.expected_bucket_owner = d.expected_bucket_owner;
  }
  ASSIGN_OR_RETURN(auto tmpl, KeyTemplate::Parse(d.output_key_template, d.compression));
  return tmpl.CheckExpandedLength({c->name, c->id, c->stream_name});
}

Result<std::unique_ptr<Sink>> S3Destination::MakeSink(const ChannelConfig& config, SinkEnv env) {
  ASSIGN_OR_RETURN(auto tmpl,
                   KeyTemplate::Parse(config.s3().output_key_template, config.s3().compression));
  return std::unique_ptr<Sink>(new S3Sink(config, std::move(tmpl), std::move(env)));
}

}  // namespace icestream::delivery::s3
