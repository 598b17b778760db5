// Thrift compact parsing of the Parquet footer and page headers (parquet.thrift field
// ids as in metadata.h). A field whose wire type differs from the IDL's is skipped like
// an unknown one (what Thrift-generated readers do), so it counts as absent.
#include <utility>

#include "format/parquet/metadata.h"
#include "format/parquet/thrift_compact_reader.h"

// RETURN_IF_ERROR with a per-line variable: the field callbacks nest lambdas inside
// its argument, where the common macro's variable would shadow itself.
#define TRY(expr)                                                                              \
  do {                                                                                         \
    ::icestream::Status ICESTREAM_CONCAT(try_st_, __LINE__) = (expr);                          \
    if (!ICESTREAM_CONCAT(try_st_, __LINE__).ok()) return ICESTREAM_CONCAT(try_st_, __LINE__); \
  } while (0)

namespace icestream::format::parquet {
namespace {

// Iterates the fields of one struct; `on_field(id, type, &handled)` reads the fields it
// knows and leaves the others to be skipped.
template <typename F>
Status ForEachField(CompactReader& r, F&& on_field) {
  TRY(r.BeginStruct());
  while (true) {
    int16_t id;
    CType type;
    bool stop;
    TRY(r.ReadFieldHeader(&id, &type, &stop));
    if (stop) break;
    bool handled = false;
    TRY(on_field(id, type, &handled));
    if (!handled) TRY(r.Skip(type));
  }
  r.EndStruct();
  return Status::OK();
}

// Typed field readers: they read when the wire type matches and say so in *handled.
Status I32(CompactReader& r, CType t, int32_t* v, bool* handled) {
  if (t != CType::kI32) return Status::OK();
  *handled = true;
  return r.ReadI32(v);
}
template <typename E>
Status Enum(CompactReader& r, CType t, E* v, bool* handled) {
  int32_t x = 0;
  bool h = false;
  TRY(I32(r, t, &x, &h));
  if (h) *v = static_cast<E>(x);
  *handled = h;
  return Status::OK();
}
Status I64(CompactReader& r, CType t, int64_t* v, bool* handled) {
  if (t != CType::kI64) return Status::OK();
  *handled = true;
  return r.ReadI64(v);
}
Status I16(CompactReader& r, CType t, int16_t* v, bool* handled) {
  if (t != CType::kI16) return Status::OK();
  *handled = true;
  return r.ReadI16(v);
}
Status Binary(CompactReader& r, CType t, std::string* v, bool* handled) {
  if (t != CType::kBinary) return Status::OK();
  *handled = true;
  std::string_view s;
  TRY(r.ReadBinary(&s));
  v->assign(s);
  return Status::OK();
}
bool Bool(CType t, bool* v) {
  if (t != CType::kBoolTrue && t != CType::kBoolFalse) return false;
  *v = t == CType::kBoolTrue;
  return true;
}

// A list field whose elements have wire type `want`; `on_elem()` reads one element.
template <typename F>
Status List(CompactReader& r, CType t, CType want, bool* handled, F&& on_elem) {
  if (t != CType::kList && t != CType::kSet) return Status::OK();
  *handled = true;
  CType elem;
  uint32_t n;
  TRY(r.BeginList(&elem, &n));
  for (uint32_t i = 0; i < n; ++i) {
    if (elem == want) {
      TRY(on_elem());
    } else {
      TRY(r.Skip(elem));
    }
  }
  r.EndList();
  return Status::OK();
}

Status Missing(std::string_view strct, std::string_view field) {
  return Corruption("parquet metadata: " + std::string(strct) + "." + std::string(field) +
                    " (required) is missing");
}

// ---------------------------------------------------------------- LogicalType
Status ParseTimeUnit(CompactReader& r, LogicalType::Unit* unit) {
  return ForEachField(r, [&](int16_t id, CType t, bool* handled) -> Status {
    if (t != CType::kStruct || id < 1 || id > 3) return Status::OK();
    *unit = static_cast<LogicalType::Unit>(id);
    *handled = true;
    return r.Skip(t);
  });
}

Status ParseLogicalType(CompactReader& r, LogicalType* lt) {
  using K = LogicalType::Kind;
  return ForEachField(r, [&](int16_t id, CType t, bool* handled) -> Status {
    if (t != CType::kStruct) return Status::OK();
    *handled = true;
    switch (id) {
      case 1:
        lt->kind = K::kString;
        return r.Skip(t);
      case 2:
        lt->kind = K::kMap;
        return r.Skip(t);
      case 3:
        lt->kind = K::kList;
        return r.Skip(t);
      case 4:
        lt->kind = K::kEnum;
        return r.Skip(t);
      case 6:
        lt->kind = K::kDate;
        return r.Skip(t);
      case 11:
        lt->kind = K::kUnknown;
        return r.Skip(t);
      case 12:
        lt->kind = K::kJson;
        return r.Skip(t);
      case 13:
        lt->kind = K::kBson;
        return r.Skip(t);
      case 14:
        lt->kind = K::kUuid;
        return r.Skip(t);
      case 15:
        lt->kind = K::kFloat16;
        return r.Skip(t);
      case 5: {  // DecimalType{1: scale, 2: precision}
        lt->kind = K::kDecimal;
        bool has_scale = false, has_precision = false;
        TRY(ForEachField(r, [&](int16_t f, CType ft, bool* h) -> Status {
          if (f == 1) {
            TRY(I32(r, ft, &lt->scale, h));
            has_scale = *h;
          } else if (f == 2) {
            TRY(I32(r, ft, &lt->precision, h));
            has_precision = *h;
          }
          return Status::OK();
        }));
        if (!has_scale) return Missing("DecimalType", "scale");
        if (!has_precision) return Missing("DecimalType", "precision");
        return Status::OK();
      }
      case 7:    // TimeType{1: isAdjustedToUTC, 2: unit}
      case 8: {  // TimestampType{1: isAdjustedToUTC, 2: unit}
        lt->kind = id == 7 ? K::kTime : K::kTimestamp;
        bool has_utc = false, has_unit = false;
        TRY(ForEachField(r, [&](int16_t f, CType ft, bool* h) -> Status {
          if (f == 1 && Bool(ft, &lt->adjusted_to_utc)) {
            *h = has_utc = true;
          } else if (f == 2 && ft == CType::kStruct) {
            *h = has_unit = true;
            return ParseTimeUnit(r, &lt->unit);
          }
          return Status::OK();
        }));
        if (!has_utc) return Missing(id == 7 ? "TimeType" : "TimestampType", "isAdjustedToUTC");
        if (!has_unit) return Missing(id == 7 ? "TimeType" : "TimestampType", "unit");
        return Status::OK();
      }
      case 10: {  // IntType{1: bitWidth i8, 2: isSigned}
        lt->kind = K::kInteger;
        bool has_width = false, has_signed = false;
        TRY(ForEachField(r, [&](int16_t f, CType ft, bool* h) -> Status {
          if (f == 1 && ft == CType::kI8) {
            *h = has_width = true;
            return r.ReadI8(&lt->bit_width);
          }
          if (f == 2 && Bool(ft, &lt->is_signed)) *h = has_signed = true;
          return Status::OK();
        }));
        if (!has_width) return Missing("IntType", "bitWidth");
        if (!has_signed) return Missing("IntType", "isSigned");
        return Status::OK();
      }
      default:
        lt->kind = K::kOther;
        lt->other_id = id;
        return r.Skip(t);
    }
  });
}

// ---------------------------------------------------------------- SchemaElement
Status ParseSchemaElement(CompactReader& r, SchemaElement* e) {
  bool has_name = false;
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    int32_t v = 0;
    switch (id) {
      case 1: {
        PhysicalType p{};
        TRY(Enum(r, t, &p, h));
        if (*h) e->type = p;
        return Status::OK();
      }
      case 2:
        TRY(I32(r, t, &v, h));
        if (*h) e->type_length = v;
        return Status::OK();
      case 3: {
        Repetition rep{};
        TRY(Enum(r, t, &rep, h));
        if (*h) e->repetition_type = rep;
        return Status::OK();
      }
      case 4:
        TRY(Binary(r, t, &e->name, h));
        has_name = *h;
        return Status::OK();
      case 5:
        TRY(I32(r, t, &v, h));
        if (*h) e->num_children = v;
        return Status::OK();
      case 6: {
        ConvertedType c{};
        TRY(Enum(r, t, &c, h));
        if (*h) e->converted_type = c;
        return Status::OK();
      }
      case 7:
        TRY(I32(r, t, &v, h));
        if (*h) e->scale = v;
        return Status::OK();
      case 8:
        TRY(I32(r, t, &v, h));
        if (*h) e->precision = v;
        return Status::OK();
      case 9:
        TRY(I32(r, t, &v, h));
        if (*h) e->field_id = v;
        return Status::OK();
      case 10:
        if (t != CType::kStruct) return Status::OK();
        *h = true;
        return ParseLogicalType(r, &e->logical_type);
      default:
        return Status::OK();
    }
  }));
  if (!has_name) return Missing("SchemaElement", "name");
  return Status::OK();
}

