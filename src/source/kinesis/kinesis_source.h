// The Kinesis record source: channels read any Kinesis endpoint through the public API —
// another icestream server, kinesalite or AWS Kinesis itself (the same code path) — as
// scale-out workers do (`icestream worker --source URL`).
//
// Reading (scale-out.md §4): ListShards for the shards and their lineage (cached for a
// second; ShardFilter AFTER_SHARD_ID past the closed shards already known, falling back to
// plain listings for an endpoint that refuses ShardFilter); per shard a reader thread, started when
// the engine asks about the shard and stopped when it stops asking, follows the shard with
// GetShardIterator + GetRecords:
//   - GetRecords in CBOR where the endpoint speaks it (the data as raw bytes, read in
//     place from the answer), else JSON 1.1 (KinesisSourceOptions::cbor);
//   - from the channel's position: AFTER_SEQUENCE_NUMBER (AT_SEQUENCE_NUMBER when the
//     position is inside a KPL aggregate), TRIM_HORIZON at the start, AT_TIMESTAMP for a
//     time (positions "@ms", where LATEST and AT_TIMESTAMP starts begin);
//   - every per-shard call (the reader's, a replay's, a describe's) through the shard's
//     ShardPacer (shard_pacer.h): at most `max_calls_per_second` GetRecords and as many
//     GetShardIterator per shard (AWS's limit is 5; counted from the calls' starts), and
//     with `pace_reads` AWS's 2 MiB/s; a quiet shard every `poll_interval_ms`, the next
//     call as soon as the pacer allows while MillisBehindLatest > 0;
//   - ProvisionedThroughputExceededException / LimitExceededException back off (at least a
//     second); ExpiredIteratorException (a reader paused longer than the iterator's life)
//     gets a new iterator from the last record read, at once;
//   - a null NextShardIterator is the shard's end (children come from ListShards).
// What it read waits in a buffer per shard (bounded per shard and for all shards together:
// KinesisSourceOptions); the engine plans batches from it and
// reads them from it (views into the answers' decoded bytes). A batch replayed after a
// restart, whose records are no longer buffered, is read again directly from its start.
// Sequence numbers are compared as numbers (kinesalite's and moto's differ in length).
//
// The stream is the channel's only while its creation time is the channel's: a stream
// deleted and re-created under the same name is another stream (kNotFound).
//
// Thread-safety: as ShardSource (readers run on their own threads).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "delivery/shard_source.h"
#include "source/kinesis/aws_json_client.h"
#include "source/kinesis/shard_pacer.h"

namespace icestream::source {

struct KinesisSourceOptions {
  AwsEndpoint endpoint;  // service "kinesis", target "Kinesis_20131202." are filled in
  int64_t poll_interval_ms = 1000;
  int max_calls_per_second = 5;
  int get_records_limit = 10000;
  // What a shard's reader holds ahead of the engine: up to `max_buffered_bytes_per_shard`
  // (two batches of delivery.max_batch_bytes: the next one is read while one converts),
  // but past `reserved_bytes_per_shard` (one batch, always allowed) only while the readers
  // of the provider hold less than `max_buffered_bytes_total` together, so a worker with
  // many shards stays within a bounded memory.
  size_t max_buffered_bytes_per_shard = 64u << 20;
  size_t reserved_bytes_per_shard = 32u << 20;
  size_t max_buffered_bytes_total = 256u << 20;
  // Pace reads to AWS's 2 MiB/s per shard (after a 10 MiB answer the shard's next
  // GetRecords waits 4 s), so a worker is not throttled for its own reads and leaves the
  // shard's shared read budget to other consumers. Off for endpoints without that limit
  // (icestream, kinesalite): there only a throttling answer slows the reader down.
  // Default: on for *.amazonaws.com endpoints (PaceReadsFor); [scaleout] pace_reads.
  bool pace_reads = false;
  // GetRecords in CBOR (application/x-amz-cbor-1.1) where the endpoint speaks it, else
  // JSON 1.1 (learned from its first answers; every other call is JSON).
  bool cbor = true;
  // A reader stops when the engine has not asked about its shard for this long.
  int64_t idle_reader_ms = 15000;
  // Shard discovery: the list is kept this long; every `full_listing_ms` (and first) every
  // shard is listed (ShardFilter FROM_TRIM_HORIZON), in between only the shards after the
  // leading run of closed ones (ShardFilter AFTER_SHARD_ID: closed shards do not change).
  int64_t shard_list_ms = 1000;
  int64_t full_listing_ms = 60000;
};

class KinesisApi;  // the endpoint's client (kinesis_source.cc)

class KinesisSourceProvider final : public delivery::SourceProvider {
 public:
  static Result<std::unique_ptr<KinesisSourceProvider>> Make(KinesisSourceOptions options);

  Result<delivery::SourceStream> DescribeStream(const std::string& name) override;
  Result<std::shared_ptr<delivery::ShardSource>> OpenSource(
      const delivery::ChannelConfig& channel) override;

 private:
  KinesisSourceProvider(KinesisSourceOptions options, std::shared_ptr<KinesisApi> client,
                        std::shared_ptr<ShardPacers> pacers)
      : options_(std::move(options)), client_(std::move(client)), pacers_(std::move(pacers)) {}
  KinesisSourceOptions options_;
  std::shared_ptr<KinesisApi> client_;
  // One pacer per (stream, shard) for every source opened here.
  std::shared_ptr<ShardPacers> pacers_;
  // Bytes buffered by every reader of every source opened here.
  std::shared_ptr<std::atomic<uint64_t>> buffered_ = std::make_shared<std::atomic<uint64_t>>(0);
};

// Whether reads from `url` are paced by default: AWS's endpoints (*.amazonaws.com,
// *.amazonaws.com.cn).
bool PaceReadsFor(const std::string& url);

}  // namespace icestream::source
