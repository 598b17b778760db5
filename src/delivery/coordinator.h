// Coordinator: which parts of the channels this process delivers when several processes
// share them (scale-out workers on PostgreSQL: scaleout/lease_manager.h). Null on one
// server, where everything is this process's.
//
// Work is cut into lease units per channel:
//   "control"        the channel's lifecycle (activation, deletion) and its sink notes;
//   "shard:<id>"     one shard of a channel whose sink delivers shard by shard (S3);
//   "channel"        the whole of a channel whose sink spans shards (a table: one commit
//                    for every shard) — it also stands for "control".
// A unit is held with an epoch that changes every time its owner changes; every durable
// write of a unit's state checks (owner, epoch) in the same transaction, so a process that
// lost a unit (paused, partitioned, superseded) writes nothing.
//
// Thread-safety: implementations are safe to call from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace icestream::delivery {

inline constexpr const char* kControlUnit = "control";
inline constexpr const char* kChannelUnit = "channel";
inline std::string ShardUnit(const std::string& shard) { return "shard:" + shard; }

class Coordinator {
 public:
  virtual ~Coordinator() = default;

  // The epoch under which this process holds `unit` of the channel; 0 when it does not.
  virtual uint64_t HeldEpoch(const std::string& channel_id, const std::string& unit) const = 0;
  // The units a channel has now (lease rows are made for them; others take them too).
  virtual void Offer(const std::string& channel_id, const std::vector<std::string>& units) = 0;
  // The channel is gone: its units are dropped.
  virtual void Forget(const std::string& channel_id) = 0;
  // This process's identity (for status): host:pid:uuid.
  virtual std::string owner() const = 0;

  // Handing a unit over gracefully: the engine says while a batch of a unit is running
  // (SetBusy), and starts no batch of a unit that is Draining — one this process is about
  // to hand over (it holds more than its share); the unit goes once its batch is done, so
  // no batch's work is thrown away by a hand-over. Defaults: no draining.
  virtual void SetBusy(const std::string& channel_id, const std::string& unit, bool busy) {
    (void)channel_id;
    (void)unit;
    (void)busy;
  }
  virtual bool Draining(const std::string& channel_id, const std::string& unit) const {
    (void)channel_id;
    (void)unit;
    return false;
  }

  // Calls `taken` (on the coordinator's own thread) each time this process has taken units,
  // until the returned handle is released (a call under way ends first): the engine starts
  // their work at once, not at its next tick (up to 50 ms for a channel's control, and
  // again for its shards, of a backlog a single process delivers in about a second).
  // `taken` must be quick. Null (this default): no calls.
  virtual std::shared_ptr<void> WatchTaken(std::function<void()> taken) {
    (void)taken;
    return nullptr;
  }
  // Who holds each unit of a channel across the pool now (for status): unit → owner and
  // epoch; an empty owner for a unit nobody holds (or whose lease expired).
  struct UnitOwner {
    std::string owner;
    uint64_t epoch = 0;
  };
  virtual Result<std::map<std::string, UnitOwner>> Owners(const std::string& channel_id) const = 0;
};

}  // namespace icestream::delivery