// ---------------------------------------------------------------- statistics, chunks
Status ParseStatistics(CompactReader& r, Statistics* s) {
  return ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    std::string b;
    int64_t v = 0;
    bool x = false;
    switch (id) {
      case 1:
        TRY(Binary(r, t, &b, h));
        if (*h) s->max = std::move(b);
        break;
      case 2:
        TRY(Binary(r, t, &b, h));
        if (*h) s->min = std::move(b);
        break;
      case 3:
        TRY(I64(r, t, &v, h));
        if (*h) s->null_count = v;
        break;
      case 4:
        TRY(I64(r, t, &v, h));
        if (*h) s->distinct_count = v;
        break;
      case 5:
        TRY(Binary(r, t, &b, h));
        if (*h) s->max_value = std::move(b);
        break;
      case 6:
        TRY(Binary(r, t, &b, h));
        if (*h) s->min_value = std::move(b);
        break;
      case 7:
        if (Bool(t, &x)) {
          *h = true;
          s->is_max_value_exact = x;
        }
        break;
      case 8:
        if (Bool(t, &x)) {
          *h = true;
          s->is_min_value_exact = x;
        }
        break;
      case 9:
        TRY(I64(r, t, &v, h));
        if (*h) s->nan_count = v;
        break;
      default:
        break;
    }
    return Status::OK();
  });
}

