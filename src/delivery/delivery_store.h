// DeliveryStore: the delivery engine's durable state behind one interface — channels,
// per-shard checkpoints, in-flight batch plans, "shard finished" marks and the sinks'
// own notes, and the channel's DLQ redrives. SqliteDeliveryStore (meta.db, one server) is the first
// implementation; the scale-out store keeps the same rows in PostgreSQL, where workers on many
// machines share them.
//
// A checkpoint is the Position of the last delivered record of a shard. A plan (the
// ranges of a batch) is written before the batch is delivered and removed in the same
// transaction that moves the checkpoints past it, so after a crash the exact batch is
// delivered again (same ranges, same attempt time) before anything new. A batch that
// spans shards (a table commit) has one plan row per shard, written and removed
// together. A shard is marked finished (delivered to its end) in the transaction that
// moves its checkpoint to its end; children of a shard are delivered only once every
// parent is finished, and the marks let any process see that.
//
// Thread-safety: implementations are safe to call from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "delivery/channel.h"
#include "delivery/position.h"

namespace icestream::delivery {

// Subcodes of DeliveryStore (and table fence) statuses.
enum class StoreError {
  // A scale-out write refused because this process no longer holds the unit's lease
  // (another process took it over): kFailedPrecondition with this subcode. Nothing is
  // wrong with the destination; the unit is someone else's now.
  kFenced = 1,
};

// FailedPrecondition(message) with StoreError::kFenced.
inline Status Fenced(std::string message) {
  return WithSubcode(FailedPrecondition(std::move(message)), StoreError::kFenced);
}

struct BatchPlan {
  Position after;
  std::string last_sequence;  // inclusive
  uint64_t records = 0;
  // When the batch was first attempted (the DLQ lines' attemptTimestamp); kept so a
  // replay rebuilds the same bytes.
  int64_t attempt_ms = 0;
  bool operator==(const BatchPlan&) const = default;
};

class DeliveryStore {
 public:
  virtual ~DeliveryStore() = default;

  virtual Result<std::vector<ChannelConfig>> LoadChannels() = 0;
  // Calls `changed` soon after any process changes the channel list (and whenever a
  // change may have been missed), until the returned handle is released; `changed` must be
  // quick and may run on another thread. Null (this default): no calls — the list is read
  // again on a schedule only.
  virtual std::shared_ptr<void> WatchChannels(std::function<void()> changed) {
    (void)changed;
    return nullptr;
  }
  virtual Status SaveChannel(const ChannelConfig& c) = 0;
  // Removes the channel with its checkpoints, plans, marks and notes.
  virtual Status RemoveChannel(const std::string& id) = 0;

  // shard id → checkpoint.
  virtual Result<std::map<std::string, Position>> Checkpoints(const std::string& id) = 0;
  // Sets the checkpoints where delivery starts and saves the channel document, in one
  // transaction (CREATING → ACTIVE).
  virtual Status Activate(const ChannelConfig& c,
                          const std::map<std::string, Position>& checkpoints) = 0;

  // shard id → plan, every plan of the channel.
  virtual Result<std::map<std::string, BatchPlan>> Plans(const std::string& id) = 0;
  // Saves the plans of one batch in one transaction.
  virtual Status SavePlans(const std::string& id,
                           const std::map<std::string, BatchPlan>& plans) = 0;
  // Moves the checkpoints, drops the plans of those shards and marks `finished` shards,
  // atomically.
  virtual Status Commit(const std::string& id, const std::map<std::string, Position>& checkpoints,
                        const std::set<std::string>& finished = {}) = 0;
  virtual Result<std::set<std::string>> FinishedShards(const std::string& id) = 0;

  // The sink's document (null when it never saved one).
  virtual Result<nlohmann::json> LoadSinkState(const std::string& id) = 0;
  virtual Status SaveSinkState(const std::string& id, const nlohmann::json& doc) = 0;

  // The channel's DLQ redrives (redrive.h: RedriveStateToJson documents), oldest first
  // (by created_ms, then id).
  virtual Result<std::vector<nlohmann::json>> LoadRedrives(const std::string& id) = 0;
  // Inserts or replaces the document of redrive `redrive_id`: its status, progress and
  // the plan of its batch in flight are one document, so they change together in one
  // write (for S3 destinations this write is what moves a redrive past a batch).
  virtual Status SaveRedrive(const std::string& id, const std::string& redrive_id,
                             int64_t created_ms, const nlohmann::json& doc) = 0;
};

}  // namespace icestream::delivery
