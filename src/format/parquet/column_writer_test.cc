// Typed tests of the column writer across the physical types: the exact bytes of a
// data page (levels, PLAIN values, dictionary indices) and of a dictionary page,
// statistics, and record rollback.
#include "format/parquet/column_writer.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/bytes.h"
#include "common/testing/status_assertions.h"
#include "format/parquet/rle_encoder.h"
#include "format/parquet/test_hex.h"

namespace icestream::format::parquet {
namespace {

using iceberg::TypeId;

// One physical type: how to add a value, and its PLAIN bytes written by hand from
// Encodings.md (not with the code under test).
struct BoolT {
  using V = bool;
  static iceberg::Type Type() { return iceberg::Primitive(TypeId::kBoolean); }
  static std::vector<V> Values() { return {true, false, true, true, false}; }
  static void Add(ColumnWriter& c, V v) { c.AddBool(0, v); }
  static std::string Plain(const std::vector<V>& v) {  // bit-packed, LSB first
    std::string out((v.size() + 7) / 8, '\0');
    for (size_t i = 0; i < v.size(); ++i)
      out[i / 8] = static_cast<char>(out[i / 8] | (v[i] << (i % 8)));
    return out;
  }
  static std::string Min() { return std::string(1, '\0'); }
  static std::string Max() { return std::string(1, '\1'); }
};

template <typename T, TypeId kId>
struct NumT {
  using V = T;
  static iceberg::Type Type() { return iceberg::Primitive(kId); }
  static std::vector<V> Values() { return {V(3), V(-1), V(7), V(3), V(-1)}; }
  static void Add(ColumnWriter& c, V v) {
    if constexpr (std::is_same_v<T, int32_t>) c.AddInt32(0, v);
    if constexpr (std::is_same_v<T, int64_t>) c.AddInt64(0, v);
    if constexpr (std::is_same_v<T, float>) c.AddFloat(0, v);
    if constexpr (std::is_same_v<T, double>) c.AddDouble(0, v);
  }
  static std::string Plain(const std::vector<V>& v) {
    std::string out(v.size() * sizeof(T), '\0');
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  static std::string One(T x) { return Plain({x}); }
  static std::string Min() { return One(T(-1)); }
  static std::string Max() { return One(T(7)); }
};
using Int32T = NumT<int32_t, TypeId::kInt>;
using Int64T = NumT<int64_t, TypeId::kLong>;
using FloatT = NumT<float, TypeId::kFloat>;
using DoubleT = NumT<double, TypeId::kDouble>;

struct ByteArrayT {
  using V = std::string;
  static iceberg::Type Type() { return iceberg::Primitive(TypeId::kString); }
  static std::vector<V> Values() { return {"bb", "", "a", "bb", "\xc3\xa9"}; }
  static void Add(ColumnWriter& c, const V& v) { c.AddBytes(0, v); }
  static std::string Plain(const std::vector<V>& v) {
    std::string out;
    for (const auto& s : v) {
      AppendFixed32(&out, static_cast<uint32_t>(s.size()));
      out += s;
    }
    return out;
  }
  static std::string Min() { return ""; }
  static std::string Max() { return "\xc3\xa9"; }
};

struct FixedT {
  using V = std::string;
  static iceberg::Type Type() { return iceberg::Fixed(3); }
  static std::vector<V> Values() {
    return {"abc", std::string("\xff\x00\x01", 3), "abc", "aaa", "zzz"};
  }
  static void Add(ColumnWriter& c, const V& v) { c.AddBytes(0, v); }
  static std::string Plain(const std::vector<V>& v) {
    std::string out;
    for (const auto& s : v) out += s;
    return out;
  }
  static std::string Min() { return "aaa"; }
  static std::string Max() { return std::string("\xff\x00\x01", 3); }
};

template <typename P>
class ColumnWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    iceberg::Schema s;
    s.fields.push_back({1, "c", false, P::Type(), ""});
    ASSERT_OK_AND_ASSIGN(auto ps, ParquetSchema::Make(s));
    schema_ = std::make_unique<ParquetSchema>(std::move(ps));
    options_.codec = Codec::kUncompressed;
    ASSERT_OK_AND_ASSIGN(compressor_, MakeCompressor(Codec::kUncompressed));
  }