Status ParseColumnMetaData(CompactReader& r, ColumnMetaData* m) {
  bool has[10] = {};
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    int64_t v = 0;
    switch (id) {
      case 1:
        TRY(Enum(r, t, &m->type, h));
        break;
      case 2:
        TRY(List(r, t, CType::kI32, h, [&]() -> Status {
          int32_t e;
          TRY(r.ReadI32(&e));
          m->encodings.push_back(static_cast<Encoding>(e));
          return Status::OK();
        }));
        break;
      case 3:
        TRY(List(r, t, CType::kBinary, h, [&]() -> Status {
          std::string_view s;
          TRY(r.ReadBinary(&s));
          m->path_in_schema.emplace_back(s);
          return Status::OK();
        }));
        break;
      case 4:
        TRY(Enum(r, t, &m->codec, h));
        break;
      case 5:
        TRY(I64(r, t, &m->num_values, h));
        break;
      case 6:
        TRY(I64(r, t, &m->total_uncompressed_size, h));
        break;
      case 7:
        TRY(I64(r, t, &m->total_compressed_size, h));
        break;
      case 9:
        TRY(I64(r, t, &m->data_page_offset, h));
        break;
      case 11:
        TRY(I64(r, t, &v, h));
        if (*h) m->dictionary_page_offset = v;
        break;
      case 12:
        if (t == CType::kStruct) {
          *h = true;
          m->statistics.emplace();
          TRY(ParseStatistics(r, &*m->statistics));
        }
        break;
      case 13:
        TRY(List(r, t, CType::kStruct, h, [&]() -> Status {
          PageEncodingStats s;
          bool got[4] = {};
          TRY(ForEachField(r, [&](int16_t f, CType ft, bool* fh) -> Status {
            if (f == 1) {
              TRY(Enum(r, ft, &s.page_type, fh));
            } else if (f == 2) {
              TRY(Enum(r, ft, &s.encoding, fh));
            } else if (f == 3) {
              TRY(I32(r, ft, &s.count, fh));
            }
            if (f >= 1 && f <= 3) got[f] = *fh;
            return Status::OK();
          }));
          if (!got[1] || !got[2] || !got[3])
            return Missing("PageEncodingStats", "page_type/encoding/count");
          m->encoding_stats.push_back(s);
          return Status::OK();
        }));
        break;
      default:
        break;
    }
    if (id >= 1 && id <= 9) has[id] = *h;
    return Status::OK();
  }));
  static constexpr const char* kNames[] = {"",
                                           "type",
                                           "encodings",
                                           "path_in_schema",
                                           "codec",
                                           "num_values",
                                           "total_uncompressed_size",
                                           "total_compressed_size",
                                           "",
                                           "data_page_offset"};
  for (int id : {1, 2, 3, 4, 5, 6, 7, 9}) {
    if (!has[id]) return Missing("ColumnMetaData", kNames[id]);
  }
  return Status::OK();
}

