// Inline compaction of a table channel's data files.
#include "delivery/table/compactor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/crypto.h"
#include "format/parquet/file_reader.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "iceberg/parquet/data_file.h"
#include "iceberg/table_files.h"

namespace icestream::delivery::table {

namespace pq = format::parquet;

double CompactionStats::write_amplification() const {
  int64_t a = bytes_appended.load();
  return a == 0 ? 1.0 : static_cast<double>(a + bytes_rewritten.load()) / static_cast<double>(a);
}

Compactor::Compactor(std::string channel_id, std::string channel_arn, CompactionOptions options,
                     const Clock* clock, std::function<void(nlohmann::json)> log)
    : channel_id_(std::move(channel_id)),
      channel_arn_(std::move(channel_arn)),
      options_(options),
      clock_(clock),
      log_(std::move(log)) {}

LiveFile Compactor::Describe(const iceberg::DataFile& f, int64_t added_ms) const {
  LiveFile l;
  l.path = f.file_path;
  l.size = f.file_size_in_bytes;
  l.records = f.record_count;
  l.spec_id = f.spec_id;
  l.partition = !f.partition.empty() && f.partition[0] &&
                        std::holds_alternative<int32_t>(f.partition[0]->value)
                    ? f.partition[0]->as_int()
                    : INT64_MIN;  // not an hour partition: never merged with hour files
  l.added_ms = added_ms;
  l.nan_counts = f.nan_value_counts;
  size_t slash = f.file_path.rfind('/');
  std::string_view name =
      std::string_view(f.file_path).substr(slash == std::string::npos ? 0 : slash + 1);
  l.merged = name.starts_with(channel_id_ + "-m-");
  return l;
}

void Compactor::Count() {
  int64_t bytes = 0;
  for (const auto& [p, f] : index_) bytes += f.size;
  stats_.live_files = static_cast<int64_t>(index_.size());
  stats_.live_bytes = bytes;
}

Status Compactor::LoadIndex(const iceberg::TableMetadata& m, const iceberg::FileIO* io) {
  const iceberg::Snapshot* cur = m.CurrentSnapshot();
  int64_t id = cur ? cur->snapshot_id : -1;
  if (id == index_snapshot_) return Status::OK();
  index_.clear();
  if (cur != nullptr) {
    ASSIGN_OR_RETURN(auto entries, iceberg::LiveEntries(*io, *cur));
    for (const auto& e : entries) {
      if (e.data_file.content != iceberg::FileContent::kData) continue;
      const iceberg::Snapshot* added = e.snapshot_id ? m.SnapshotById(*e.snapshot_id) : nullptr;
      index_[e.data_file.file_path] = Describe(e.data_file, added ? added->timestamp_ms : 0);
    }
  }
  index_snapshot_ = id;
  Count();
  return Status::OK();
}

void Compactor::Appended(const iceberg::TableMetadata& after, int64_t snapshot,
                         const std::vector<iceberg::DataFile>& files) {
  int64_t appended = 0;
  for (const auto& f : files) appended += f.file_size_in_bytes;
  stats_.bytes_appended += appended;
  const iceberg::Snapshot* s = after.SnapshotById(snapshot);
  int64_t parent = s && s->parent_snapshot_id ? *s->parent_snapshot_id : -1;
  if (s == nullptr || parent != index_snapshot_) {
    Invalidate();  // another writer committed in between: reload before the next plan
    return;
  }
  for (const auto& f : files) index_[f.file_path] = Describe(f, s->timestamp_ms);
  index_snapshot_ = snapshot;
  Count();
}

Result<std::vector<iceberg::DataFile>> Compactor::Merge(
    const iceberg::DataFileLocator& locator, const iceberg::FileIO* io, const TableLayout& layout,
    const pq::WriterOptions& writer, const CompactionTask& task, std::vector<std::string>* written,
    int64_t* copied_as_is) {
  const std::string attempt = crypto::RandomUuid().substr(0, 8);
  const iceberg::PartitionTuple partition = {
      iceberg::Literal::Int(static_cast<int32_t>(task.partition))};
  std::vector<iceberg::DataFile> out;
  std::string bytes;
  std::unique_ptr<pq::StringOutputStream> stream;
  std::unique_ptr<pq::FileWriter> w;
  auto open = [&]() -> Status {
    bytes.clear();
    stream = std::make_unique<pq::StringOutputStream>(&bytes);
    ASSIGN_OR_RETURN(w, pq::FileWriter::Make(layout.schema.schema, stream.get(), writer));
    return Status::OK();
  };
  auto close = [&]() -> Status {
    ASSIGN_OR_RETURN(pq::FileMetrics m, w->Close());
    w.reset();
    if (m.record_count == 0) return Status::OK();
    std::string path = locator.Location(
        partition, fmt::format("{}-m-{}-{:05d}.parquet", channel_id_, attempt, out.size()));
    written->push_back(path);
    RETURN_IF_ERROR(io->Write(path, bytes));
    out.push_back(iceberg::ParquetDataFile(m, path, partition, task.spec_id));
    return Status::OK();
  };
  // Fresh files go into a merged file as they are (their row groups copied, not decoded
  // and compressed again); the merge of merged files into files of the target size, and
  // a quiet partition's finish, write whole row groups anew, so that the files a table
  // keeps have row groups of the writer's size.
  const bool as_is =
      !task.cut_at_target && std::none_of(task.inputs.begin(), task.inputs.end(),
                                          [](const LiveFile& f) { return f.merged; });
  RETURN_IF_ERROR(open());
  for (const auto& in : task.inputs) {
    ASSIGN_OR_RETURN(std::string file, io->Read(in.path));
    auto reader = pq::ParquetFileReader::Open(file);
    if (!reader.ok()) return reader.status().WithContext("compaction input " + in.path);
    if (as_is) {
      Status st = w->AppendFileAsIs(**reader, in.nan_counts);
      if (st.ok()) {
        ++*copied_as_is;
        continue;
      }
      if (st.code() != StatusCode::kFailedPrecondition) {
        return st.WithContext("compaction input " + in.path);
      }
      // Another schema or writer: its rows are copied.
    }
    for (int rg = 0; rg < (*reader)->num_row_groups(); ++rg) {
      Status st = (*reader)->CopyRowGroup(rg, w.get());
      if (!st.ok()) return st.WithContext("compaction input " + in.path);
      if (task.cut_at_target && static_cast<int64_t>(bytes.size()) >= options_.target_size) {
        RETURN_IF_ERROR(close());
        RETURN_IF_ERROR(open());
      }
    }
  }
  RETURN_IF_ERROR(close());
  return out;
}

Status Compactor::Run(iceberg::Table* table, const iceberg::FileIO* io, const TableLayout& layout,
                      const pq::WriterOptions& writer, const iceberg::CommitCheck& check,
                      int64_t budget_ms, std::unique_lock<std::mutex>* unlocked) {
  const int64_t start = clock_->NowMillis();
  RETURN_IF_ERROR(LoadIndex(table->metadata(), io));
  std::vector<LiveFile> live;
  live.reserve(index_.size());
  for (const auto& [p, f] : index_) live.push_back(f);
  for (const auto& task : PlanCompaction(live, start, options_)) {
    if (clock_->NowMillis() - start >= budget_ms) break;
    std::vector<std::string> written;
    auto cleanup = [&] {
      for (const auto& p : written) (void)io->Delete(p);
    };
    const iceberg::DataFileLocator locator = table->Locator();
    if (unlocked) unlocked->unlock();
    int64_t copied_as_is = 0;
    auto outputs = Merge(locator, io, layout, writer, task, &written, &copied_as_is);
    if (unlocked) unlocked->lock();
    if (!outputs.ok()) {
      cleanup();
      if (outputs.status().code() == StatusCode::kNotFound) {  // an input is gone: replan
        Invalidate();
        return Status::OK();
      }
      return outputs.status();
    }
    std::vector<std::string> deleted;
    for (const auto& in : task.inputs) deleted.push_back(in.path);
    const int64_t parent =
        table->metadata().CurrentSnapshot() ? table->metadata().CurrentSnapshot()->snapshot_id : -1;
    auto r =
        table->ReplaceFiles(deleted, *outputs, {{"icestream.compacted-by", channel_arn_}}, check);
    if (!r.ok()) {
      if (r.status().code() != StatusCode::kUnknownOutcome) cleanup();
      Invalidate();
      if (r.status().code() == StatusCode::kConflict) {  // lost to another writer: plan again later
        ++stats_.conflicts;
        return Status::OK();
      }
      return r.status();
    }
    int64_t out_bytes = 0;
    for (const auto& f : *outputs) out_bytes += f.file_size_in_bytes;
    stats_.bytes_rewritten += out_bytes;
    stats_.files_merged += static_cast<int64_t>(task.inputs.size());
    stats_.files_copied_as_is += copied_as_is;
    stats_.files_written += static_cast<int64_t>(outputs->size());
    ++stats_.commits;
    if (parent == index_snapshot_ && r->attempts == 1) {
      for (const auto& p : deleted) index_.erase(p);
      int64_t now = clock_->NowMillis();
      for (const auto& f : *outputs) index_[f.file_path] = Describe(f, now);
      index_snapshot_ = r->snapshot_id;
      Count();
    } else {
      Invalidate();
    }
    if (log_) {
      log_({{"eventType", "CompactionSucceeded"},
            {"snapshotId", r->snapshot_id},
            {"filesMerged", task.inputs.size()},
            {"filesWritten", outputs->size()},
            {"bytesRead", task.input_bytes},
            {"bytesWritten", out_bytes}});
    }
    if (index_snapshot_ < 0) RETURN_IF_ERROR(LoadIndex(table->metadata(), io));
  }
  return Status::OK();
}

}  // namespace icestream::delivery::table
