// Column writers: values and levels of one leaf column -> data pages -> a column chunk.
//
// A ColumnWriter lives on the caller's thread and buffers the current page: repetition
// and definition levels, and either PLAIN-encoded values or dictionary indices. At a
// record boundary the FileWriter may cut the page; the buffered page (PageData) is then
// encoded, measured (statistics) and compressed by a ChunkBuilder, on the caller's
// thread or on a background thread. Everything added since the last Mark() can be
// rolled back, which is how a rejected record leaves no partial row behind.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "format/parquet/compression.h"
#include "format/parquet/dictionary.h"
#include "format/parquet/metadata.h"
#include "format/parquet/pod_buffer.h"
#include "format/parquet/schema_mapping.h"
#include "format/parquet/statistics.h"
#include "format/parquet/writer_options.h"

namespace icestream::format::parquet {

// One cut page, owned by whoever encodes it.
struct PageData {
  std::vector<uint16_t> rep;
  std::vector<uint16_t> def;
  PodBuffer plain;                // PLAIN values (BOOLEAN: one byte 0/1 per value)
  std::vector<uint32_t> indices;  // dictionary indices when `dictionary`
  int64_t num_levels = 0;
  int64_t num_values = 0;  // non-null values
  bool dictionary = false;
  int dict_bit_width = 0;
};

// Encodes pages of one column chunk and keeps their bytes until the row group is
// written. Used by one thread at a time (the FileWriter drains the background worker
// before touching it from the caller's thread).
class ChunkBuilder {
 public:
  ChunkBuilder(const ColumnDescriptor* column, const WriterOptions* options)
      : column_(column), options_(options), stats_(column) {}

  // Data page v1 (README "Data Pages"): [rep: u32 len + RLE][def: u32 len + RLE][values].
  // Values: RLE_DICTIONARY indices, or DELTA_BINARY_PACKED integers when smaller than
  // PLAIN (WriterOptions::delta_integers), DELTA_BYTE_ARRAY FIXED_LEN_BYTE_ARRAY decimals
  // when smaller than PLAIN (WriterOptions::delta_decimals), BYTE_STREAM_SPLIT floats
  // (WriterOptions::byte_stream_split), or PLAIN.
  Status AddPage(PageData page, Compressor* compressor);

  // Writes [dictionary page][data pages] to out at file offset `offset` and fills
  // `chunk`. `dictionary` is the chunk's dictionary (used when any page referenced it).
  // Folds this chunk's statistics into *file_stats. Resets the builder.
  Status Finish(const Dictionary& dictionary, Compressor* compressor, int64_t offset,
                std::string* dict_page_out, ColumnChunk* chunk, StatsAccumulator* file_stats);

  const std::string& data() const { return data_; }
  // Exchanges the finished chunk's pages with *other (an empty buffer, whose capacity
  // the next chunk's pages then use).
  void SwapData(std::string* other) { data_.swap(*other); }
  int64_t null_count() const { return null_count_; }

 private:
  void UpdatePlainStats(const PageData& page);
  // Appends the page's values to body_ in the encoding the options and the column's type
  // call for: DELTA_BINARY_PACKED for INT32/INT64 and DELTA_BYTE_ARRAY for FIXED_LEN
  // decimals when smaller than PLAIN, BYTE_STREAM_SPLIT for FLOAT/DOUBLE, otherwise PLAIN.
  // Returns the encoding.
  Encoding AppendValues(const PageData& page);
  // FLOAT/DOUBLE: decides split_ for the chunk from the first values of its first page,
  // compressed PLAIN and BYTE_STREAM_SPLIT (the smaller wins; a tie stays PLAIN).
  Status ChooseFloatEncoding(const PageData& page, Compressor* compressor);

  // Whether this chunk's FLOAT/DOUBLE pages are BYTE_STREAM_SPLIT (decided on its first
  // page with values).
  enum class FloatEncoding : uint8_t { kUndecided, kPlain, kSplit };

  const ColumnDescriptor* column_;
  const WriterOptions* options_;
  std::string data_;  // data pages, headers included
  std::string body_;  // scratch: uncompressed page body
  std::string compressed_;
  int64_t num_values_ = 0;
  int64_t uncompressed_bytes_ = 0;
  int64_t compressed_bytes_ = 0;
  int32_t plain_pages_ = 0;
  int32_t dict_pages_ = 0;
  int32_t delta_pages_ = 0;        // DELTA_BINARY_PACKED
  int32_t delta_bytes_pages_ = 0;  // DELTA_BYTE_ARRAY
  int32_t split_pages_ = 0;
  FloatEncoding split_ = FloatEncoding::kUndecided;
  int64_t null_count_ = 0;
  std::vector<uint32_t> dict_use_counts_;
  StatsAccumulator stats_;
};

class ColumnWriter {
 public:
  ColumnWriter(const ColumnDescriptor* column, const WriterOptions* options);