Status ParseColumnChunk(CompactReader& r, ColumnChunk* c) {
  bool has_offset = false, has_meta = false;
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    std::string path;
    switch (id) {
      case 1:
        TRY(Binary(r, t, &path, h));
        if (*h) c->file_path = std::move(path);
        break;
      case 2:
        TRY(I64(r, t, &c->file_offset, h));
        has_offset = *h;
        break;
      case 3:
        if (t == CType::kStruct) {
          *h = has_meta = true;
          return ParseColumnMetaData(r, &c->meta_data);
        }
        break;
      case 8:
      case 9:
        return Unimplemented("encrypted column chunks are not supported");
      default:
        break;
    }
    return Status::OK();
  }));
  if (!has_offset) return Missing("ColumnChunk", "file_offset");
  if (!has_meta) return Missing("ColumnChunk", "meta_data");
  return Status::OK();
}

Status ParseRowGroup(CompactReader& r, RowGroup* g) {
  bool has_columns = false, has_bytes = false, has_rows = false;
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    switch (id) {
      case 1:
        TRY(List(r, t, CType::kStruct, h, [&]() -> Status {
          g->columns.emplace_back();
          return ParseColumnChunk(r, &g->columns.back());
        }));
        has_columns = *h;
        break;
      case 2:
        TRY(I64(r, t, &g->total_byte_size, h));
        has_bytes = *h;
        break;
      case 3:
        TRY(I64(r, t, &g->num_rows, h));
        has_rows = *h;
        break;
      case 5:
        TRY(I64(r, t, &g->file_offset, h));
        break;
      case 6:
        TRY(I64(r, t, &g->total_compressed_size, h));
        break;
      case 7:
        TRY(I16(r, t, &g->ordinal, h));
        break;
      default:
        break;
    }
    return Status::OK();
  }));
  if (!has_columns) return Missing("RowGroup", "columns");
  if (!has_bytes) return Missing("RowGroup", "total_byte_size");
  if (!has_rows) return Missing("RowGroup", "num_rows");
  return Status::OK();
}

// ---------------------------------------------------------------- page headers
Status ParseDataPageHeader(CompactReader& r, DataPageHeader* d) {
  bool has[5] = {};
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    switch (id) {
      case 1:
        TRY(I32(r, t, &d->num_values, h));
        break;
      case 2:
        TRY(Enum(r, t, &d->encoding, h));
        break;
      case 3:
        TRY(Enum(r, t, &d->definition_level_encoding, h));
        break;
      case 4:
        TRY(Enum(r, t, &d->repetition_level_encoding, h));
        break;
      default:
        break;  // 5 statistics: not needed to read values
    }
    if (id >= 1 && id <= 4) has[id] = *h;
    return Status::OK();
  }));
  if (!has[1]) return Missing("DataPageHeader", "num_values");
  if (!has[2]) return Missing("DataPageHeader", "encoding");
  if (!has[3]) return Missing("DataPageHeader", "definition_level_encoding");
  if (!has[4]) return Missing("DataPageHeader", "repetition_level_encoding");
  return Status::OK();
}

Status ParseDataPageHeaderV2(CompactReader& r, DataPageHeaderV2* d) {
  bool has[7] = {};
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    switch (id) {
      case 1:
        TRY(I32(r, t, &d->num_values, h));
        break;
      case 2:
        TRY(I32(r, t, &d->num_nulls, h));
        break;
      case 3:
        TRY(I32(r, t, &d->num_rows, h));
        break;
      case 4:
        TRY(Enum(r, t, &d->encoding, h));
        break;
      case 5:
        TRY(I32(r, t, &d->definition_levels_byte_length, h));
        break;
      case 6:
        TRY(I32(r, t, &d->repetition_levels_byte_length, h));
        break;
      case 7:
        *h = Bool(t, &d->is_compressed);
        break;
      default:
        break;  // 8 statistics
    }
    if (id >= 1 && id <= 6) has[id] = *h;
    return Status::OK();
  }));
  static constexpr const char* kNames[] = {"",
                                           "num_values",
                                           "num_nulls",
                                           "num_rows",
                                           "encoding",
                                           "definition_levels_byte_length",
                                           "repetition_levels_byte_length"};
  for (int id = 1; id <= 6; ++id) {
    if (!has[id]) return Missing("DataPageHeaderV2", kNames[id]);
  }
  return Status::OK();
}