  // Rows: value, null, value, value, null, value, value (the 5 values in order).
  void Fill(ColumnWriter& w) {
    auto v = P::Values();
    size_t i = 0;
    for (int row : {1, 0, 1, 1, 0, 1, 1}) {
      if (row) {
        P::Add(w, v[i++]);
      } else {
        w.AddNull(0, 0);
      }
      w.Mark();
    }
  }

  static std::string Levels() {
    // def levels 1,0,1,1,0,1,1 at width 1: one bit-packed group: 0b01101101 = 0x6d.
    return testing::Unhex("02 00 00 00 03 6d");
  }

  std::string Page(PageType type, Encoding enc, const std::string& body, int32_t num_values) {
    PageHeader h;
    h.type = type;
    h.uncompressed_page_size = h.compressed_page_size = static_cast<int32_t>(body.size());
    if (type == PageType::kDataPage) {
      h.data_page_header = DataPageHeader{num_values, enc, Encoding::kRle, Encoding::kRle};
    } else {
      h.dictionary_page_header = DictionaryPageHeader{num_values, Encoding::kPlain};
    }
    std::string out;
    SerializePageHeader(h, &out);
    return out + body;
  }

  std::unique_ptr<ParquetSchema> schema_;
  WriterOptions options_;
  std::unique_ptr<Compressor> compressor_;
};

using Types = ::testing::Types<BoolT, Int32T, Int64T, FloatT, DoubleT, ByteArrayT, FixedT>;
TYPED_TEST_SUITE(ColumnWriterTest, Types);

TYPED_TEST(ColumnWriterTest, PlainPageBytesAndStatistics) {
  this->options_.dictionary = false;
  // PLAIN bytes here (the other encodings: delta_encoder_test.cc).
  this->options_.delta_integers = false;
  this->options_.byte_stream_split = false;
  const ColumnDescriptor& col = this->schema_->columns()[0];
  ColumnWriter w(&col, &this->options_);
  this->Fill(w);
  ASSERT_OK(w.builder().AddPage(w.CutPage(), this->compressor_.get()));
  std::string expect = this->Page(PageType::kDataPage, Encoding::kPlain,
                                  this->Levels() + TypeParam::Plain(TypeParam::Values()), 7);
  EXPECT_EQ(testing::Hexdump(w.builder().data()), testing::Hexdump(expect));

  std::string dict_page;
  ColumnChunk chunk;
  StatsAccumulator file_stats(&col);
  int64_t data_size = static_cast<int64_t>(w.builder().data().size());
  ASSERT_OK(w.builder().Finish(w.dictionary(), this->compressor_.get(), 4, &dict_page, &chunk,
                               &file_stats));
  EXPECT_TRUE(dict_page.empty());
  const ColumnMetaData& m = chunk.meta_data;
  EXPECT_EQ(m.num_values, 7);
  EXPECT_EQ(m.data_page_offset, 4);
  EXPECT_FALSE(m.dictionary_page_offset.has_value());
  EXPECT_EQ(m.total_compressed_size, data_size);
  EXPECT_EQ(m.total_uncompressed_size, data_size);
  EXPECT_EQ(m.encodings, (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
  ASSERT_TRUE(m.statistics.has_value());
  EXPECT_EQ(m.statistics->null_count, 2);
  EXPECT_EQ(testing::Hexdump(*m.statistics->min_value), testing::Hexdump(TypeParam::Min()));
  EXPECT_EQ(testing::Hexdump(*m.statistics->max_value), testing::Hexdump(TypeParam::Max()));
}

TYPED_TEST(ColumnWriterTest, DictionaryPagesAndFallbackFreeSmallDictionaries) {
  const ColumnDescriptor& col = this->schema_->columns()[0];
  ColumnWriter w(&col, &this->options_);
  this->Fill(w);
  ASSERT_OK(w.builder().AddPage(w.CutPage(), this->compressor_.get()));
  std::string dict_page;
  ColumnChunk chunk;
  StatsAccumulator file_stats(&col);
  ASSERT_OK(w.builder().Finish(w.dictionary(), this->compressor_.get(), 100, &dict_page, &chunk,
                               &file_stats));
  auto values = TypeParam::Values();
  if (col.physical == PhysicalType::kBoolean) {
    EXPECT_TRUE(dict_page.empty());  // booleans are never dictionary-encoded
    return;
  }
  // Distinct values in first-seen order, and each value's index.
  std::vector<typename TypeParam::V> distinct;
  std::vector<uint32_t> idx;
  for (const auto& v : values) {
    auto it = std::find(distinct.begin(), distinct.end(), v);
    idx.push_back(static_cast<uint32_t>(it - distinct.begin()));
    if (it == distinct.end()) distinct.push_back(v);
  }
  EXPECT_EQ(testing::Hexdump(dict_page),
            testing::Hexdump(this->Page(PageType::kDictionaryPage, Encoding::kPlain,
                                        TypeParam::Plain(distinct),
                                        static_cast<int32_t>(distinct.size()))));
  // Indices: bit width byte, then one bit-packed group (5 values, padded to 8).
  int width = BitWidth(distinct.size() - 1);
  std::string indices(1, static_cast<char>(width));
  indices.push_back(static_cast<char>((1 << 1) | 1));
  uint64_t bits = 0;
  for (size_t i = 0; i < idx.size(); ++i) bits |= uint64_t{idx[i]} << (i * width);
  for (int b = 0; b < width; ++b) indices.push_back(static_cast<char>(bits >> (8 * b)));
  EXPECT_EQ(testing::Hexdump(w.builder().data()),
            testing::Hexdump(this->Page(PageType::kDataPage, Encoding::kRleDictionary,
                                        this->Levels() + indices, 7)));
  const ColumnMetaData& m = chunk.meta_data;
  EXPECT_EQ(*m.dictionary_page_offset, 100);
  EXPECT_EQ(m.data_page_offset, 100 + static_cast<int64_t>(dict_page.size()));
  EXPECT_EQ(m.encodings,
            (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle, Encoding::kRleDictionary}));
  EXPECT_EQ(testing::Hexdump(*m.statistics->min_value), testing::Hexdump(TypeParam::Min()));
  EXPECT_EQ(testing::Hexdump(*m.statistics->max_value), testing::Hexdump(TypeParam::Max()));
}

TYPED_TEST(ColumnWriterTest, RollbackDropsTheUncommittedRecord) {
  for (bool dictionary : {false, true}) {
    this->options_.dictionary = dictionary;
    ColumnWriter w(&this->schema_->columns()[0], &this->options_);
    this->Fill(w);
    auto before = w.CutPage();
    this->Fill(w);
    w.Rollback();  // nothing since the last Mark()
    for (const auto& v : TypeParam::Values()) TypeParam::Add(w, v);
    w.AddNull(0, 0);
    w.Rollback();  // drops 6 entries
    EXPECT_EQ(w.num_levels(), 7);
    auto after = w.CutPage();
    EXPECT_EQ(after.def, before.def);
    EXPECT_EQ(after.plain, before.plain);
    EXPECT_EQ(after.num_values, 5);
    if (dictionary && this->schema_->columns()[0].physical != PhysicalType::kBoolean) {
      EXPECT_EQ(after.indices.size(), 5u);
    }
  }
}

}  // namespace
}  // namespace icestream::format::parquet
