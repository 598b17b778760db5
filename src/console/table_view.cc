// Table files and sample rows.
#include "console/table_view.h"

#include <map>

#include "iceberg/parquet/table_scan.h"
#include "iceberg/partition_spec.h"

namespace icestream::console {
namespace {

const char* ContentName(iceberg::FileContent c) {
  switch (c) {
    case iceberg::FileContent::kData:
      return "data";
    case iceberg::FileContent::kPositionDeletes:
      return "position-deletes";
    case iceberg::FileContent::kEqualityDeletes:
      return "equality-deletes";
  }
  return "data";
}

}  // namespace

Result<nlohmann::json> TableFiles(const iceberg::FileIO& io, const iceberg::TableMetadata& metadata,
                                  std::optional<int64_t> snapshot_id) {
  ASSIGN_OR_RETURN(iceberg::ScanPlan plan, iceberg::PlanScan(io, metadata, snapshot_id));
  nlohmann::json out = {{"snapshot_id", nullptr},
                        {"files", nlohmann::json::array()},
                        {"partitions", nlohmann::json::array()}};
  if (!plan.snapshot) return out;
  out["snapshot_id"] = std::to_string(plan.snapshot->snapshot_id);
  struct Totals {
    int64_t files = 0, bytes = 0, records = 0, delete_files = 0;
  };
  std::map<std::string, Totals> partitions;
  for (const auto* list : {&plan.data_files, &plan.delete_files}) {
    for (const auto& e : *list) {
      const auto& f = e.data_file;
      const iceberg::PartitionSpec* spec = metadata.SpecById(f.spec_id);
      std::string partition = spec ? iceberg::PartitionPath(*spec, f.partition) : std::string();
      out["files"].push_back(
          {{"path", f.file_path},
           {"content", ContentName(f.content)},
           {"partition", partition},
           {"spec_id", f.spec_id},
           {"record_count", f.record_count},
           {"file_size_in_bytes", f.file_size_in_bytes},
           {"sequence_number", e.sequence_number.value_or(0)},
           {"snapshot_id", e.snapshot_id ? std::to_string(*e.snapshot_id) : ""}});
      Totals& t = partitions[partition];
      if (f.content == iceberg::FileContent::kData) {
        ++t.files;
        t.bytes += f.file_size_in_bytes;
        t.records += f.record_count;
      } else {
        ++t.delete_files;
      }
    }
  }
  for (const auto& [p, t] : partitions) {
    out["partitions"].push_back({{"partition", p},
                                 {"files", t.files},
                                 {"bytes", t.bytes},
                                 {"records", t.records},
                                 {"delete_files", t.delete_files}});
  }
  return out;
}

Result<std::string> TableRows(const iceberg::FileIO& io, const iceberg::TableMetadata& metadata,
                              std::optional<int64_t> snapshot_id, int64_t limit) {
  ASSIGN_OR_RETURN(iceberg::ScanPlan plan, iceberg::PlanScan(io, metadata, snapshot_id));
  std::string rows = "[";
  int64_t n = 0;
  bool truncated = false;
  if (plan.snapshot) {
    iceberg::ScanFilter filter;
    filter.limit = limit + 1;
    RETURN_IF_ERROR(iceberg::ScanRows(io, plan, filter, [&](std::string_view row) {
      if (n == limit) {
        truncated = true;
        return false;
      }
      if (n++ > 0) rows += ',';
      rows += row;
      return true;
    }));
  }
  rows += ']';
  nlohmann::json head = {
      {"snapshot_id",
       plan.snapshot ? nlohmann::json(std::to_string(plan.snapshot->snapshot_id)) : nullptr},
      {"schema_id", plan.schema.schema_id},
      {"limit", limit},
      {"truncated", truncated}};
  std::string text = head.dump();
  text.pop_back();  // '}'
  return text + ",\"rows\":" + rows + "}";
}

}  // namespace icestream::console