Status ParseDictionaryPageHeader(CompactReader& r, DictionaryPageHeader* d) {
  bool has_num = false, has_encoding = false;
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    bool x = false;
    switch (id) {
      case 1:
        TRY(I32(r, t, &d->num_values, h));
        has_num = *h;
        break;
      case 2:
        TRY(Enum(r, t, &d->encoding, h));
        has_encoding = *h;
        break;
      case 3:
        if (Bool(t, &x)) {
          *h = true;
          d->is_sorted = x;
        }
        break;
      default:
        break;
    }
    return Status::OK();
  }));
  if (!has_num) return Missing("DictionaryPageHeader", "num_values");
  if (!has_encoding) return Missing("DictionaryPageHeader", "encoding");
  return Status::OK();
}

}  // namespace

Result<FileMetaData> ParseFileMetaData(std::string_view in) {
  CompactReader r(in);
  FileMetaData m;
  m.version = 0;
  bool has[5] = {};
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    switch (id) {
      case 1:
        TRY(I32(r, t, &m.version, h));
        break;
      case 2:
        TRY(List(r, t, CType::kStruct, h, [&]() -> Status {
          m.schema.emplace_back();
          return ParseSchemaElement(r, &m.schema.back());
        }));
        break;
      case 3:
        TRY(I64(r, t, &m.num_rows, h));
        break;
      case 4:
        TRY(List(r, t, CType::kStruct, h, [&]() -> Status {
          m.row_groups.emplace_back();
          return ParseRowGroup(r, &m.row_groups.back());
        }));
        break;
      case 5:
        TRY(List(r, t, CType::kStruct, h, [&]() -> Status {
          KeyValue kv;
          bool has_key = false;
          TRY(ForEachField(r, [&](int16_t f, CType ft, bool* fh) -> Status {
            if (f == 1) {
              TRY(Binary(r, ft, &kv.key, fh));
              has_key = *fh;
            } else if (f == 2) {
              TRY(Binary(r, ft, &kv.value, fh));
            }
            return Status::OK();
          }));
          if (!has_key) return Missing("KeyValue", "key");
          m.key_value_metadata.push_back(std::move(kv));
          return Status::OK();
        }));
        break;
      case 6:
        TRY(Binary(r, t, &m.created_by, h));
        break;
      case 7:
        TRY(List(r, t, CType::kStruct, h, [&]() -> Status {
          ++m.num_leaf_columns;
          return r.Skip(CType::kStruct);
        }));
        break;
      case 8:
      case 9:
        return Unimplemented("encrypted Parquet files are not supported");
      default:
        break;
    }
    if (id >= 1 && id <= 4) has[id] = *h;
    return Status::OK();
  }));
  if (!has[1]) return Missing("FileMetaData", "version");
  if (!has[2]) return Missing("FileMetaData", "schema");
  if (!has[3]) return Missing("FileMetaData", "num_rows");
  if (!has[4]) return Missing("FileMetaData", "row_groups");
  return m;
}

Status ParsePageHeader(std::string_view in, PageHeader* out, size_t* size) {
  CompactReader r(in);
  *out = PageHeader();
  bool has[4] = {};
  TRY(ForEachField(r, [&](int16_t id, CType t, bool* h) -> Status {
    int32_t v = 0;
    switch (id) {
      case 1:
        TRY(Enum(r, t, &out->type, h));
        break;
      case 2:
        TRY(I32(r, t, &out->uncompressed_page_size, h));
        break;
      case 3:
        TRY(I32(r, t, &out->compressed_page_size, h));
        break;
      case 4:
        TRY(I32(r, t, &v, h));
        if (*h) out->crc = v;
        break;
      case 5:
        if (t == CType::kStruct) {
          *h = true;
          out->data_page_header.emplace();
          return ParseDataPageHeader(r, &*out->data_page_header);
        }
        break;
      case 7:
        if (t == CType::kStruct) {
          *h = true;
          out->dictionary_page_header.emplace();
          return ParseDictionaryPageHeader(r, &*out->dictionary_page_header);
        }
        break;
      case 8:
        if (t == CType::kStruct) {
          *h = true;
          out->data_page_header_v2.emplace();
          return ParseDataPageHeaderV2(r, &*out->data_page_header_v2);
        }
        break;
      default:
        break;
    }
    if (id >= 1 && id <= 3) has[id] = *h;
    return Status::OK();
  }));
  if (!has[1]) return Missing("PageHeader", "type");
  if (!has[2]) return Missing("PageHeader", "uncompressed_page_size");
  if (!has[3]) return Missing("PageHeader", "compressed_page_size");
  *size = r.position();
  return Status::OK();
}

}  // namespace icestream::format::parquet

#undef TRY
