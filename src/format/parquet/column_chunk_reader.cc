// Column chunk -> pages -> levels and values (parquet-format README "Data Pages",
// Encodings.md; parquet.thrift DataPageHeader, DataPageHeaderV2, DictionaryPageHeader).
#include "format/parquet/column_chunk_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "common/bytes.h"
#include "format/parquet/delta_decoder.h"
#include "format/parquet/rle_decoder.h"
#include "format/parquet/value_decoder.h"

namespace icestream::format::parquet {
namespace {

class ChunkReader {
 public:
  ChunkReader(std::string_view file, const ColumnChunk& chunk, const SourceLeaf& leaf,
              bool verify_crc, Decompressor* decompressor, ReadBudget* budget, DecodedColumn* out)
      : file_(file),
        meta_(chunk.meta_data),
        leaf_(leaf),
        verify_crc_(verify_crc),
        decompressor_(decompressor),
        budget_(budget),
        out_(out),
        width_(FixedWidth(leaf.physical, leaf.type_length)) {}

  Status Run(int64_t footer_start);

 private:
  Status Bad(const std::string& what) const {
    return Corruption("column " + leaf_.path + ", page at byte " + std::to_string(page_offset_) +
                      ": " + what);
  }
  Status Unsupported(const std::string& what) const {
    return Unimplemented("column " + leaf_.path + ": " + what);
  }
  // The uncompressed bytes of `body` (a view into the file when not compressed).
  Status Inflate(std::string_view body, int64_t size, bool keep, std::string_view* out);
  Status ReadDictionary(const PageHeader& h, std::string_view body);
  Status ReadDataPage(const PageHeader& h, std::string_view body);
  Status ReadLevels(std::string_view in, int16_t max_level, size_t n, std::vector<int16_t>* levels);
  Status ReadValues(Encoding encoding, std::string_view in, size_t n);
  Status Charge(size_t entries_or_values, size_t per, std::string_view what) {
    return budget_->Take(static_cast<uint64_t>(entries_or_values) * per, what);
  }

