// Column writer and chunk builder: page encoding (PLAIN, RLE_DICTIONARY, RLE levels),
// statistics and compression (parquet-format README "Data Pages", Encodings.md).
#include "format/parquet/column_writer.h"

#include <algorithm>
#include <cstring>

#include "common/bytes.h"
#include "format/parquet/delta_encoder.h"
#include "format/parquet/rle_encoder.h"

namespace icestream::format::parquet {

namespace {

// Bytes of one PLAIN value of a fixed-width physical type; 0 for BYTE_ARRAY and BOOLEAN.
size_t PhysicalWidth(const ColumnDescriptor& c) {
  switch (c.physical) {
    case PhysicalType::kInt32:
    case PhysicalType::kFloat:
      return 4;
    case PhysicalType::kInt64:
    case PhysicalType::kDouble:
      return 8;
    case PhysicalType::kInt96:
      return 12;
    case PhysicalType::kFixedLenByteArray:
      return static_cast<size_t>(c.type_length);
    default:
      return 0;
  }
}

}  // namespace

ColumnWriter::ColumnWriter(const ColumnDescriptor* column, const WriterOptions* options)
    : column_(column),
      options_(options),
      value_width_(PhysicalWidth(*column)),
      dictionary_allowed_(options->dictionary && column->physical != PhysicalType::kBoolean),
      use_dictionary_(dictionary_allowed_),
      dict_direct_(dictionary_allowed_),
      dictionary_(column->physical == PhysicalType::kByteArray, value_width_),
      builder_(column, options) {}

void ColumnWriter::Rollback() {
  page_.num_levels = mark_levels_;
  page_.num_values = mark_values_;
  if (column_->max_rep > 0) page_.rep.resize(static_cast<size_t>(mark_levels_));
  if (column_->max_def > 0) page_.def.resize(static_cast<size_t>(mark_levels_));
  page_.plain.truncate(mark_plain_);
  // Dictionary entries added by the dropped values stay (unreferenced entries are
  // harmless); indices are per value. Values waiting for FlushDictionary (which runs at
  // record boundaries only) have none yet.
  if (dict_direct_) page_.indices.resize(static_cast<size_t>(mark_values_));
}

PageData ColumnWriter::CutPage() {
  FlushDictionary();
  PageData out = std::move(page_);
  out.dictionary = use_dictionary_;
  if (use_dictionary_) {
    out.dict_bit_width = BitWidth(dictionary_.size() > 0 ? dictionary_.size() - 1 : 0);
    const bool not_paying = dictionary_not_paying_;
    dict_values_ += out.num_values;
    if (static_cast<int64_t>(dictionary_.plain().size()) > options_->dictionary_page_size_limit) {
      use_dictionary_ = false;  // fallback to PLAIN for the rest of this chunk
    } else if (not_paying) {
      // Most values are distinct (ids, timestamps): the dictionary costs hashing and
      // saves nothing. PLAIN for the rest of the chunk. (Each chunk decides afresh, so
      // a row group's bytes depend only on its own records.)
      use_dictionary_ = false;
    }
    dict_direct_ = dict_direct_ && use_dictionary_;
  }
  page_ = PageData();
  // Keep the capacity habits of the previous page to avoid regrowth.
  page_.plain.reserve(out.plain.capacity());
  if (use_dictionary_) page_.indices.reserve(out.indices.capacity());
  if (column_->max_def > 0) page_.def.reserve(out.def.capacity());
  if (column_->max_rep > 0) page_.rep.reserve(out.rep.capacity());
  mark_levels_ = mark_values_ = 0;
  mark_plain_ = 0;
  return out;
}

void ColumnWriter::ResetChunk() {
  dictionary_.Clear();
  dict_values_ = 0;
  window_entries_ = 0;
  window_values_ = 0;
  dictionary_not_paying_ = false;
  quarter_checked_ = false;
  use_dictionary_ = dictionary_allowed_;
  dict_direct_ = dictionary_allowed_;
}

namespace {

void AppendLevels(const std::vector<uint16_t>& levels, int16_t max_level, std::string* body) {
  size_t len_pos = body->size();
  body->append(4, '\0');
  RleEncode(levels.data(), levels.size(), BitWidth(static_cast<uint64_t>(max_level)), body);
  PutFixed32(body->data() + len_pos, static_cast<uint32_t>(body->size() - len_pos - 4));
}

}  // namespace

void ChunkBuilder::UpdatePlainStats(const PageData& page) {
  const char* p = page.plain.data();
  auto n = static_cast<size_t>(page.num_values);
  if (n == 0) return;
  // Typed loops over the page (min/max once per page), not a call per value.
  auto load = [p](size_t i, auto* v) { std::memcpy(v, p + i * sizeof(*v), sizeof(*v)); };
  switch (column_->physical) {
    case PhysicalType::kBoolean:
    case PhysicalType::kInt32: {
      if (column_->physical == PhysicalType::kBoolean) {  // one byte 0/1 per value here
        bool any_true = std::memchr(p, 1, n) != nullptr,
             any_false = std::memchr(p, 0, n) != nullptr;
        if (any_false) stats_.UpdateBool(false);
        if (any_true) stats_.UpdateBool(true);
        break;
      }
      int32_t lo, hi;
      load(0, &lo);
      hi = lo;
      for (size_t i = 1; i < n; ++i) {
        int32_t v;
        load(i, &v);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      stats_.UpdateInt(lo);
      stats_.UpdateInt(hi);
      break;
    }
    case PhysicalType::kInt64: {
      int64_t lo, hi;
      load(0, &lo);
      hi = lo;
      for (size_t i = 1; i < n; ++i) {
        int64_t v;
        load(i, &v);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      stats_.UpdateInt(lo);
      stats_.UpdateInt(hi);
      break;
    }
    case PhysicalType::kFloat:
      stats_.UpdateFloats<float>(p, n);
      break;
    case PhysicalType::kDouble:
      stats_.UpdateFloats<double>(p, n);
      break;
    case PhysicalType::kByteArray: {
      size_t pos = 0;
      for (size_t i = 0; i < n; ++i) {
        uint32_t len = GetFixed32(p + pos);
        stats_.UpdateBytes(std::string_view(p + pos + 4, len));
        pos += 4 + len;
      }
      break;
    }
    case PhysicalType::kFixedLenByteArray:
      stats_.UpdateFixed(p, n, static_cast<size_t>(column_->type_length));
      break;
    case PhysicalType::kInt96:
      break;  // never written
  }
}

Encoding ChunkBuilder::AppendValues(const PageData& page) {
  const auto n = static_cast<size_t>(page.num_values);
  switch (column_->physical) {
    case PhysicalType::kInt32:
    case PhysicalType::kInt64: {
      if (!options_->delta_integers || n == 0) break;
      const size_t start = body_.size();  // after the levels
      if (column_->physical == PhysicalType::kInt32) {
        EncodeDeltaBinaryPacked32(page.plain.data(), n, &body_);
      } else {
        EncodeDeltaBinaryPacked64(page.plain.data(), n, &body_);
      }
      if (body_.size() - start < page.plain.size()) return Encoding::kDeltaBinaryPacked;
      // Random full-width values cost a little more than PLAIN as deltas: those stay PLAIN.
      body_.resize(start);
      break;
    }
    case PhysicalType::kFloat:
    case PhysicalType::kDouble:
      if (split_ != FloatEncoding::kSplit || n == 0) break;
      EncodeByteStreamSplit(page.plain.data(), n, page.plain.size() / n, &body_);
      return Encoding::kByteStreamSplit;
    case PhysicalType::kFixedLenByteArray:
      // Decimals as DELTA_BYTE_ARRAY: their shared sign bytes drop out. (Not
      // BYTE_STREAM_SPLIT, which would gather them into runs too: DuckDB 1.5 reads it for
      // FLOAT and DOUBLE only.) UUIDs and fixed stay PLAIN: random bytes share no prefix.
      if (!options_->delta_decimals || n == 0 || column_->type.id != iceberg::TypeId::kDecimal) {
        break;
      }
      if (EncodeDeltaByteArrayFixed(page.plain.data(), n, static_cast<size_t>(column_->type_length),
                                    page.plain.size(), &body_)) {
        return Encoding::kDeltaByteArray;
      }
      break;
    case PhysicalType::kBoolean:
      // PLAIN BOOLEAN: bit-packed, LSB first.
      BitPack(reinterpret_cast<const uint8_t*>(page.plain.data()), page.plain.size(), 1, &body_);
      return Encoding::kPlain;
    default:
      break;
  }
  body_.append(page.plain);
  return Encoding::kPlain;
}

Status ChunkBuilder::ChooseFloatEncoding(const PageData& page, Compressor* compressor) {
  split_ = FloatEncoding::kPlain;
  if (!options_->byte_stream_split) return Status::OK();
  // 2,048 values (16 KiB of doubles) tell random mantissas from repeated patterns (the
  // same choice as 8,192 on every double column of bench/convert/shapes); their two
  // compressions, once per chunk, were 2% of the instructions of a struct or double
  // convert with 8,192.
  constexpr size_t kSampleValues = 2048;
  const size_t width = column_->physical == PhysicalType::kFloat ? 4 : 8;
  const size_t n = std::min(static_cast<size_t>(page.num_values), kSampleValues);
  const std::string_view plain(page.plain.data(), n * width);
  std::string split, packed;
  EncodeByteStreamSplit(plain.data(), n, width, &split);
  RETURN_IF_ERROR(compressor->Compress(plain, &packed));
  const size_t plain_size = packed.size();
  packed.clear();
  RETURN_IF_ERROR(compressor->Compress(split, &packed));
  if (packed.size() < plain_size) split_ = FloatEncoding::kSplit;
  return Status::OK();
}

Status ChunkBuilder::AddPage(PageData page, Compressor* compressor) {
  if (page.num_levels == 0) return Status::OK();
  body_.clear();
  if (column_->max_rep > 0) AppendLevels(page.rep, column_->max_rep, &body_);
  if (column_->max_def > 0) AppendLevels(page.def, column_->max_def, &body_);
  null_count_ += page.num_levels - page.num_values;

  Encoding encoding = Encoding::kPlain;
  if (page.dictionary) {
    encoding = Encoding::kRleDictionary;
    // Dictionary indices: one byte of bit width, then the hybrid encoding without a
    // length prefix (Encodings.md "Dictionary Encoding").
    body_.push_back(static_cast<char>(page.dict_bit_width));
    RleEncode(page.indices.data(), page.indices.size(), page.dict_bit_width, &body_);
    for (uint32_t idx : page.indices) {
      if (idx >= dict_use_counts_.size()) dict_use_counts_.resize(idx + 1024, 0);
      ++dict_use_counts_[idx];
    }
    ++dict_pages_;
  } else {
    if (split_ == FloatEncoding::kUndecided && page.num_values > 0 &&
        (column_->physical == PhysicalType::kFloat || column_->physical == PhysicalType::kDouble)) {
      RETURN_IF_ERROR(ChooseFloatEncoding(page, compressor));
    }
    encoding = AppendValues(page);
    UpdatePlainStats(page);
    ++(encoding == Encoding::kPlain               ? plain_pages_
       : encoding == Encoding::kDeltaBinaryPacked ? delta_pages_
       : encoding == Encoding::kDeltaByteArray    ? delta_bytes_pages_
                                                  : split_pages_);
  }

  compressed_.clear();
  RETURN_IF_ERROR(compressor->Compress(body_, &compressed_));
  if (body_.size() > INT32_MAX || compressed_.size() > INT32_MAX) {
    return InvalidArgument("page larger than 2 GiB");
  }
  PageHeader h;
  h.type = PageType::kDataPage;
  h.uncompressed_page_size = static_cast<int32_t>(body_.size());
  h.compressed_page_size = static_cast<int32_t>(compressed_.size());
  DataPageHeader dph;
  dph.num_values = static_cast<int32_t>(page.num_levels);
  dph.encoding = encoding;
  h.data_page_header = dph;
  size_t before = data_.size();
  SerializePageHeader(h, &data_);
  auto header_size = static_cast<int64_t>(data_.size() - before);
  data_.append(compressed_);
  num_values_ += page.num_levels;
  uncompressed_bytes_ += header_size + static_cast<int64_t>(body_.size());
  compressed_bytes_ += header_size + static_cast<int64_t>(compressed_.size());
  return Status::OK();
}

Status ChunkBuilder::Finish(const Dictionary& dictionary, Compressor* compressor, int64_t offset,
                            std::string* dict_page_out, ColumnChunk* chunk,
                            StatsAccumulator* file_stats) {
  dict_page_out->clear();
  ColumnMetaData& m = chunk->meta_data;
  m.type = column_->physical;
  m.path_in_schema = column_->path;
  m.codec = options_->codec;
  m.num_values = num_values_;
  int64_t uncompressed = uncompressed_bytes_;
  int64_t compressed = compressed_bytes_;

  if (dict_pages_ > 0) {
    // Statistics of dictionary-encoded pages come from the entries they used.
    for (uint32_t i = 0; i < dict_use_counts_.size() && i < dictionary.size(); ++i) {
      if (dict_use_counts_[i] == 0) continue;
      int64_t nan_before = stats_.nan_count();
      stats_.UpdatePlain(dictionary.entry(i));
      // A NaN entry stands for every page value that referenced it.
      if (stats_.nan_count() != nan_before) stats_.AddNanCount(dict_use_counts_[i] - 1);
    }
    compressed_.clear();
    RETURN_IF_ERROR(compressor->Compress(dictionary.plain(), &compressed_));
    PageHeader h;
    h.type = PageType::kDictionaryPage;
    h.uncompressed_page_size = static_cast<int32_t>(dictionary.plain().size());
    h.compressed_page_size = static_cast<int32_t>(compressed_.size());
    h.dictionary_page_header =
        DictionaryPageHeader{static_cast<int32_t>(dictionary.size()), Encoding::kPlain};
    SerializePageHeader(h, dict_page_out);
    auto header_size = static_cast<int64_t>(dict_page_out->size());
    dict_page_out->append(compressed_);
    uncompressed += header_size + static_cast<int64_t>(dictionary.plain().size());
    compressed += header_size + static_cast<int64_t>(compressed_.size());
    m.dictionary_page_offset = offset;
    m.data_page_offset = offset + static_cast<int64_t>(dict_page_out->size());
  } else {
    m.dictionary_page_offset.reset();
    m.data_page_offset = offset;
  }
  m.total_uncompressed_size = uncompressed;
  m.total_compressed_size = compressed;

  m.encodings.clear();
  // PLAIN: the PLAIN data pages and the dictionary page.
  if (plain_pages_ > 0 || dict_pages_ > 0) m.encodings.push_back(Encoding::kPlain);
  if (column_->max_def > 0 || column_->max_rep > 0) m.encodings.push_back(Encoding::kRle);
  if (dict_pages_ > 0) m.encodings.push_back(Encoding::kRleDictionary);
  if (delta_pages_ > 0) m.encodings.push_back(Encoding::kDeltaBinaryPacked);
  if (delta_bytes_pages_ > 0) m.encodings.push_back(Encoding::kDeltaByteArray);
  if (split_pages_ > 0) m.encodings.push_back(Encoding::kByteStreamSplit);
  m.encoding_stats.clear();
  if (dict_pages_ > 0) {
    m.encoding_stats.push_back({PageType::kDictionaryPage, Encoding::kPlain, 1});
    m.encoding_stats.push_back({PageType::kDataPage, Encoding::kRleDictionary, dict_pages_});
  }
  if (plain_pages_ > 0)
    m.encoding_stats.push_back({PageType::kDataPage, Encoding::kPlain, plain_pages_});
  if (delta_pages_ > 0) {
    m.encoding_stats.push_back({PageType::kDataPage, Encoding::kDeltaBinaryPacked, delta_pages_});
  }
  if (delta_bytes_pages_ > 0) {
    m.encoding_stats.push_back(
        {PageType::kDataPage, Encoding::kDeltaByteArray, delta_bytes_pages_});
  }
  if (split_pages_ > 0) {
    m.encoding_stats.push_back({PageType::kDataPage, Encoding::kByteStreamSplit, split_pages_});
  }

  m.statistics = stats_.ToParquet(null_count_, options_->statistics_truncate_bytes);
  file_stats->Merge(stats_);

  num_values_ = uncompressed_bytes_ = compressed_bytes_ = 0;
  plain_pages_ = dict_pages_ = delta_pages_ = delta_bytes_pages_ = split_pages_ = 0;
  split_ = FloatEncoding::kUndecided;
  null_count_ = 0;
  dict_use_counts_.clear();
  stats_ = StatsAccumulator(column_);
  return Status::OK();
}

}  // namespace icestream::format::parquet
