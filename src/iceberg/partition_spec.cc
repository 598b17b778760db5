// Partition specs (Iceberg spec "Partitioning").
#include "iceberg/partition_spec.h"

#include <set>

#include <fmt/format.h>

namespace icestream::iceberg {

namespace {

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '*') {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';  // java.net.URLEncoder, as Java writers use
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

Result<std::vector<NestedField>> PartitionType(const PartitionSpec& spec, const Schema& schema) {
  std::vector<NestedField> fields;
  fields.reserve(spec.fields.size());
  for (const auto& pf : spec.fields) {
    const NestedField* source = FindField(schema, pf.source_id);
    if (source == nullptr) {
      return InvalidArgument(fmt::format("partition field '{}' has unknown source column id {}",
                                         pf.name, pf.source_id));
    }
    NestedField f;
    f.id = pf.field_id;
    f.name = pf.name;
    f.required = false;
    if (pf.transform.kind == TransformKind::kUnknown) {
      return InvalidArgument(fmt::format("partition field '{}' uses unknown transform '{}'", pf.name,
                                         pf.transform.unknown_name));
    }
    ASSIGN_OR_RETURN(f.type, TransformResultType(pf.transform, source->type));
    fields.push_back(std::move(f));
  }
  return fields;
}

Status ValidatePartitionSpec(const PartitionSpec& spec, const Schema& schema) {
  std::set<std::string> names;
  std::set<int32_t> ids;
  for (const auto& pf : spec.fields) {
    if (pf.name.empty()) return InvalidArgument("partition field without a name");
    if (!names.insert(pf.name).second) {
      return InvalidArgument("partition field name '" + pf.name + "' is used twice");
    }
    if (!ids.insert(pf.field_id).second) {
      return InvalidArgument(fmt::format("partition field id {} is used twice", pf.field_id));
    }
    // A partition name may only equal a column name when it is that column's identity.
    for (const auto& col : schema.fields) {
      if (col.name == pf.name &&
          !(pf.transform.kind == TransformKind::kIdentity && col.id == pf.source_id)) {
        return InvalidArgument("partition field name '" + pf.name + "' conflicts with a column");
      }
    }
  }
  return PartitionType(spec, schema).status();
}

std::string PartitionPath(const PartitionSpec& spec, const PartitionTuple& partition) {
  std::string path;
  for (size_t i = 0; i < spec.fields.size() && i < partition.size(); ++i) {
    if (i) path += '/';
    path += UrlEncode(spec.fields[i].name);
    path += '=';
    path += UrlEncode(TransformHumanString(spec.fields[i].transform, partition[i]));
  }
  return path;
}

}  // namespace icestream::iceberg
