// Manifests and manifest lists in Avro (Iceberg spec "Manifests", "Manifest Lists",
// Appendix A "Avro"; formats.md §C.5, §C.6).
#include "iceberg/manifest_avro.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format/avro/container.h"
#include "format/avro/encoding.h"
#include "iceberg/schema/schema_json.h"
#include "iceberg/table_metadata_json.h"

namespace icestream::iceberg {

namespace avro = format::avro;
using ojson = nlohmann::ordered_json;

namespace {

// ---------------------------------------------------------------------------------
// Iceberg type -> Avro schema JSON (Appendix A, "Avro").

bool ValidAvroName(std::string_view n) {
  if (n.empty() || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Java's AvroSchemaUtil.makeCompatibleName: invalid characters become _x<HEX>.
std::string CompatibleName(std::string_view n) {
  std::string out;
  for (size_t i = 0; i < n.size(); ++i) {
    auto c = static_cast<unsigned char>(n[i]);
    bool ok = std::isalpha(c) || c == '_' || (i > 0 && std::isdigit(c));
    if (ok) {
      out += static_cast<char>(c);
    } else if (i == 0 && std::isdigit(c)) {
      out += '_';
      out += static_cast<char>(c);
    } else {
      out += fmt::format("_x{:X}", c);
    }
  }
  return out.empty() ? "_" : out;
}

class AvroSchemaBuilder {
 public:
  ojson Struct(const std::vector<NestedField>& fields, const std::string& record_name) {
    defined_.insert(record_name);
    ojson rec = {{"type", "record"}, {"name", record_name}, {"fields", ojson::array()}};
    for (const auto& f : fields) {
      ojson field = ojson::object();
      bool valid = ValidAvroName(f.name);
      field["name"] = valid ? f.name : CompatibleName(f.name);
      ojson t = TypeOf(f.type, f.id);
      if (f.required) {
        field["type"] = std::move(t);
      } else {
        field["type"] = ojson::array({"null", std::move(t)});
        field["default"] = nullptr;
      }
      if (!f.doc.empty()) field["doc"] = f.doc;
      field["field-id"] = f.id;
      if (!valid) field["iceberg-field-name"] = f.name;
      rec["fields"].push_back(std::move(field));
    }
    return rec;
  }

  ojson TypeOf(const Type& t, int32_t field_id) {
    switch (t.id) {
      case TypeId::kBoolean: return "boolean";
      case TypeId::kInt: return "int";
      case TypeId::kLong: return "long";
      case TypeId::kFloat: return "float";
      case TypeId::kDouble: return "double";
      case TypeId::kString: return "string";
      case TypeId::kBinary: return "bytes";
      case TypeId::kDate: return {{"type", "int"}, {"logicalType", "date"}};
      case TypeId::kTime: return {{"type", "long"}, {"logicalType", "time-micros"}};
      case TypeId::kTimestamp:
      case TypeId::kTimestampTz:
        return {{"type", "long"},
                {"logicalType", "timestamp-micros"},
                {"adjust-to-utc", t.id == TypeId::kTimestampTz}};
      case TypeId::kUuid: return Named("uuid_fixed", {{"type", "fixed"}, {"name", "uuid_fixed"}, {"size", 16}, {"logicalType", "uuid"}});
      case TypeId::kFixed: {
        std::string name = fmt::format("fixed_{}", t.length);
        return Named(name, {{"type", "fixed"}, {"name", name}, {"size", t.length}});
      }
      case TypeId::kDecimal: {
        std::string name = fmt::format("decimal_{}_{}", t.precision, t.scale);
        return Named(name, {{"type", "fixed"},
                            {"name", name},
                            {"size", DecimalRequiredBytes(t.precision)},
                            {"logicalType", "decimal"},
                            {"precision", t.precision},
                            {"scale", t.scale}});
      }
      case TypeId::kStruct: return Struct(t.fields, fmt::format("r{}", field_id));
      case TypeId::kList: {
        const NestedField& e = t.element();
        ojson items = TypeOf(e.type, e.id);
        if (!e.required) items = ojson::array({"null", std::move(items)});
        return {{"type", "array"}, {"items", std::move(items)}, {"element-id", e.id}};
      }
      case TypeId::kMap: {
        const NestedField& k = t.key();
        const NestedField& v = t.value();
        ojson vt = TypeOf(v.type, v.id);
        if (!v.required) vt = ojson::array({"null", std::move(vt)});
        if (k.type.id == TypeId::kString) {
          return {{"type", "map"}, {"values", std::move(vt)}, {"key-id", k.id}, {"value-id", v.id}};
        }
        std::string name = fmt::format("k{}_v{}", k.id, v.id);
        defined_.insert(name);
        ojson rec = {{"type", "record"},
                     {"name", name},
                     {"fields", ojson::array({ojson{{"name", "key"}, {"type", TypeOf(k.type, k.id)}, {"field-id", k.id}},
                                              ojson{{"name", "value"}, {"type", std::move(vt)}, {"field-id", v.id}}})}};
        return {{"type", "array"}, {"logicalType", "map"}, {"items", std::move(rec)}};
      }
    }
    return "null";
  }

 private:
  // A named type is defined once; later uses refer to it by name.
  ojson Named(const std::string& name, ojson definition) {
    if (!defined_.insert(name).second) return name;
    return definition;
  }
  std::set<std::string> defined_;
};

ojson OptionalField(const char* name, ojson type, int id) {
  return {{"name", name}, {"type", ojson::array({"null", std::move(type)})}, {"default", nullptr}, {"field-id", id}};
}
ojson RequiredField(const char* name, ojson type, int id) {
  return {{"name", name}, {"type", std::move(type)}, {"field-id", id}};
}
ojson IntMap(int key_id, int value_id, const char* value_type) {
  return {{"type", "array"},
          {"logicalType", "map"},
          {"items",
           {{"type", "record"},
            {"name", fmt::format("k{}_v{}", key_id, value_id)},
            {"fields", ojson::array({RequiredField("key", "int", key_id), RequiredField("value", value_type, value_id)})}}}};
}

// manifest_entry with data_file r2 (formats.md §C.6, Java V2 order).
std::string ManifestEntrySchema(const std::vector<NestedField>& partition_type) {
  AvroSchemaBuilder b;
  ojson partition = b.Struct(partition_type, "r102");
  ojson data_file = {
      {"type", "record"},
      {"name", "r2"},
      {"fields",
       ojson::array({RequiredField("content", "int", 134), RequiredField("file_path", "string", 100),
                     RequiredField("file_format", "string", 101), RequiredField("partition", partition, 102),
                     RequiredField("record_count", "long", 103), RequiredField("file_size_in_bytes", "long", 104),
                     OptionalField("column_sizes", IntMap(117, 118, "long"), 108),
                     OptionalField("value_counts", IntMap(119, 120, "long"), 109),
                     OptionalField("null_value_counts", IntMap(121, 122, "long"), 110),
                     OptionalField("nan_value_counts", IntMap(138, 139, "long"), 137),
                     OptionalField("lower_bounds", IntMap(126, 127, "bytes"), 125),
                     OptionalField("upper_bounds", IntMap(129, 130, "bytes"), 128),
                     OptionalField("key_metadata", "bytes", 131),
                     OptionalField("split_offsets", {{"type", "array"}, {"items", "long"}, {"element-id", 133}}, 132),
                     OptionalField("equality_ids", {{"type", "array"}, {"items", "int"}, {"element-id", 136}}, 135),
                     OptionalField("sort_order_id", "int", 140),
                     OptionalField("referenced_data_file", "string", 143)})}};
  ojson entry = {{"type", "record"},
                 {"name", "manifest_entry"},
                 {"fields", ojson::array({RequiredField("status", "int", 0), OptionalField("snapshot_id", "long", 1),
                                          OptionalField("sequence_number", "long", 3),
                                          OptionalField("file_sequence_number", "long", 4),
                                          RequiredField("data_file", data_file, 2)})}};
  return entry.dump();
}

// manifest_file (formats.md §C.5, Java V2 order).
std::string ManifestFileSchema() {
  ojson summary = {{"type", "record"},
                   {"name", "r508"},
                   {"fields", ojson::array({RequiredField("contains_null", "boolean", 509),
                                            OptionalField("contains_nan", "boolean", 518),
                                            OptionalField("lower_bound", "bytes", 510),
                                            OptionalField("upper_bound", "bytes", 511)})}};
  ojson schema = {
      {"type", "record"},
      {"name", "manifest_file"},
      {"fields",
       ojson::array({RequiredField("manifest_path", "string", 500), RequiredField("manifest_length", "long", 501),
                     RequiredField("partition_spec_id", "int", 502), RequiredField("content", "int", 517),
                     RequiredField("sequence_number", "long", 515), RequiredField("min_sequence_number", "long", 516),
                     RequiredField("added_snapshot_id", "long", 503), RequiredField("added_files_count", "int", 504),
                     RequiredField("existing_files_count", "int", 505), RequiredField("deleted_files_count", "int", 506),
                     RequiredField("added_rows_count", "long", 512), RequiredField("existing_rows_count", "long", 513),
                     RequiredField("deleted_rows_count", "long", 514),
                     OptionalField("partitions", {{"type", "array"}, {"items", summary}, {"element-id", 508}}, 507),
                     OptionalField("key_metadata", "bytes", 519)})}};
  return schema.dump();
}

// ---------------------------------------------------------------------------------
// Encoding.

std::string SignExtend(const std::string& minimal, size_t size, bool negative) {
  if (minimal.size() >= size) return minimal.substr(minimal.size() - size);
  return std::string(size - minimal.size(), negative ? '\xff' : '\x00') + minimal;
}

Status EncodeLiteral(const Type& t, const Literal& v, std::string* out) {
  switch (t.id) {
    case TypeId::kBoolean: avro::PutBoolean(out, std::get<bool>(v.value)); break;
    case TypeId::kInt:
    case TypeId::kDate: avro::PutInt(out, v.as_int()); break;
    case TypeId::kLong:
    case TypeId::kTime:
    case TypeId::kTimestamp:
    case TypeId::kTimestampTz: avro::PutLong(out, v.as_long()); break;
    case TypeId::kFloat: avro::PutFloat(out, std::get<float>(v.value)); break;
    case TypeId::kDouble: avro::PutDouble(out, std::get<double>(v.value)); break;
    case TypeId::kString:
    case TypeId::kBinary: avro::PutBytes(out, v.as_bytes()); break;
    case TypeId::kUuid:
    case TypeId::kFixed: avro::PutFixed(out, v.as_bytes()); break;
    case TypeId::kDecimal:
      avro::PutFixed(out, SignExtend(DecimalToBytes(v.as_decimal()),
                                     static_cast<size_t>(DecimalRequiredBytes(t.precision)), v.as_decimal() < 0));
      break;
    default: return InvalidArgument("partition values must be primitive");
  }
  return Status::OK();
}

template <typename V, typename F>
void PutIntMap(std::string* out, const std::map<int32_t, V>& m, F put_value) {
  if (m.empty()) {
    avro::PutUnionBranch(out, 0);
    return;
  }
  avro::PutUnionBranch(out, 1);
  avro::PutLong(out, static_cast<int64_t>(m.size()));
  for (const auto& [k, v] : m) {
    avro::PutInt(out, k);
    put_value(out, v);
  }
  avro::PutLong(out, 0);
}

void PutOptLong(std::string* out, const std::optional<int64_t>& v) {
  avro::PutUnionBranch(out, v ? 1 : 0);
  if (v) avro::PutLong(out, *v);
}

void PutOptBytes(std::string* out, const std::optional<std::string>& v) {
  avro::PutUnionBranch(out, v ? 1 : 0);
  if (v) avro::PutBytes(out, *v);
}

struct FieldStats {
  bool contains_null = false;
  bool contains_nan = false;
  std::optional<Literal> lower, upper;
};

bool IsNaN(const Literal& v) {
  if (auto* f = std::get_if<float>(&v.value)) return *f != *f;
  if (auto* d = std::get_if<double>(&v.value)) return *d != *d;
  return false;
}

// Types whose partition values are stored alike, which other writers use for one
// another (a day partition written as int, a timestamp as long): accepted when
// rewriting their manifests.
bool SameStorage(TypeId a, TypeId b) {
  auto family = [](TypeId t) {
    switch (t) {
      case TypeId::kInt:
      case TypeId::kDate: return 1;
      case TypeId::kLong:
      case TypeId::kTime:
      case TypeId::kTimestamp:
      case TypeId::kTimestampTz: return 2;
      default: return 0;
    }
  };
  return family(a) != 0 && family(a) == family(b);
}

// ---------------------------------------------------------------------------------
// Decoding helpers.

const avro::Datum* Unwrap(const avro::Datum* d) { return (d == nullptr || d->is_null()) ? nullptr : d; }

std::optional<int64_t> OptInteger(const avro::Datum& rec, std::string_view name) {
  const avro::Datum* d = Unwrap(rec.Field(name));
  if (d == nullptr) return std::nullopt;
  if (d->type() != avro::AvroType::kInt && d->type() != avro::AvroType::kLong) return std::nullopt;
  return d->integer;
}

Result<int64_t> ReqInteger(const avro::Datum& rec, std::string_view name, std::string_view where) {
  auto v = OptInteger(rec, name);
  if (!v) return InvalidArgument(fmt::format("{}: missing integer field '{}'", where, name));
  return *v;
}

std::optional<std::string> OptBytes(const avro::Datum& rec, std::string_view name) {
  const avro::Datum* d = Unwrap(rec.Field(name));
  if (d == nullptr) return std::nullopt;
  switch (d->type()) {
    case avro::AvroType::kBytes:
    case avro::AvroType::kString:
    case avro::AvroType::kFixed: return d->bytes;
    default: return std::nullopt;
  }
}

// key/value pairs of an Iceberg int-keyed map: array of {key, value} records, or an
// Avro map with decimal string keys.
template <typename F>
Status ForEachMapEntry(const avro::Datum& rec, std::string_view name, F fn) {
  const avro::Datum* d = Unwrap(rec.Field(name));
  if (d == nullptr) return Status::OK();
  if (d->type() == avro::AvroType::kArray) {
    for (const auto& kv : d->children) {
      const avro::Datum* k = kv.Field("key");
      const avro::Datum* v = kv.Field("value");
      if (k == nullptr || v == nullptr || k->is_null()) {
        return InvalidArgument(fmt::format("manifest: malformed map '{}'", name));
      }
      fn(static_cast<int32_t>(k->integer), *v);
    }
  } else if (d->type() == avro::AvroType::kMap) {
    for (size_t i = 0; i < d->keys.size(); ++i) {
      try {
        fn(std::stoi(d->keys[i]), d->children[i]);
      } catch (...) {
        return InvalidArgument(fmt::format("manifest: map '{}' has a non-integer key", name));
      }
    }
  }
  return Status::OK();
}

Result<std::optional<Literal>> LiteralFromDatum(const avro::Datum& d) {
  using avro::AvroType;
  const avro::Node& n = *d.node;
  const std::string& lt = n.logical_type;
  switch (n.type) {
    case AvroType::kNull: return std::optional<Literal>();
    case AvroType::kBoolean: return std::optional<Literal>(Literal::Boolean(d.boolean));
    case AvroType::kInt:
      if (lt == "date") return std::optional<Literal>(Literal::Date(static_cast<int32_t>(d.integer)));
      return std::optional<Literal>(Literal::Int(static_cast<int32_t>(d.integer)));
    case AvroType::kLong:
      if (lt == "time-micros") return std::optional<Literal>(Literal::Time(d.integer));
      if (lt == "timestamp-micros") {
        return std::optional<Literal>(n.adjust_to_utc ? Literal::TimestampTz(d.integer)
                                                      : Literal::Timestamp(d.integer));
      }
      return std::optional<Literal>(Literal::Long(d.integer));
    case AvroType::kFloat: return std::optional<Literal>(Literal::Float(static_cast<float>(d.real)));
    case AvroType::kDouble: return std::optional<Literal>(Literal::Double(d.real));
    case AvroType::kString: return std::optional<Literal>(Literal::String(d.bytes));
    case AvroType::kBytes:
    case AvroType::kFixed: {
      if (lt == "decimal") {
        if (n.precision < 1 || n.precision > 38 || d.bytes.empty() || d.bytes.size() > 16) {
          return InvalidArgument("manifest: malformed decimal partition value");
        }
        ASSIGN_OR_RETURN(Literal l, FromBytes(Decimal(n.precision, n.scale), d.bytes));
        return std::optional<Literal>(std::move(l));
      }
      if (lt == "uuid" && d.bytes.size() == 16) return std::optional<Literal>(Literal::Uuid(d.bytes));
      if (n.type == AvroType::kFixed) return std::optional<Literal>(Literal::FixedBytes(d.bytes));
      return std::optional<Literal>(Literal::Binary(d.bytes));
    }
    default: return InvalidArgument("manifest: partition values must be primitive");
  }
}

Result<DataFile> DataFileFromDatum(const avro::Datum& df) {
  const char* where = "manifest data_file";
  DataFile f;
  f.content = static_cast<FileContent>(OptInteger(df, "content").value_or(0));
  if (static_cast<int>(f.content) > 2) return InvalidArgument("manifest: unknown data_file content");
  auto path = OptBytes(df, "file_path");
  if (!path) return InvalidArgument("manifest: data_file without file_path");
  f.file_path = *path;
  f.file_format = OptBytes(df, "file_format").value_or("");
  if (const avro::Datum* p = Unwrap(df.Field("partition")); p && p->type() == avro::AvroType::kRecord) {
    for (const auto& v : p->children) {
      ASSIGN_OR_RETURN(auto lit, LiteralFromDatum(v));
      f.partition.push_back(std::move(lit));
    }
  }
  ASSIGN_OR_RETURN(f.record_count, ReqInteger(df, "record_count", where));
  ASSIGN_OR_RETURN(f.file_size_in_bytes, ReqInteger(df, "file_size_in_bytes", where));
  auto longs = [](std::map<int32_t, int64_t>* m) {
    return [m](int32_t k, const avro::Datum& v) { (*m)[k] = v.is_null() ? 0 : v.integer; };
  };
  auto bytes = [](std::map<int32_t, std::string>* m) {
    return [m](int32_t k, const avro::Datum& v) {
      if (!v.is_null()) (*m)[k] = v.bytes;
    };
  };
  RETURN_IF_ERROR(ForEachMapEntry(df, "column_sizes", longs(&f.column_sizes)));
  RETURN_IF_ERROR(ForEachMapEntry(df, "value_counts", longs(&f.value_counts)));
  RETURN_IF_ERROR(ForEachMapEntry(df, "null_value_counts", longs(&f.null_value_counts)));
  RETURN_IF_ERROR(ForEachMapEntry(df, "nan_value_counts", longs(&f.nan_value_counts)));
  RETURN_IF_ERROR(ForEachMapEntry(df, "lower_bounds", bytes(&f.lower_bounds)));
  RETURN_IF_ERROR(ForEachMapEntry(df, "upper_bounds", bytes(&f.upper_bounds)));
  f.key_metadata = OptBytes(df, "key_metadata");
  if (const avro::Datum* s = Unwrap(df.Field("split_offsets")); s && s->type() == avro::AvroType::kArray) {
    for (const auto& v : s->children) f.split_offsets.push_back(v.integer);
  }
  if (const avro::Datum* s = Unwrap(df.Field("equality_ids")); s && s->type() == avro::AvroType::kArray) {
    for (const auto& v : s->children) f.equality_ids.push_back(static_cast<int32_t>(v.integer));
  }
  if (auto so = OptInteger(df, "sort_order_id")) f.sort_order_id = static_cast<int32_t>(*so);
  f.referenced_data_file = OptBytes(df, "referenced_data_file");
  return f;
}

int ParseIntOr(const std::string& s, int fallback) {
  try {
    return s.empty() ? fallback : std::stoi(s);
  } catch (...) {
    return fallback;
  }
}

}  // namespace

std::string AvroSchemaForStruct(const std::vector<NestedField>& fields, const std::string& record_name) {
  AvroSchemaBuilder b;
  return b.Struct(fields, record_name).dump();
}

// ---------------------------------------------------------------------------------
// ManifestWriter.

struct ManifestWriter::Impl {
  Schema schema;
  PartitionSpec spec;
  std::vector<NestedField> partition_type;
  ManifestContent content = ManifestContent::kData;
  int64_t snapshot_id = 0;
  std::unique_ptr<avro::ContainerWriter> writer;
  ManifestFile summary;
  std::vector<FieldStats> stats;
  std::optional<int64_t> min_sequence_number;
};

ManifestWriter::ManifestWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ManifestWriter::~ManifestWriter() = default;

Result<std::unique_ptr<ManifestWriter>> ManifestWriter::Make(const Schema& schema, const PartitionSpec& spec,
                                                             ManifestContent content, int64_t snapshot_id,
                                                             ManifestWriteOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->schema = schema;
  impl->spec = spec;
  ASSIGN_OR_RETURN(impl->partition_type, PartitionType(spec, schema));
  impl->content = content;
  impl->snapshot_id = snapshot_id;
  impl->stats.resize(spec.fields.size());
  impl->summary.partition_spec_id = spec.spec_id;
  impl->summary.content = content;
  impl->summary.added_snapshot_id = snapshot_id;
  avro::ContainerWriterOptions o;
  o.codec = options.deflate ? avro::Codec::kDeflate : avro::Codec::kNull;
  o.deflate_level = options.deflate_level;
  o.metadata = {{"schema", SchemaToJson(schema)},
                {"schema-id", std::to_string(schema.schema_id)},
                {"partition-spec", PartitionFieldsToJsonValue(spec).dump()},
                {"partition-spec-id", std::to_string(spec.spec_id)},
                {"format-version", "2"},
                {"content", content == ManifestContent::kData ? "data" : "deletes"}};
  ASSIGN_OR_RETURN(impl->writer, avro::ContainerWriter::Make(ManifestEntrySchema(impl->partition_type), o));
  return std::unique_ptr<ManifestWriter>(new ManifestWriter(std::move(impl)));
}

int64_t ManifestWriter::entry_count() const { return impl_->writer->count(); }

Status ManifestWriter::AddAdded(const DataFile& file) {
  ManifestEntry e;
  e.status = EntryStatus::kAdded;
  e.snapshot_id = impl_->snapshot_id;
  e.data_file = file;
  return Add(e);
}

// A partition value of a column that was promoted since (int -> long, float -> double,
// decimal(P, S) -> decimal(P', S) with P' >= P) is read back in its old type; it is
// written in the new one, as Java's Avro projection reads it.
static std::optional<Literal> PromotedPartitionValue(const Literal& v, const Type& to) {
  if (v.type.id == TypeId::kInt && to.id == TypeId::kLong) return Literal::Long(v.as_int());
  if (v.type.id == TypeId::kFloat && to.id == TypeId::kDouble) {
    return Literal::Double(static_cast<double>(std::get<float>(v.value)));
  }
  if (v.type.id == TypeId::kDecimal && to.id == TypeId::kDecimal && v.type.scale == to.scale &&
      v.type.precision <= to.precision) {
    return Literal::DecimalValue(to.precision, to.scale, v.as_decimal());
  }
  return std::nullopt;
}

Status ManifestWriter::Add(const ManifestEntry& entry) {
  Impl& m = *impl_;
  const ManifestEntry* ep = &entry;
  std::optional<ManifestEntry> promoted;
  for (size_t i = 0; i < entry.data_file.partition.size() && i < m.partition_type.size(); ++i) {
    const auto& v = entry.data_file.partition[i];
    if (!v || v->type == m.partition_type[i].type) continue;
    if (auto p = PromotedPartitionValue(*v, m.partition_type[i].type)) {
      if (!promoted) promoted = entry;
      promoted->data_file.partition[i] = std::move(p);
      ep = &*promoted;
    }
  }
  const ManifestEntry& e = *ep;
  const DataFile& f = e.data_file;
  bool is_data = f.content == FileContent::kData;
  if (is_data != (m.content == ManifestContent::kData)) {
    return InvalidArgument("manifest: data and delete files cannot share a manifest");
  }
  if (f.partition.size() != m.partition_type.size()) {
    return InvalidArgument(fmt::format("manifest: data file {} has {} partition values, the spec has {}",
                                       f.file_path, f.partition.size(), m.partition_type.size()));
  }
  for (size_t i = 0; i < f.partition.size(); ++i) {
    if (f.partition[i] && !(f.partition[i]->type == m.partition_type[i].type) &&
        !SameStorage(f.partition[i]->type.id, m.partition_type[i].type.id)) {
      return InvalidArgument(fmt::format("manifest: partition value {} of {} has type {}, expected {}", i,
                                         f.file_path, PrimitiveTypeName(f.partition[i]->type),
                                         PrimitiveTypeName(m.partition_type[i].type)));
    }
    if (f.partition[i]) RETURN_IF_ERROR(CheckLiteral(*f.partition[i]));
  }
  if (e.status != EntryStatus::kAdded && (!e.sequence_number || !e.file_sequence_number)) {
    return InvalidArgument("manifest: existing and deleted entries must carry their sequence numbers");
  }
  if (f.file_path.empty()) return InvalidArgument("manifest: data file without a path");

  std::string* out = m.writer->datum();
  avro::PutInt(out, static_cast<int32_t>(e.status));
  PutOptLong(out, e.snapshot_id);
  PutOptLong(out, e.sequence_number);
  PutOptLong(out, e.file_sequence_number);
  avro::PutInt(out, static_cast<int32_t>(f.content));
  avro::PutString(out, f.file_path);
  avro::PutString(out, f.file_format);
  for (size_t i = 0; i < f.partition.size(); ++i) {
    avro::PutUnionBranch(out, f.partition[i] ? 1 : 0);
    if (f.partition[i]) RETURN_IF_ERROR(EncodeLiteral(m.partition_type[i].type, *f.partition[i], out));
  }
  avro::PutLong(out, f.record_count);
  avro::PutLong(out, f.file_size_in_bytes);
  auto put_long = [](std::string* o, int64_t v) { avro::PutLong(o, v); };
  auto put_bytes = [](std::string* o, const std::string& v) { avro::PutBytes(o, v); };
  PutIntMap(out, f.column_sizes, put_long);
  PutIntMap(out, f.value_counts, put_long);
  PutIntMap(out, f.null_value_counts, put_long);
  PutIntMap(out, f.nan_value_counts, put_long);
  PutIntMap(out, f.lower_bounds, put_bytes);
  PutIntMap(out, f.upper_bounds, put_bytes);
  PutOptBytes(out, f.key_metadata);
  avro::PutUnionBranch(out, f.split_offsets.empty() ? 0 : 1);
  if (!f.split_offsets.empty()) {
    avro::PutLong(out, static_cast<int64_t>(f.split_offsets.size()));
    for (int64_t v : f.split_offsets) avro::PutLong(out, v);
    avro::PutLong(out, 0);
  }
  avro::PutUnionBranch(out, f.equality_ids.empty() ? 0 : 1);
  if (!f.equality_ids.empty()) {
    avro::PutLong(out, static_cast<int64_t>(f.equality_ids.size()));
    for (int32_t v : f.equality_ids) avro::PutInt(out, v);
    avro::PutLong(out, 0);
  }
  avro::PutUnionBranch(out, f.sort_order_id ? 1 : 0);
  if (f.sort_order_id) avro::PutInt(out, *f.sort_order_id);
  PutOptBytes(out, f.referenced_data_file);
  RETURN_IF_ERROR(m.writer->EndDatum());

  // Manifest-list summary (spec "Manifest Lists").
  ManifestFile& s = m.summary;
  switch (e.status) {
    case EntryStatus::kAdded:
      ++s.added_files_count;
      s.added_rows_count += f.record_count;
      break;
    case EntryStatus::kExisting:
      ++s.existing_files_count;
      s.existing_rows_count += f.record_count;
      break;
    case EntryStatus::kDeleted:
      ++s.deleted_files_count;
      s.deleted_rows_count += f.record_count;
      break;
  }
  if (e.live() && e.sequence_number) {
    m.min_sequence_number = std::min(m.min_sequence_number.value_or(*e.sequence_number), *e.sequence_number);
  }
  for (size_t i = 0; i < f.partition.size(); ++i) {
    FieldStats& st = m.stats[i];
    const auto& v = f.partition[i];
    if (!v) {
      st.contains_null = true;
    } else if (IsNaN(*v)) {
      st.contains_nan = true;
    } else {
      if (!st.lower || Compare(*v, *st.lower) < 0) st.lower = *v;
      if (!st.upper || Compare(*v, *st.upper) > 0) st.upper = *v;
    }
  }
  return Status::OK();
}

Result<std::string> ManifestWriter::Finish(ManifestFile* summary) {
  Impl& m = *impl_;
  ASSIGN_OR_RETURN(std::string bytes, m.writer->Finish());
  ManifestFile s = m.summary;
  s.manifest_length = static_cast<int64_t>(bytes.size());
  s.sequence_number = kUnassignedSequenceNumber;
  // Inherited numbers (ADDED entries without one) are the committing snapshot's, newer
  // than any explicit number, so the minimum is the smallest explicit one if any.
  s.min_sequence_number = m.min_sequence_number.value_or(kUnassignedSequenceNumber);
  for (const auto& st : m.stats) {
    PartitionFieldSummary p;
    p.contains_null = st.contains_null;
    p.contains_nan = st.contains_nan;
    if (st.lower) p.lower_bound = ToBytes(*st.lower);
    if (st.upper) p.upper_bound = ToBytes(*st.upper);
    s.partitions.push_back(std::move(p));
  }
  *summary = std::move(s);
  return bytes;
}

// ---------------------------------------------------------------------------------
// Manifest lists.

Result<std::string> WriteManifestList(int64_t snapshot_id, std::optional<int64_t> parent_snapshot_id,
                                      int64_t sequence_number, const std::vector<ManifestFile>& manifests,
                                      ManifestWriteOptions options) {
  avro::ContainerWriterOptions o;
  o.codec = options.deflate ? avro::Codec::kDeflate : avro::Codec::kNull;
  o.deflate_level = options.deflate_level;
  o.metadata = {{"snapshot-id", std::to_string(snapshot_id)},
                {"parent-snapshot-id", parent_snapshot_id ? std::to_string(*parent_snapshot_id) : "null"},
                {"sequence-number", std::to_string(sequence_number)},
                {"format-version", "2"}};
  ASSIGN_OR_RETURN(auto w, avro::ContainerWriter::Make(ManifestFileSchema(), o));
  for (const auto& mf : manifests) {
    int64_t seq = mf.sequence_number == kUnassignedSequenceNumber ? sequence_number : mf.sequence_number;
    int64_t min_seq = mf.min_sequence_number == kUnassignedSequenceNumber ? seq : mf.min_sequence_number;
    std::string* out = w->datum();
    avro::PutString(out, mf.manifest_path);
    avro::PutLong(out, mf.manifest_length);
    avro::PutInt(out, mf.partition_spec_id);
    avro::PutInt(out, static_cast<int32_t>(mf.content));
    avro::PutLong(out, seq);
    avro::PutLong(out, min_seq);
    avro::PutLong(out, mf.added_snapshot_id);
    avro::PutInt(out, mf.added_files_count);
    avro::PutInt(out, mf.existing_files_count);
    avro::PutInt(out, mf.deleted_files_count);
    avro::PutLong(out, mf.added_rows_count);
    avro::PutLong(out, mf.existing_rows_count);
    avro::PutLong(out, mf.deleted_rows_count);
    avro::PutUnionBranch(out, 1);  // partitions: [] when unpartitioned (Java writes an empty list)
    if (!mf.partitions.empty()) avro::PutLong(out, static_cast<int64_t>(mf.partitions.size()));
    for (const auto& p : mf.partitions) {
      avro::PutBoolean(out, p.contains_null);
      avro::PutUnionBranch(out, p.contains_nan ? 1 : 0);
      if (p.contains_nan) avro::PutBoolean(out, *p.contains_nan);
      PutOptBytes(out, p.lower_bound);
      PutOptBytes(out, p.upper_bound);
    }
    avro::PutLong(out, 0);
    PutOptBytes(out, mf.key_metadata);
    RETURN_IF_ERROR(w->EndDatum());
  }
  return w->Finish();
}

Result<std::vector<ManifestFile>> ReadManifestList(std::string_view bytes) {
  ASSIGN_OR_RETURN(auto reader, avro::ContainerReader::Open(bytes));
  if (reader->schema().root().type != avro::AvroType::kRecord) {
    return InvalidArgument("manifest list: the Avro schema is not a record");
  }
  const char* where = "manifest list";
  std::vector<ManifestFile> out;
  avro::Datum d;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&d));
    if (!more) break;
    ManifestFile mf;
    auto path = OptBytes(d, "manifest_path");
    if (!path) return InvalidArgument("manifest list: entry without manifest_path");
    mf.manifest_path = *path;
    ASSIGN_OR_RETURN(mf.manifest_length, ReqInteger(d, "manifest_length", where));
    ASSIGN_OR_RETURN(int64_t spec_id, ReqInteger(d, "partition_spec_id", where));
    mf.partition_spec_id = static_cast<int32_t>(spec_id);
    mf.content = static_cast<ManifestContent>(OptInteger(d, "content").value_or(0) == 1 ? 1 : 0);
    mf.sequence_number = OptInteger(d, "sequence_number").value_or(0);
    mf.min_sequence_number = OptInteger(d, "min_sequence_number").value_or(0);
    mf.added_snapshot_id = OptInteger(d, "added_snapshot_id").value_or(0);
    // v1 names: added_data_files_count etc.
    auto count = [&](const char* v2, const char* v1) {
      return static_cast<int32_t>(OptInteger(d, v2).value_or(OptInteger(d, v1).value_or(0)));
    };
    mf.added_files_count = count("added_files_count", "added_data_files_count");
    mf.existing_files_count = count("existing_files_count", "existing_data_files_count");
    mf.deleted_files_count = count("deleted_files_count", "deleted_data_files_count");
    mf.added_rows_count = OptInteger(d, "added_rows_count").value_or(0);
    mf.existing_rows_count = OptInteger(d, "existing_rows_count").value_or(0);
    mf.deleted_rows_count = OptInteger(d, "deleted_rows_count").value_or(0);
    if (const avro::Datum* parts = Unwrap(d.Field("partitions")); parts && parts->type() == avro::AvroType::kArray) {
      for (const auto& p : parts->children) {
        PartitionFieldSummary s;
        if (const avro::Datum* cn = Unwrap(p.Field("contains_null"))) s.contains_null = cn->boolean;
        if (const avro::Datum* nan = Unwrap(p.Field("contains_nan"))) s.contains_nan = nan->boolean;
        s.lower_bound = OptBytes(p, "lower_bound");
        s.upper_bound = OptBytes(p, "upper_bound");
        mf.partitions.push_back(std::move(s));
      }
    }
    mf.key_metadata = OptBytes(d, "key_metadata");
    out.push_back(std::move(mf));
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Manifests.

Result<ManifestContents> ReadManifest(std::string_view bytes, const ManifestFile* manifest) {
  ASSIGN_OR_RETURN(auto reader, avro::ContainerReader::Open(bytes));
  if (reader->schema().root().type != avro::AvroType::kRecord ||
      reader->schema().root().FieldIndex("data_file") < 0) {
    return InvalidArgument("manifest: the Avro schema has no data_file");
  }
  ManifestContents out;
  out.format_version = ParseIntOr(reader->Meta("format-version"), 1);
  out.spec_id = ParseIntOr(reader->Meta("partition-spec-id"), manifest ? manifest->partition_spec_id : 0);
  out.content = reader->Meta("content") == "deletes" ? ManifestContent::kDeletes : ManifestContent::kData;
  if (manifest) out.content = manifest->content;
  out.schema_json = reader->Meta("schema");
  out.partition_spec_json = reader->Meta("partition-spec");
  avro::Datum d;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&d));
    if (!more) break;
    ManifestEntry e;
    ASSIGN_OR_RETURN(int64_t status, ReqInteger(d, "status", "manifest entry"));
    if (status < 0 || status > 2) return InvalidArgument("manifest: unknown entry status");
    e.status = static_cast<EntryStatus>(status);
    e.snapshot_id = OptInteger(d, "snapshot_id");
    e.sequence_number = OptInteger(d, "sequence_number");
    e.file_sequence_number = OptInteger(d, "file_sequence_number");
    const avro::Datum* df = Unwrap(d.Field("data_file"));
    if (df == nullptr || df->type() != avro::AvroType::kRecord) {
      return InvalidArgument("manifest: entry without data_file");
    }
    ASSIGN_OR_RETURN(e.data_file, DataFileFromDatum(*df));
    e.data_file.spec_id = out.spec_id;
    if (manifest) {
      // Spec "Sequence Number Inheritance".
      if (!e.snapshot_id) e.snapshot_id = manifest->added_snapshot_id;
      if (e.status == EntryStatus::kAdded) {
        if (!e.sequence_number) e.sequence_number = manifest->sequence_number;
        if (!e.file_sequence_number) e.file_sequence_number = manifest->sequence_number;
      }
      if (out.format_version == 1) {
        if (!e.sequence_number) e.sequence_number = 0;
        if (!e.file_sequence_number) e.file_sequence_number = 0;
      }
    }
    out.entries.push_back(std::move(e));
  }
  return out;
}

}  // namespace icestream::iceberg
