// Thrift compact serialization of the Parquet metadata structs. Field ids are those
// of parquet.thrift; every field the thrift IDL marks `required` is always written
// (generated readers reject a struct that lacks one).
#include "format/parquet/metadata.h"

#include "format/parquet/thrift_compact.h"

namespace icestream::format::parquet {
namespace {

int32_t E(auto v) { return static_cast<int32_t>(v); }

void WriteLogicalType(CompactWriter& w, const LogicalType& lt) {
  using K = LogicalType::Kind;
  w.FieldStructBegin(10);  // SchemaElement.logicalType (union)
  auto empty_member = [&](int16_t id) {
    w.FieldStructBegin(id);
    w.EndStruct();
  };
  auto time_like = [&](int16_t id) {
    w.FieldStructBegin(id);
    w.FieldBool(1, lt.adjusted_to_utc);
    w.FieldStructBegin(2);  // unit: TimeUnit union
    empty_member(static_cast<int16_t>(lt.unit));
    w.EndStruct();
    w.EndStruct();
  };
  switch (lt.kind) {
    case K::kString: empty_member(1); break;
    case K::kMap: empty_member(2); break;
    case K::kList: empty_member(3); break;
    case K::kDecimal:
      w.FieldStructBegin(5);
      w.FieldI32(1, lt.scale);
      w.FieldI32(2, lt.precision);
      w.EndStruct();
      break;
    case K::kDate: empty_member(6); break;
    case K::kTime: time_like(7); break;
    case K::kTimestamp: time_like(8); break;
    case K::kUuid: empty_member(14); break;
    case K::kEnum: empty_member(4); break;
    case K::kInteger:
      w.FieldStructBegin(10);
      w.FieldI8(1, lt.bit_width);
      w.FieldBool(2, lt.is_signed);
      w.EndStruct();
      break;
    case K::kUnknown: empty_member(11); break;
    case K::kJson: empty_member(12); break;
    case K::kBson: empty_member(13); break;
    case K::kFloat16: empty_member(15); break;
    case K::kOther: empty_member(lt.other_id); break;
    case K::kNone: break;
  }
  w.EndStruct();
}

void WriteSchemaElement(CompactWriter& w, const SchemaElement& e) {
  if (e.type) w.FieldI32(1, E(*e.type));
  if (e.type_length) w.FieldI32(2, *e.type_length);
  if (e.repetition_type) w.FieldI32(3, E(*e.repetition_type));
  w.FieldBinary(4, e.name);
  if (e.num_children) w.FieldI32(5, *e.num_children);
  if (e.converted_type) w.FieldI32(6, E(*e.converted_type));
  if (e.scale) w.FieldI32(7, *e.scale);
  if (e.precision) w.FieldI32(8, *e.precision);
  if (e.field_id) w.FieldI32(9, *e.field_id);
  if (e.logical_type.kind != LogicalType::Kind::kNone) WriteLogicalType(w, e.logical_type);
}

void WriteStatistics(CompactWriter& w, int16_t id, const Statistics& s) {
  w.FieldStructBegin(id);
  if (s.max) w.FieldBinary(1, *s.max);
  if (s.min) w.FieldBinary(2, *s.min);
  if (s.null_count) w.FieldI64(3, *s.null_count);
  if (s.distinct_count) w.FieldI64(4, *s.distinct_count);
  if (s.max_value) w.FieldBinary(5, *s.max_value);
  if (s.min_value) w.FieldBinary(6, *s.min_value);
  if (s.is_max_value_exact) w.FieldBool(7, *s.is_max_value_exact);
  if (s.is_min_value_exact) w.FieldBool(8, *s.is_min_value_exact);
  if (s.nan_count) w.FieldI64(9, *s.nan_count);
  w.EndStruct();
}

void WriteColumnMetaData(CompactWriter& w, const ColumnMetaData& m) {
  w.FieldStructBegin(3);  // ColumnChunk.meta_data
  w.FieldI32(1, E(m.type));
  w.FieldListBegin(2, CType::kI32, m.encodings.size());
  for (Encoding e : m.encodings) w.ElemI32(E(e));
  w.FieldListBegin(3, CType::kBinary, m.path_in_schema.size());
  for (const auto& p : m.path_in_schema) w.ElemBinary(p);
  w.FieldI32(4, E(m.codec));
  w.FieldI64(5, m.num_values);
  w.FieldI64(6, m.total_uncompressed_size);
  w.FieldI64(7, m.total_compressed_size);
  w.FieldI64(9, m.data_page_offset);
  if (m.dictionary_page_offset) w.FieldI64(11, *m.dictionary_page_offset);
  if (m.statistics) WriteStatistics(w, 12, *m.statistics);
  if (!m.encoding_stats.empty()) {
    w.FieldListBegin(13, CType::kStruct, m.encoding_stats.size());
    for (const auto& s : m.encoding_stats) {
      w.ElemStructBegin();
      w.FieldI32(1, E(s.page_type));
      w.FieldI32(2, E(s.encoding));
      w.FieldI32(3, s.count);
      w.EndStruct();
    }
  }
  w.EndStruct();
}

void WriteRowGroup(CompactWriter& w, const RowGroup& rg) {
  w.ElemStructBegin();
  w.FieldListBegin(1, CType::kStruct, rg.columns.size());
  for (const auto& c : rg.columns) {
    w.ElemStructBegin();
    if (c.file_path) w.FieldBinary(1, *c.file_path);
    w.FieldI64(2, c.file_offset);
    WriteColumnMetaData(w, c.meta_data);
    w.EndStruct();
  }
  w.FieldI64(2, rg.total_byte_size);
  w.FieldI64(3, rg.num_rows);
  w.FieldI64(5, rg.file_offset);
  w.FieldI64(6, rg.total_compressed_size);
  w.FieldI16(7, rg.ordinal);
  w.EndStruct();
}

}  // namespace

void SerializeSchemaElement(const SchemaElement& e, std::string* out) {
  CompactWriter w(out);
  w.BeginStruct();
  WriteSchemaElement(w, e);
  w.EndStruct();
}

void SerializeFileMetaData(const FileMetaData& m, std::string* out) {
  CompactWriter w(out);
  w.BeginStruct();
  w.FieldI32(1, m.version);
  w.FieldListBegin(2, CType::kStruct, m.schema.size());
  for (const auto& e : m.schema) {
    w.ElemStructBegin();
    WriteSchemaElement(w, e);
    w.EndStruct();
  }
  w.FieldI64(3, m.num_rows);
  w.FieldListBegin(4, CType::kStruct, m.row_groups.size());
  for (const auto& rg : m.row_groups) WriteRowGroup(w, rg);
  if (!m.key_value_metadata.empty()) {
    w.FieldListBegin(5, CType::kStruct, m.key_value_metadata.size());
    for (const auto& kv : m.key_value_metadata) {
      w.ElemStructBegin();
      w.FieldBinary(1, kv.key);
      w.FieldBinary(2, kv.value);
      w.EndStruct();
    }
  }
  if (!m.created_by.empty()) w.FieldBinary(6, m.created_by);
  if (m.num_leaf_columns > 0) {
    // ColumnOrder union, member 1 TYPE_ORDER (an empty TypeDefinedOrder struct).
    w.FieldListBegin(7, CType::kStruct, static_cast<size_t>(m.num_leaf_columns));
    for (int32_t i = 0; i < m.num_leaf_columns; ++i) {
      w.ElemStructBegin();
      w.FieldStructBegin(1);
      w.EndStruct();
      w.EndStruct();
    }
  }
  w.EndStruct();
}

void SerializePageHeader(const PageHeader& h, std::string* out) {
  CompactWriter w(out);
  w.BeginStruct();
  w.FieldI32(1, E(h.type));
  w.FieldI32(2, h.uncompressed_page_size);
  w.FieldI32(3, h.compressed_page_size);
  if (h.crc) w.FieldI32(4, *h.crc);
  if (h.data_page_header) {
    const auto& d = *h.data_page_header;
    w.FieldStructBegin(5);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, E(d.encoding));
    w.FieldI32(3, E(d.definition_level_encoding));
    w.FieldI32(4, E(d.repetition_level_encoding));
    w.EndStruct();
  }
  if (h.dictionary_page_header) {
    const auto& d = *h.dictionary_page_header;
    w.FieldStructBegin(7);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, E(d.encoding));
    if (d.is_sorted) w.FieldBool(3, *d.is_sorted);
    w.EndStruct();
  }
  if (h.data_page_header_v2) {
    const auto& d = *h.data_page_header_v2;
    w.FieldStructBegin(8);
    w.FieldI32(1, d.num_values);
    w.FieldI32(2, d.num_nulls);
    w.FieldI32(3, d.num_rows);
    w.FieldI32(4, E(d.encoding));
    w.FieldI32(5, d.definition_levels_byte_length);
    w.FieldI32(6, d.repetition_levels_byte_length);
    w.FieldBool(7, d.is_compressed);
    w.EndStruct();
  }
  w.EndStruct();
}

}  // namespace icestream::format::parquet