  const ColumnDescriptor& descriptor() const { return *column_; }

  // A level entry without a value: def < max_def (a null here or above, an empty list).
  void AddNull(int16_t rep, int16_t def) { Levels(rep, def); }
  // A present value (def = max_def). The typed adders must match the physical type:
  // BOOLEAN AddBool, INT32 AddInt32, INT64 AddInt64, FLOAT AddFloat, DOUBLE AddDouble,
  // BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY AddBytes (FLBA: exactly type_length bytes).
  void AddBool(int16_t rep, bool v) {
    Levels(rep, column_->max_def);
    page_.plain.push_back(v ? 1 : 0);
    ++page_.num_values;
  }
  void AddInt32(int16_t rep, int32_t v) { AddFixed(rep, &v, 4); }
  void AddInt64(int16_t rep, int64_t v) { AddFixed(rep, &v, 8); }
  void AddFloat(int16_t rep, float v) { AddFixed(rep, &v, 4); }
  void AddDouble(int16_t rep, double v) { AddFixed(rep, &v, 8); }
  void AddBytes(int16_t rep, std::string_view v) {
    Levels(rep, column_->max_def);
    ++page_.num_values;
    if (dict_direct_) {
      page_.indices.push_back(dictionary_.Insert(v.data(), v.size()));
      return;
    }
    // PLAIN, or a large dictionary's values waiting for FlushDictionary().
    if (column_->physical == PhysicalType::kByteArray) {
      auto len = static_cast<uint32_t>(v.size());
      page_.plain.append(&len, 4);
    }
    page_.plain.append(v.data(), v.size());
  }

  // A dictionary of more than kDeferAbove entries no longer fits the caches: its values
  // are appended PLAIN and become indices here, a batch at a time (Dictionary::InsertAll
  // overlaps their cache misses: struct shape, four columns of 12,000-34,000 distinct
  // coordinates). Smaller dictionaries take each value as it comes (a batch's copy and
  // second pass cost more than they save there: 10% more instructions on
  // dict_string). Only at a record boundary (the values must be committed ones);
  // RowGroupBuilder calls it every eight records, and CutPage does.
  void FlushDictionary() {
    if (!use_dictionary_) return;
    if (!page_.plain.empty()) {
      dictionary_.InsertAll(page_.plain.data(), page_.plain.size(), value_width_, &page_.indices);
      page_.plain.clear();
      mark_plain_ = 0;
    }
    dict_direct_ = dictionary_.size() <= kDeferAbove;
  }

  // Record boundaries (FileWriter).
  void Mark() {
    mark_levels_ = page_.num_levels;
    mark_values_ = page_.num_values;
    mark_plain_ = page_.plain.size();
  }
  void Rollback();

