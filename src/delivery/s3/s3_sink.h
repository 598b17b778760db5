// The S3 destination (kds-delivery-spec.md §3): every batch of one shard becomes objects
// named by the channel's output key template plus a deterministic suffix, holding the
// records' original bytes (validated per RecordFormatType, framed, compressed as a
// whole); invalid records become dead-letter queue lines. A replayed batch rebuilds the
// same keys and bytes, so it overwrites instead of duplicating.
//
// In a pool (SinkEnv::create_only_keys) objects are created, never overwritten: each PUT
// carries If-None-Match: *, and a key already taken counts as delivered only when it holds
// this batch's very bytes (else the channel fails: kAlreadyExists). So no object is
// written twice, and nothing a fenced-off process writes late replaces anything. Check()
// first probes that the store honours the condition (a second create of a probe key
// under kinesis-channel/probes/<channel id>/ must fail) and refuses a store that does not
// (kInvalidArgument: the channel FAILS, its StatusReason says why). One server alone
// keeps overwriting, so stores without conditional PUT still serve it.
#pragma once

#include <memory>

#include "delivery/sink.h"

namespace icestream::delivery::s3 {

class S3Destination final : public Destination {
 public:
  DestinationType type() const override { return DestinationType::kS3; }
  // Fills the default key template and dead-letter queue (the destination bucket under
  // kinesis-channel/errors/<name>/<id>/) and checks the template's rules (§3.3),
  // including its expanded length for this channel's names.
  Status Prepare(ChannelConfig* config) override;
  Result<std::unique_ptr<Sink>> MakeSink(const ChannelConfig& config, SinkEnv env) override;
};

}  // namespace icestream::delivery::s3