  std::string_view file_;
  const ColumnMetaData& meta_;
  const SourceLeaf& leaf_;
  bool verify_crc_;
  Decompressor* decompressor_;
  ReadBudget* budget_;
  DecodedColumn* out_;
  size_t width_;
  int64_t page_offset_ = 0;
  bool have_dictionary_ = false;
  std::string dict_fixed_;
  std::vector<std::string_view> dict_bytes_;
  size_t dict_size_ = 0;
  std::string scratch_;  // decompressed page whose bytes are not referenced afterwards
  std::vector<uint32_t> indices_;
  std::vector<int64_t> ints_;
};

Status ChunkReader::Inflate(std::string_view body, int64_t size, bool keep, std::string_view* out) {
  if (size < 0) return Bad("negative uncompressed size");
  if (meta_.codec == Codec::kUncompressed) {
    if (body.size() != static_cast<size_t>(size)) {
      return Bad("uncompressed page of " + std::to_string(body.size()) + " bytes, header says " +
                 std::to_string(size));
    }
    *out = body;
    return Status::OK();
  }
  RETURN_IF_ERROR(budget_->Take(static_cast<uint64_t>(size), "a decompressed page"));
  std::string* dst = &scratch_;
  if (keep) dst = &out_->storage.emplace_back();
  Status st = decompressor_->Decompress(meta_.codec, body, static_cast<size_t>(size), dst);
  if (!st.ok()) {
    if (st.code() == StatusCode::kCorruption) return Bad(st.message());
    return Unsupported(st.message());
  }
  *out = *dst;
  return Status::OK();
}

Status ChunkReader::Run(int64_t footer_start) {
  int64_t start = meta_.data_page_offset;
  if (meta_.dictionary_page_offset && *meta_.dictionary_page_offset >= 4 &&
      *meta_.dictionary_page_offset < meta_.data_page_offset) {
    start = *meta_.dictionary_page_offset;
  }
  page_offset_ = start;
  if (start < 4 || meta_.total_compressed_size < 0 || start > footer_start ||
      meta_.total_compressed_size > footer_start - start) {
    return Bad("chunk [" + std::to_string(start) + ", +" +
               std::to_string(meta_.total_compressed_size) + ") outside the data area [4, " +
               std::to_string(footer_start) + ")");
  }
  if (meta_.num_values < 0) return Bad("negative num_values");
  if (meta_.codec != Codec::kUncompressed && meta_.codec != Codec::kSnappy &&
      meta_.codec != Codec::kGzip && meta_.codec != Codec::kZstd) {
    return Unsupported("codec " + std::string(CodecName(meta_.codec)) + " is not supported");
  }
  const std::string_view chunk =
      file_.substr(static_cast<size_t>(start), static_cast<size_t>(meta_.total_compressed_size));
  size_t pos = 0;
  while (pos < chunk.size() && out_->num_entries < meta_.num_values) {
    page_offset_ = start + static_cast<int64_t>(pos);
    PageHeader h;
    size_t header_size = 0;
    Status st = ParsePageHeader(chunk.substr(pos), &h, &header_size);
    if (!st.ok()) return st.code() == StatusCode::kCorruption ? Bad(st.message()) : st;
    pos += header_size;
    if (h.compressed_page_size < 0 ||
        static_cast<size_t>(h.compressed_page_size) > chunk.size() - pos) {
      return Bad("page body of " + std::to_string(h.compressed_page_size) +
                 " bytes runs past the chunk");
    }
    std::string_view body = chunk.substr(pos, static_cast<size_t>(h.compressed_page_size));
    pos += body.size();
    if (verify_crc_ && h.crc) {
      // parquet.thrift PageHeader.crc: CRC-32 (zlib polynomial) of the page as stored.
      uLong crc =
          crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
      if (static_cast<uint32_t>(crc) != static_cast<uint32_t>(*h.crc))
        return Bad("page CRC mismatch");
    }
    switch (h.type) {
      case PageType::kDictionaryPage:
        RETURN_IF_ERROR(ReadDictionary(h, body));
        break;
      case PageType::kDataPage:
      case PageType::kDataPageV2:
        RETURN_IF_ERROR(ReadDataPage(h, body));
        break;
      default:
        break;  // index pages and unknown types carry no values
    }
  }
  if (out_->num_entries != meta_.num_values) {
    return Bad("the pages hold " + std::to_string(out_->num_entries) +
               " level entries, the chunk metadata says " + std::to_string(meta_.num_values));
  }
  return Status::OK();
}

Status ChunkReader::ReadDictionary(const PageHeader& h, std::string_view body) {
  if (!h.dictionary_page_header) return Bad("dictionary page without a DictionaryPageHeader");
  if (have_dictionary_) return Bad("a second dictionary page");
  if (out_->num_entries > 0) return Bad("dictionary page after data pages");
  const DictionaryPageHeader& d = *h.dictionary_page_header;
  if (d.encoding != Encoding::kPlain && d.encoding != Encoding::kPlainDictionary) {
    return Unsupported("dictionary page encoding " + EncodingName(d.encoding));
  }
  if (d.num_values < 0) return Bad("negative dictionary size");
  const bool byte_array = leaf_.physical == PhysicalType::kByteArray;
  std::string_view data;
  RETURN_IF_ERROR(Inflate(body, h.uncompressed_page_size, byte_array, &data));
  auto n = static_cast<size_t>(d.num_values);
  RETURN_IF_ERROR(Charge(n, byte_array ? sizeof(std::string_view) : width_, "a dictionary"));
  Status st = DecodePlain(data, leaf_.physical, leaf_.type_length, n, &dict_fixed_, &dict_bytes_);
  if (!st.ok())
    return st.code() == StatusCode::kCorruption ? Bad(st.message()) : Unsupported(st.message());
  dict_size_ = n;
  have_dictionary_ = true;
  return Status::OK();
}

Status ChunkReader::ReadLevels(std::string_view in, int16_t max_level, size_t n,
                               std::vector<int16_t>* levels) {
  int width = 0;
  while ((1 << width) <= max_level) ++width;
  RleDecoder d(in, width);
  size_t at = levels->size();
  levels->resize(at + n);
  auto* p = reinterpret_cast<uint16_t*>(levels->data() + at);
  Status st = d.Get(p, n);
  if (!st.ok()) return Bad(st.message());
  for (size_t i = 0; i < n; ++i) {
    if (p[i] > static_cast<uint16_t>(max_level)) {
      return Bad("level " + std::to_string(p[i]) + " above the maximum " +
                 std::to_string(max_level));
    }
  }
  return Status::OK();
}

Status ChunkReader::ReadDataPage(const PageHeader& h, std::string_view body) {
  const bool v2 = h.type == PageType::kDataPageV2;
  if (v2 ? !h.data_page_header_v2 : !h.data_page_header) return Bad("data page without its header");
  const int32_t num_entries =
      v2 ? h.data_page_header_v2->num_values : h.data_page_header->num_values;
  const Encoding encoding = v2 ? h.data_page_header_v2->encoding : h.data_page_header->encoding;
  if (num_entries < 0) return Bad("negative num_values");
  if (num_entries > meta_.num_values - out_->num_entries) {
    return Bad("more level entries than the chunk metadata announces");
  }
  const auto n = static_cast<size_t>(num_entries);
  const bool byte_array = leaf_.physical == PhysicalType::kByteArray;
  // Whether value views will point into the page (kept alive in storage).
  const bool keep = byte_array && encoding != Encoding::kDeltaByteArray &&
                    encoding != Encoding::kRleDictionary && encoding != Encoding::kPlainDictionary;

  std::string_view rep_bytes, def_bytes, values;
  if (!v2) {
    if (leaf_.max_rep > 0 && h.data_page_header->repetition_level_encoding != Encoding::kRle) {
      return Unsupported("repetition levels in " +
                         EncodingName(h.data_page_header->repetition_level_encoding));
    }
    if (leaf_.max_def > 0 && h.data_page_header->definition_level_encoding != Encoding::kRle) {
      return Unsupported("definition levels in " +
                         EncodingName(h.data_page_header->definition_level_encoding));
    }
    std::string_view page;
    RETURN_IF_ERROR(Inflate(body, h.uncompressed_page_size, keep, &page));
    // [u32 length][hybrid] for each level kind present.
    auto take_levels = [&](std::string_view* levels) -> Status {
      if (page.size() < 4) return Bad("page ends before a level length");
      uint32_t len = GetFixed32(page.data());
      if (len > page.size() - 4)
        return Bad("level length " + std::to_string(len) + " beyond the page");
      *levels = page.substr(4, len);
      page.remove_prefix(4 + static_cast<size_t>(len));
      return Status::OK();
    };
    if (leaf_.max_rep > 0) RETURN_IF_ERROR(take_levels(&rep_bytes));
    if (leaf_.max_def > 0) RETURN_IF_ERROR(take_levels(&def_bytes));
    values = page;
  } else {
    const DataPageHeaderV2& d = *h.data_page_header_v2;
    if (d.repetition_levels_byte_length < 0 || d.definition_levels_byte_length < 0 ||
        static_cast<int64_t>(d.repetition_levels_byte_length) + d.definition_levels_byte_length >
            static_cast<int64_t>(body.size()) ||
        static_cast<int64_t>(d.repetition_levels_byte_length) + d.definition_levels_byte_length >
            h.uncompressed_page_size) {
      return Bad("level lengths beyond the page");
    }
    rep_bytes = body.substr(0, static_cast<size_t>(d.repetition_levels_byte_length));
    def_bytes = body.substr(rep_bytes.size(), static_cast<size_t>(d.definition_levels_byte_length));
    std::string_view rest = body.substr(rep_bytes.size() + def_bytes.size());
    const int64_t raw =
        h.uncompressed_page_size - static_cast<int64_t>(rep_bytes.size() + def_bytes.size());
    if (d.is_compressed) {
      RETURN_IF_ERROR(Inflate(rest, raw, keep, &values));
    } else {
      if (static_cast<int64_t>(rest.size()) != raw)
        return Bad("uncompressed v2 values differ from the header size");
      values = rest;
    }
  }

  // Levels.
  const size_t before = static_cast<size_t>(out_->num_entries);
  RETURN_IF_ERROR(
      Charge(n, (leaf_.max_rep > 0 ? 2 : 0) + (leaf_.max_def > 0 ? 2 : 0), "level arrays"));
  if (leaf_.max_rep > 0) {
    RETURN_IF_ERROR(ReadLevels(rep_bytes, leaf_.max_rep, n, &out_->rep));
    if (before == 0 && n > 0 && out_->rep[0] != 0)
      return Bad("the chunk's first entry does not start a record");
    out_->num_records +=
        std::count(out_->rep.begin() + static_cast<ptrdiff_t>(before), out_->rep.end(), 0);
  } else {
    out_->num_records += num_entries;
  }
  size_t num_values = n;
  if (leaf_.max_def > 0) {
    RETURN_IF_ERROR(ReadLevels(def_bytes, leaf_.max_def, n, &out_->def));
    num_values = static_cast<size_t>(std::count(out_->def.begin() + static_cast<ptrdiff_t>(before),
                                                out_->def.end(), leaf_.max_def));
  }
  out_->num_entries += num_entries;
  RETURN_IF_ERROR(ReadValues(encoding, values, num_values));
  out_->num_values += static_cast<int64_t>(num_values);
  return Status::OK();
}

Status ChunkReader::ReadValues(Encoding encoding, std::string_view in, size_t n) {
  const PhysicalType p = leaf_.physical;
  const bool byte_array = p == PhysicalType::kByteArray;
  RETURN_IF_ERROR(Charge(n, byte_array ? sizeof(std::string_view) : width_, "values"));
  auto fail = [&](const Status& st) {
    return st.code() == StatusCode::kCorruption ? Bad(st.message()) : st;
  };
  switch (encoding) {
    case Encoding::kPlain:
      if (Status st = DecodePlain(in, p, leaf_.type_length, n, &out_->fixed, &out_->bytes);
          !st.ok()) {
        return fail(st);
      }
      return Status::OK();
    case Encoding::kPlainDictionary:
    case Encoding::kRleDictionary: {
      if (!have_dictionary_) return Bad("dictionary-encoded page without a dictionary page");
      if (Status st = DecodeDictionaryIndices(in, n, &indices_); !st.ok()) return fail(st);
      for (uint32_t i : indices_) {
        if (i >= dict_size_) {
          return Bad("dictionary index " + std::to_string(i) + " beyond " +
                     std::to_string(dict_size_) + " entries");
        }
      }
      if (byte_array) {
        for (uint32_t i : indices_) out_->bytes.push_back(dict_bytes_[i]);
      } else {
        size_t at = out_->fixed.size();
        out_->fixed.resize(at + n * width_);
        char* dst = out_->fixed.data() + at;
        for (uint32_t i : indices_) {
          std::memcpy(dst, dict_fixed_.data() + static_cast<size_t>(i) * width_, width_);
          dst += width_;
        }
      }
      return Status::OK();
    }
    case Encoding::kRle:
      if (p != PhysicalType::kBoolean)
        return Unsupported("RLE encoding for " + PhysicalTypeName(p));
      if (Status st = DecodeRleBooleans(in, n, &out_->fixed); !st.ok()) return fail(st);
      for (size_t i = out_->fixed.size() - n; i < out_->fixed.size(); ++i) {
        if (static_cast<uint8_t>(out_->fixed[i]) > 1) return Bad("RLE boolean above 1");
      }
      return Status::OK();
    case Encoding::kDeltaBinaryPacked: {
      if (p != PhysicalType::kInt32 && p != PhysicalType::kInt64) {
        return Unsupported("DELTA_BINARY_PACKED for " + PhysicalTypeName(p));
      }
      RETURN_IF_ERROR(Charge(n, 8, "delta values"));
      ints_.resize(n);
      size_t consumed;
      if (Status st = DecodeDeltaBinaryPacked(in, n, ints_.data(), &consumed); !st.ok())
        return fail(st);
      size_t at = out_->fixed.size();
      out_->fixed.resize(at + n * width_);
      char* dst = out_->fixed.data() + at;
      for (size_t i = 0; i < n; ++i, dst += width_) {
        if (width_ == 4) {
          PutFixed32(dst, static_cast<uint32_t>(ints_[i]));
        } else {
          PutFixed64(dst, static_cast<uint64_t>(ints_[i]));
        }
      }
      return Status::OK();
    }
    case Encoding::kDeltaLengthByteArray:
      if (!byte_array) return Unsupported("DELTA_LENGTH_BYTE_ARRAY for " + PhysicalTypeName(p));
      if (Status st = DecodeDeltaLengthByteArray(in, n, &out_->bytes); !st.ok()) return fail(st);
      return Status::OK();
    case Encoding::kDeltaByteArray: {
      if (!byte_array && p != PhysicalType::kFixedLenByteArray) {
        return Unsupported("DELTA_BYTE_ARRAY for " + PhysicalTypeName(p));
      }
      std::string& storage = out_->storage.emplace_back();
      std::vector<std::string_view> views;
      std::vector<std::string_view>* dst = byte_array ? &out_->bytes : &views;
      size_t max_bytes = static_cast<size_t>(std::max<int64_t>(budget_->left(), 0));
      if (Status st = DecodeDeltaByteArray(in, n, max_bytes, &storage, dst); !st.ok())
        return fail(st);
      RETURN_IF_ERROR(budget_->Take(storage.size(), "DELTA_BYTE_ARRAY values"));
      if (!byte_array) {
        for (std::string_view v : views) {
          if (v.size() != width_)
            return Bad("DELTA_BYTE_ARRAY value not " + std::to_string(width_) + " bytes");
          out_->fixed.append(v);
        }
        out_->storage.pop_back();
      }
      return Status::OK();
    }
    case Encoding::kByteStreamSplit:
      if (p != PhysicalType::kFloat && p != PhysicalType::kDouble && p != PhysicalType::kInt32 &&
          p != PhysicalType::kInt64 && p != PhysicalType::kFixedLenByteArray) {
        return Unsupported("BYTE_STREAM_SPLIT for " + PhysicalTypeName(p));
      }
      if (Status st = DecodeByteStreamSplit(in, width_, n, &out_->fixed); !st.ok()) return fail(st);
      return Status::OK();
    default:
      return Unsupported("data page encoding " + EncodingName(encoding));
  }
}

}  // namespace

Status ReadColumnChunk(std::string_view file, int64_t footer_start, const ColumnChunk& chunk,
                       const SourceLeaf& leaf, bool verify_crc, Decompressor* decompressor,
                       ReadBudget* budget, DecodedColumn* out) {
  *out = DecodedColumn();
  if (chunk.meta_data.type != leaf.physical) {
    return Corruption("column " + leaf.path + ": chunk type " +
                      PhysicalTypeName(chunk.meta_data.type) + " differs from the schema's " +
                      PhysicalTypeName(leaf.physical));
  }
  if (leaf.physical == PhysicalType::kInt96)
    return Unimplemented("column " + leaf.path + ": INT96 is not supported");
  ChunkReader r(file, chunk, leaf, verify_crc, decompressor, budget, out);
  return r.Run(footer_start);
}

}  // namespace icestream::format::parquet
