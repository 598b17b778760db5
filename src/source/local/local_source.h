// The local record source: channels of this server read its own shard logs directly
// (no GetRecords quota, no network), through the delivery engine's ShardSource seam.
// Positions are icestream sequence numbers; each names (stream, shard, offset), so a
// position resolves to a log offset in O(1) (docs/formats/log.md, "Sequence numbers").
// Chunks are views into the log's read buffers: a record's bytes are read once, its
// checksum verified once, and not copied again on the way to the sink.
//
// Retention: LocalSourceProvider::RetentionFloor turns what channels still need (a
// position) into the offset the shard log must keep.
//
// Thread-safety: as ShardSource / SourceProvider (the stream manager is thread-safe).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "delivery/shard_source.h"
#include "delivery/sqlite_delivery_store.h"
#include "stream/stream_manager.h"

namespace icestream::source {

class LocalSourceProvider final : public delivery::SourceProvider {
 public:
  // `streams` must outlive the provider and every source it opens.
  explicit LocalSourceProvider(stream::StreamManager* streams) : streams_(streams) {}

  Result<delivery::SourceStream> DescribeStream(const std::string& name) override;
  Result<std::shared_ptr<delivery::ShardSource>> OpenSource(
      const delivery::ChannelConfig& channel) override;

  // The log offset to keep for a needed position (nullopt: nothing needed).
  static uint64_t RetentionFloor(const std::optional<delivery::Position>& needed);

 private:
  stream::StreamManager* streams_;
};

// The position after records [0, next_offset) of a local shard: what meta.db's offset
// checkpoints of earlier versions become (SqliteDeliveryStore's LegacyPosition).
delivery::Position LegacyPosition(uint64_t stream_uid, uint32_t shard_index, uint64_t next_offset);

}  // namespace icestream::source
