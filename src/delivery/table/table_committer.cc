// One append per batch, checkpoints in the summary.
#include "delivery/table/table_committer.h"

#include <fmt/format.h>

namespace icestream::delivery::table {

Result<CommitOutcome> TableCommitter::Commit(TableOwner* owner, const DeliveryBatch& batch,
                                             const std::vector<iceberg::DataFile>& files,
                                             bool* keep_files) {
  *keep_files = false;
  iceberg::Table* table = owner->table();
  if (table == nullptr) return Internal("commit before the table exists");
  table->SetFence(fence_);
  std::map<std::string, Position> cps = owner->Checkpoints(table->metadata());
  for (const auto& r : batch.ranges) {
    auto& cp = cps[r.shard];
    if (cp < r.end()) cp = r.end();
  }
  std::map<std::string, std::string> summary = {{std::string(kOwnerProperty), config_.arn}};
  for (const auto& [shard, pos] : cps) {
    if (pos.at_start()) continue;
    summary[std::string(kCheckpointPrefix) + shard] = pos.sequence;
    if (pos.sub_sequence) {
      summary[std::string(kCheckpointSubPrefix) + shard] = std::to_string(*pos.sub_sequence);
    }
  }
  const std::string label = owner->Label();
  bool already = false;
  auto check = [&](const iceberg::TableMetadata& m) -> Status {
    RETURN_IF_ERROR(owner->CheckUnchanged(m));
    auto held = owner->Checkpoints(m);
    size_t in = 0;
    for (const auto& r : batch.ranges) {
      auto it = held.find(r.shard);
      Position h = it == held.end() ? Position{} : it->second;
      if (!(h < r.end())) {
        ++in;
      } else if (r.after < h) {
        return InvalidArgument(fmt::format(
            "Table {} holds shard {} up to {}, inside the batch {} to {} being committed; another "
            "writer commits as this channel.",
            label, r.shard, h.sequence, PositionText(r.after), r.last_sequence));
      }
    }
    if (in == batch.ranges.size()) {
      already = true;
      return AlreadyExists("the batch is in the table already");
    }
    if (in > 0) {
      return InvalidArgument(fmt::format(
          "Table {} holds part of the batch being committed; another writer commits as this "
          "channel.",
          label));
    }
    return Status::OK();
  };
  auto committed = table->AppendFiles(files, summary, check);
  CommitOutcome out;
  if (committed.ok()) {
    out.result = *committed;
    owner->NoteMetadata(table->metadata());
    return out;
  }
  if (already) {
    out.already_in = true;
    return out;
  }
  const Status& st = committed.status();
  if (env_.log_event)
    env_.log_event({{"eventType", "CommitFailed"}, {"errorMessage", st.message()}});
  if (st.code() == StatusCode::kUnknownOutcome) {
    *keep_files = true;
    return Unavailable(fmt::format(
        "The outcome of the commit to table {} is unknown ({}); the batch is checked against the "
        "table and retried.",
        label, st.message()));
  }
  if (st.code() == StatusCode::kNotFound) {
    return NotFound(fmt::format("The table {} is gone: {}", label, st.message()));
  }
  return st.WithContext(fmt::format("Commit to table {}", label));
}

}  // namespace icestream::delivery::table