  int64_t num_levels() const { return page_.num_levels; }
  // Rough encoded size of the buffered page (dictionary mode: two bytes an index, whether
  // flushed yet or not).
  int64_t EstimatedPageBytes() const {
    const size_t values =
        use_dictionary_ ? static_cast<size_t>(page_.num_values) * 2 : page_.plain.size();
    return static_cast<int64_t>(values + (page_.def.size() + page_.rep.size()) / 4);
  }
  // Called every few thousand records, after FlushDictionary(): whether dictionary
  // encoding is on and has
  // stopped paying, because more than 7 in 8 of the values added since the previous
  // call were new entries (ids, timestamps, random numbers; uniform draws from more
  // than ~20,000 values per 4,096). The FileWriter then cuts the page early, so that the
  // switch to PLAIN happens soon. Judging each window rather than the whole chunk keeps
  // a dictionary whose first values are mostly new but which soon repeats (12,000
  // coordinates: 83% new in the first 4,096 values, 61% in the next): the old rule,
  // "more than half of all values so far distinct", dropped it at the first check, and
  // zstd then compressed three times the bytes (bench/convert/shapes, struct).
  //
  // `first` (the chunk's first 1,024 records): only when at least 1,000 of its first 1,024
  // values were new, which uniform draws give from about 22,000 distinct values on, more
  // than the window rule above drops after 4,096 (about 16,000): ids, sequence numbers
  // and random amounts leave the dictionary four times sooner, which counts where chunks
  // are small: a pool's per-shard files (bench/scaleout, table, 16 shards, `serve --pg`:
  // Dictionary::Insert, mostly of the integer and double columns, was 171 of ~2,300
  // samples; 26 with this and DictionaryWillOverflow).
  bool DictionaryNotPaying(bool first = false) {
    if (!use_dictionary_) return false;
    const size_t entries = dictionary_.size();
    const int64_t values = dict_values_ + page_.num_values;
    const size_t new_entries = entries - window_entries_;
    const int64_t new_values = values - window_values_;
    window_entries_ = entries;
    window_values_ = values;
    if (first) {
      if (entries >= kFirstCheckEntries && values <= kFirstCheckValues) {
        dictionary_not_paying_ = true;
      }
    } else if (entries > kMinEntriesForCardinalityCheck && MostlyNew(new_entries, new_values)) {
      dictionary_not_paying_ = true;
    }
    return dictionary_not_paying_;
  }
  // Whether the dictionary outgrew its limit (the page is then cut, and the chunk goes
  // on in PLAIN): keeps memory bounded when values are large and distinct.
  bool DictionaryFull() const {
    return use_dictionary_ &&
           static_cast<int64_t>(dictionary_.plain().size()) > options_->dictionary_page_size_limit;
  }
  // Called every eight records, after FlushDictionary(): once per chunk, when the
  // dictionary first holds a quarter of its limit, whether more than 7 in 8 of the values
  // so far were new. Drawn uniformly, that many new values mean about 3.7 times as many
  // distinct ones as seen: the dictionary would pass its limit before it paid. Long
  // distinct strings (descriptions, payloads) then go PLAIN after a quarter of the limit
  // instead of after all of it, or of 4,096 records: the hashing and copying of the rest
  // bought nothing (the first ~1 MiB of every chunk, which counts where chunks are small).
  bool DictionaryWillOverflow() {
    if (!use_dictionary_ || quarter_checked_ ||
        static_cast<int64_t>(dictionary_.plain().size()) * 4 <
            options_->dictionary_page_size_limit) {
      return false;
    }
    quarter_checked_ = true;
    const int64_t values = dict_values_ + page_.num_values;
    if (dictionary_.size() >= kMinEntriesForQuarterCheck && MostlyNew(dictionary_.size(), values)) {
      dictionary_not_paying_ = true;
    }
    return dictionary_not_paying_;
  }
  // Takes the buffered page (possibly empty). Switches to PLAIN for the rest of the
  // chunk when the dictionary outgrew its limit or when more than half of the values
  // were distinct (the dictionary would not pay).
  PageData CutPage();
  // Starts a new column chunk: forgets the dictionary, re-enables dictionary encoding.
  void ResetChunk();

  ChunkBuilder& builder() { return builder_; }
  const Dictionary& dictionary() const { return dictionary_; }

 private:
  __attribute__((always_inline)) void Levels(int16_t rep, int16_t def) {
    if (column_->max_rep > 0) page_.rep.push_back(static_cast<uint16_t>(rep));
    if (column_->max_def > 0) page_.def.push_back(static_cast<uint16_t>(def));
    ++page_.num_levels;
  }
  __attribute__((always_inline)) void AddFixed(int16_t rep, const void* v, size_t n) {
    Levels(rep, column_->max_def);
    ++page_.num_values;
    if (dict_direct_) {
      page_.indices.push_back(dictionary_.Insert(static_cast<const char*>(v), n));
    } else {
      page_.plain.append(v, n);  // PLAIN, or waiting for FlushDictionary()
    }
  }

  // More than 7 in 8 of `values` were new `entries` (none: false).
  static bool MostlyNew(size_t entries, int64_t values) {
    return values > 0 && static_cast<int64_t>(entries) * 8 > values * 7;
  }

  static constexpr size_t kMinEntriesForCardinalityCheck = 1024;
  static constexpr size_t kMinEntriesForQuarterCheck = 16;
  static constexpr size_t kFirstCheckEntries = 1000;
  static constexpr int64_t kFirstCheckValues = 1024;
  static constexpr size_t kDeferAbove = 4096;

  const ColumnDescriptor* column_;
  const WriterOptions* options_;
  size_t value_width_;  // bytes of a PLAIN value of a fixed-width type; 0: BYTE_ARRAY, BOOLEAN
  bool dictionary_allowed_;
  int64_t dict_values_ = 0;  // values added in dictionary mode to this chunk
  // DictionaryNotPaying(): entries and values at the previous call, and its verdict.
  size_t window_entries_ = 0;
  int64_t window_values_ = 0;
  bool dictionary_not_paying_ = false;
  bool quarter_checked_ = false;  // DictionaryWillOverflow() has judged this chunk
  bool use_dictionary_;
  // Dictionary mode with a small dictionary: values are inserted as they are added
  // (otherwise they wait in page_.plain for FlushDictionary()).
  bool dict_direct_;
  Dictionary dictionary_;
  PageData page_;
  int64_t mark_levels_ = 0;
  int64_t mark_values_ = 0;
  size_t mark_plain_ = 0;
  ChunkBuilder builder_;
};

}  // namespace icestream::format::parquet
