// S3 sink: batch → objects (+ DLQ object) → uploads with retries.
#include "delivery/s3/s3_sink.h"

#include <fmt/format.h>

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
      RETURN_IF_ERROR(check(config_.dlq.bucket_arn, config_.dlq.expected_bucket_owner, "dead-letter queue"));
    }
    return Status::OK();
  }

  Result<std::map<std::string, Position>> Checkpoints() override {
    return std::map<std::string, Position>{};
  }

  Result<DeliveryCounts> Deliver(const DeliveryBatch& batch, RecordSource* source) override {
    if (batch.ranges.size() != 1) return Internal("an S3 batch covers exactly one shard");
    BatchContext bctx{&config_, &template_, batch.ranges[0].shard, env_.compression_level,
                      batch.attempt_ms};
    BatchBuilder builder(bctx);
    RecordChunk chunk;
    for (;;) {
      ASSIGN_OR_RETURN(bool more, source->Next(&chunk));
      if (!more) break;
      for (const auto& rec : chunk.records) {
        RETURN_IF_ERROR(builder.Add({rec.sequence_number, rec.ordinal, rec.arrival_ms, rec.data,
                                     rec.sub_sequence, rec.error}));
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
    opts.content_type = config_.record_format == RecordFormat::kByteArray ? "application/octet-stream"
                        : config_.record_format == RecordFormat::kString  ? "text/plain"
                                                                           : "application/x-ndjson";
    DeliveryCounts counts;
    counts.records_in = built.records_in;
    counts.bytes_in = built.bytes_in;
    counts.failed = built.failed_records;
    for (const auto& obj : built.objects) {
      // One attempt: a failure the runner can retry comes back as is (kUnavailable), and
      // the replay rewrites the same keys with the same bytes.
      Status st = env_.buckets->Put(bucket, obj.key, obj.body, opts);
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
           {"bytes", obj.body.size()}});
    }
    if (built.dlq) {
      objectstore::PutOptions dopts;
      dopts.content_type = "application/x-ndjson";
      if (!env_.local_buckets) dopts.expected_bucket_owner = config_.dlq.expected_bucket_owner;
      Status st = env_.buckets->Put(dlq_bucket, built.dlq->key, built.dlq->body, dopts);
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
    return counts;
  }

 private:
  void Log(nlohmann::json event) {
    if (!env_.log_event) return;
    event["channelARN"] = config_.arn;
    env_.log_event(std::move(event));
  }

  const ChannelConfig config_;
  const KeyTemplate template_;
  SinkEnv env_;
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
  ASSIGN_OR_RETURN(auto tmpl, KeyTemplate::Parse(config.s3().output_key_template, config.s3().compression));
  return std::unique_ptr<Sink>(new S3Sink(config, std::move(tmpl), std::move(env)));
}

}  // namespace icestream::delivery::s3
