// Group-commit threads.
#include "log/committer.h"

#include "log/shard_log.h"

namespace icestream::log {

Committer::Committer(size_t threads) {
  if (threads == 0) threads = 1;
  for (size_t i = 0; i < threads; ++i) {
    auto lane = std::make_unique<Lane>();
    Lane* raw = lane.get();
    lane->thread = std::thread([this, raw] { Run(raw); });
    lanes_.push_back(std::move(lane));
  }
}

Committer::~Committer() { Stop(); }

size_t Committer::AssignSlot() {
  std::lock_guard lock(assign_mu_);
  return next_slot_++ % lanes_.size();
}

void Committer::Schedule(std::shared_ptr<ShardLog> log, size_t slot) {
  Lane* lane = lanes_[slot % lanes_.size()].get();
  {
    std::lock_guard lock(lane->mu);
    lane->queue.push_back(std::move(log));
  }
  lane->cv.notify_one();
}

void Committer::Run(Lane* lane) {
  std::vector<std::shared_ptr<ShardLog>> batch;
  std::vector<ShardLog::FlushJob> jobs;
  for (;;) {
    {
      std::unique_lock lock(lane->mu);
      lane->cv.wait(lock, [&] { return lane->stopping || !lane->queue.empty(); });
      if (lane->queue.empty() && lane->stopping) return;
      batch.swap(lane->queue);
    }
    // Phase 1: write every shard's queued bytes; phase 2: sync each and acknowledge.
    // Writing all before syncing any lets the kernel start writeback of all of them.
    jobs.clear();
    jobs.resize(batch.size());
    std::vector<bool> wrote(batch.size(), false);
    for (size_t i = 0; i < batch.size(); ++i) wrote[i] = batch[i]->TakeAndWrite(&jobs[i]);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (wrote[i]) batch[i]->SyncAndPublish(&jobs[i]);
    }
    batch.clear();
  }
}

void Committer::Stop() {
  {
    std::lock_guard lock(assign_mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  for (auto& lane : lanes_) {
    {
      std::lock_guard lock(lane->mu);
      lane->stopping = true;
    }
    lane->cv.notify_all();
  }
  for (auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
}

}  // namespace icestream::log
