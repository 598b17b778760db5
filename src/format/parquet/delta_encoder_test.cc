// DELTA_BINARY_PACKED, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT encoders: exact bytes of
// hand-worked cases (Encodings.md), round trips through the decoders at the edges (INT64/INT32
// min and max, deltas that wrap, all-equal values, one value, partial blocks; decimal(38,S)
// min and max, negatives, zero), the column chunk's choice between DELTA_BINARY_PACKED or
// DELTA_BYTE_ARRAY and PLAIN, and BYTE_STREAM_SPLIT double pages. DuckDB and hyparquet read
// the same encodings in tests/interop/parquet_encodings.mjs.
#include "format/parquet/delta_encoder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>

#include "common/testing/status_assertions.h"
#include "format/parquet/column_writer.h"
#include "format/parquet/delta_decoder.h"
#include "format/parquet/test_hex.h"
#include "format/parquet/value_decoder.h"

namespace icestream::format::parquet {
namespace {

template <typename T>
std::string Encode(const std::vector<T>& v) {
  std::string out;
  if constexpr (sizeof(T) == 4) {
    EncodeDeltaBinaryPacked32(reinterpret_cast<const char*>(v.data()), v.size(), &out);
  } else {
    EncodeDeltaBinaryPacked64(reinterpret_cast<const char*>(v.data()), v.size(), &out);
  }
  return out;
}

template <typename T>
void ExpectRoundTrip(const std::vector<T>& v) {
  std::string enc = Encode(v);
  std::vector<int64_t> got(v.size());
  size_t consumed = 0;
  ASSERT_OK(DecodeDeltaBinaryPacked(enc, v.size(), got.data(), &consumed));
  EXPECT_EQ(consumed, enc.size());
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(static_cast<T>(got[i]), v[i]) << "value " << i << " of " << v.size();
  }
}

TEST(DeltaEncoderTest, SpecExampleBytes) {
  // Encodings.md: 1 2 3 4 5 -> deltas 1 1 1 1, min delta 1, every width 0.
  // header 80 01 (128) 04 05 02 (zigzag 1); block 02 (zigzag 1) 00 00 00 00.
  EXPECT_EQ(testing::Hexdump(Encode<int64_t>({1, 2, 3, 4, 5})),
            testing::Hexdump(testing::Unhex("80 01 04 05 02 02 00 00 00 00")));
  // 7 5 3 1 2 3 4 5: deltas -2 -2 -2 1 1 1 1, min -2 (zigzag 3), deltas - min =
  // 0 0 0 3 3 3 3 at width 2 (0b11 << 6 = c0, then 0b111111 = 3f), padded to 32 values
  // = 8 bytes.
  EXPECT_EQ(
      testing::Hexdump(Encode<int32_t>({7, 5, 3, 1, 2, 3, 4, 5})),
      testing::Hexdump(testing::Unhex("80 01 04 08 0e 03 02 00 00 00 c0 3f 00 00 00 00 00 00")));
}

TEST(DeltaEncoderTest, OneValueIsTheHeaderOnly) {
  // No deltas, no block: the first value (zigzag -1 = 1) is the whole stream.
  EXPECT_EQ(testing::Hexdump(Encode<int64_t>({-1})),
            testing::Hexdump(testing::Unhex("80 01 04 01 01")));
  ExpectRoundTrip<int64_t>({std::numeric_limits<int64_t>::min()});
  ExpectRoundTrip<int32_t>({std::numeric_limits<int32_t>::max()});
}

template <typename T>
std::vector<std::vector<T>> EdgeCases() {
  using L = std::numeric_limits<T>;
  std::vector<std::vector<T>> cases;
  cases.push_back({L::min(), L::max(), L::min(), L::max(), 0, -1, L::max(), L::min()});
  std::vector<T> alternate, equal(300, L::max()), ramp, partial, wide;
  for (int i = 0; i < 1000; ++i) alternate.push_back(i % 2 ? L::min() : L::max());
  // Past max: wraps to min (computed unsigned, as the column's two's complement).
  using U = std::make_unsigned_t<T>;
  for (int i = 0; i < 129; ++i) {
    ramp.push_back(static_cast<T>(static_cast<U>(L::max()) - 64 + static_cast<U>(i)));
  }
  for (int i = 0; i < 161; ++i) partial.push_back(static_cast<T>(i * i - 3000));
  std::mt19937_64 rng(20);
  for (int i = 0; i < 5000; ++i) wide.push_back(static_cast<T>(rng()));
  for (auto* c : {&alternate, &equal, &ramp, &partial, &wide}) cases.push_back(*c);
  // Every length around the block and miniblock edges.
  for (size_t n : {2, 31, 32, 33, 127, 128, 129, 130, 256, 257}) {
    std::vector<T> v;
    for (size_t i = 0; i < n; ++i) v.push_back(static_cast<T>(rng() >> (i % 60)));
    cases.push_back(v);
  }
  return cases;
}

TEST(DeltaEncoderTest, RoundTripsAtTheEdges) {
  for (const auto& v : EdgeCases<int64_t>()) ExpectRoundTrip(v);
  for (const auto& v : EdgeCases<int32_t>()) ExpectRoundTrip(v);
}

TEST(DeltaEncoderTest, Int32DeltasWrapIn32Bits) {
  // INT32 min -> max is a delta of 2^32 - 1: -1 in 32-bit arithmetic, and max -> min is
  // +1, so the deltas need 2 bits, not 33 (readers of INT32 pages refuse widths past 32).
  std::vector<int32_t> v = {std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int32_t>::max(),
                            std::numeric_limits<int32_t>::min()};
  // header 80 01 04 03 ff ff ff ff 0f (zigzag INT32 min); block: min delta -1 (01),
  // widths 02 00 00 00, deltas - min = 0 2 -> 0b1000 = 08, 7 zero bytes.
  EXPECT_EQ(testing::Hexdump(Encode(v)),
            testing::Hexdump(testing::Unhex(
                "80 01 04 03 ff ff ff ff 0f 01 02 00 00 00 08 00 00 00 00 00 00 00")));
  ExpectRoundTrip(v);
}

TEST(DeltaEncoderTest, ByteStreamSplitRoundTrips) {
  std::vector<double> d = {0.0, -1.5, 3.25, std::numeric_limits<double>::infinity(), 1e-300};
  std::string enc;
  EncodeByteStreamSplit(reinterpret_cast<const char*>(d.data()), d.size(), 8, &enc);
  ASSERT_EQ(enc.size(), d.size() * 8);
  // Stream 7 holds the top byte (sign and exponent) of every value.
  EXPECT_EQ(static_cast<unsigned char>(enc[7 * d.size() + 1]), 0xbf);  // -1.5
  std::string back;
  ASSERT_OK(DecodeByteStreamSplit(enc, 8, d.size(), &back));
  EXPECT_EQ(back, std::string(reinterpret_cast<const char*>(d.data()), d.size() * 8));
}

TEST(DeltaEncoderTest, ByteStreamSplitPutsByteKOfValueIAtKTimesNPlusI) {
  // Every count around the 16-value blocks of the SSE2 path, and a large page, for both
  // widths in use: the definition (Encodings.md "Byte Stream Split"), byte by byte.
  std::mt19937_64 rng(21);
  std::vector<size_t> counts;
  for (size_t n = 0; n <= 70; ++n) counts.push_back(n);
  counts.push_back(4097);
  counts.push_back(131072 + 15);
  for (size_t width : {4, 8}) {
    for (size_t n : counts) {
      std::string plain(n * width, '\0');
      for (auto& c : plain) c = static_cast<char>(rng());
      std::string enc = "prefix";
      EncodeByteStreamSplit(plain.data(), n, width, &enc);
      ASSERT_EQ(enc.size(), 6 + n * width);
      ASSERT_EQ(enc.substr(0, 6), "prefix");
      for (size_t i = 0; i < n; ++i) {
        for (size_t k = 0; k < width; ++k) {
          ASSERT_EQ(enc[6 + k * n + i], plain[i * width + k])
              << "width " << width << " n " << n << " value " << i << " byte " << k;
        }
      }
    }
  }
}

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// 16 bytes big-endian two's complement of v (a decimal(38,S) FIXED_LEN_BYTE_ARRAY value).
std::string Decimal16(Int128 v) {
  std::string out(16, '\0');
  auto u = static_cast<UInt128>(v);
  for (int k = 15; k >= 0; --k, u >>= 8) out[static_cast<size_t>(k)] = static_cast<char>(u & 0xff);
  return out;
}

Int128 Max38() {
  Int128 m = 0;
  for (int i = 0; i < 38; ++i) m = m * 10 + 9;
  return m;
}

TEST(DeltaByteArrayTest, HandWorkedBytes) {
  // 00 00 01 02 | 00 00 01 05 | 00 00 02 00: prefixes 0 3 2, suffixes 4 1 2, suffix bytes
  // 00 00 01 02 | 05 | 02 00.
  const std::string plain = testing::Unhex("00 00 01 02 00 00 01 05 00 00 02 00");
  std::string enc;
  ASSERT_TRUE(EncodeDeltaByteArrayFixed(plain.data(), 3, 4, 1000, &enc));
  std::string expect = Encode<int32_t>({0, 3, 2}) + Encode<int32_t>({4, 1, 2}) +
                       testing::Unhex("00 00 01 02 05 02 00");
  EXPECT_EQ(testing::Hexdump(enc), testing::Hexdump(expect));
  // Not below the limit: nothing appended.
  std::string none = "x";
  EXPECT_FALSE(EncodeDeltaByteArrayFixed(plain.data(), 3, 4, expect.size(), &none));
  EXPECT_EQ(none, "x");
}

TEST(DeltaByteArrayTest, DecimalsRoundTripAtTheEdges) {
  const Int128 max = Max38();
  std::vector<Int128> v = {0,    -1,  1,   max,  -max, 0,   12345, -12345,    max,      max,
                           -max, 127, 128, -128, -129, 255, 256,   INT64_MAX, INT64_MIN};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 1000; ++i) v.push_back(static_cast<Int128>(rng() % 5000000) - 2500000);
  std::string plain;
  for (Int128 x : v) plain += Decimal16(x);
  for (size_t n : {size_t{1}, size_t{2}, v.size()}) {
    std::string enc;
    ASSERT_TRUE(EncodeDeltaByteArrayFixed(plain.data(), n, 16, SIZE_MAX, &enc)) << n;
    std::string storage;
    std::vector<std::string_view> back;
    ASSERT_OK(DecodeDeltaByteArray(enc, n, SIZE_MAX, &storage, &back));
    ASSERT_EQ(back.size(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], plain.substr(i * 16, 16)) << "value " << i;
  }
}

// The column chunk picks DELTA_BINARY_PACKED where it is smaller than PLAIN.
class DeltaChunkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    iceberg::Schema s;
    s.fields.push_back({1, "c", false, iceberg::Primitive(iceberg::TypeId::kLong), ""});
    ASSERT_OK_AND_ASSIGN(auto ps, ParquetSchema::Make(s));
    schema_ = std::make_unique<ParquetSchema>(std::move(ps));
    options_.codec = Codec::kUncompressed;
    options_.dictionary = false;
    ASSERT_OK_AND_ASSIGN(compressor_, MakeCompressor(Codec::kUncompressed));
  }

  // One page of `values` (nullopt = null), then the chunk's metadata.
  ColumnMetaData Chunk(const std::vector<std::optional<int64_t>>& values) {
    ColumnWriter w(&schema_->columns()[0], &options_);
    for (const auto& v : values) {
      if (v) {
        w.AddInt64(0, *v);
      } else {
        w.AddNull(0, 0);
      }
      w.Mark();
    }
    EXPECT_OK(w.builder().AddPage(w.CutPage(), compressor_.get()));
    std::string dict;
    ColumnChunk chunk;
    StatsAccumulator file_stats(&schema_->columns()[0]);
    EXPECT_OK(w.builder().Finish(w.dictionary(), compressor_.get(), 4, &dict, &chunk, &file_stats));
    body_ = w.builder().data();
    return chunk.meta_data;
  }

  std::unique_ptr<ParquetSchema> schema_;
  WriterOptions options_;
  std::unique_ptr<Compressor> compressor_;
  std::string body_;
};

TEST_F(DeltaChunkTest, SequencePageIsDeltaEncoded) {
  std::vector<std::optional<int64_t>> v;
  for (int64_t i = 0; i < 1000; ++i) v.push_back(i % 10 == 3 ? std::nullopt : std::optional(i));
  ColumnMetaData m = Chunk(v);
  EXPECT_EQ(m.encodings, (std::vector<Encoding>{Encoding::kRle, Encoding::kDeltaBinaryPacked}));
  ASSERT_EQ(m.encoding_stats.size(), 1u);
  EXPECT_EQ(m.encoding_stats[0].encoding, Encoding::kDeltaBinaryPacked);
  EXPECT_LT(m.total_uncompressed_size, 900 * 8 / 4);  // PLAIN would be 7200 bytes of values
  ASSERT_TRUE(m.statistics && m.statistics->min_value && m.statistics->max_value);
  int64_t lo, hi;
  std::memcpy(&lo, m.statistics->min_value->data(), 8);
  std::memcpy(&hi, m.statistics->max_value->data(), 8);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 999);
  EXPECT_EQ(m.statistics->null_count, 100);
}

TEST_F(DeltaChunkTest, RandomFullWidthValuesStayPlain) {
  std::mt19937_64 rng(7);
  std::vector<std::optional<int64_t>> v;
  for (int i = 0; i < 1000; ++i) v.push_back(static_cast<int64_t>(rng()));
  ColumnMetaData m = Chunk(v);
  EXPECT_EQ(m.encodings, (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
}

TEST_F(DeltaChunkTest, OffByOptionStaysPlain) {
  options_.delta_integers = false;
  ColumnMetaData m = Chunk({1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(m.encodings, (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
}

// A FIXED_LEN_BYTE_ARRAY column of one page through the column writer.
ColumnMetaData FixedChunk(const iceberg::Type& type, const WriterOptions& options,
                          const std::vector<std::optional<std::string>>& values) {
  iceberg::Schema s;
  s.fields.push_back({1, "c", false, type, ""});
  auto ps = ParquetSchema::Make(s);
  EXPECT_TRUE(ps.ok());
  auto compressor = MakeCompressor(Codec::kUncompressed);
  EXPECT_TRUE(compressor.ok());
  ColumnWriter w(&ps->columns()[0], &options);
  for (const auto& v : values) {
    if (v) {
      w.AddBytes(0, *v);
    } else {
      w.AddNull(0, 0);
    }
    w.Mark();
  }
  EXPECT_OK(w.builder().AddPage(w.CutPage(), compressor->get()));
  std::string dict;
  ColumnChunk chunk;
  StatsAccumulator file_stats(&ps->columns()[0]);
  EXPECT_OK(w.builder().Finish(w.dictionary(), compressor->get(), 4, &dict, &chunk, &file_stats));
  return chunk.meta_data;
}

WriterOptions PlainOptions() {
  WriterOptions o;
  o.codec = Codec::kUncompressed;
  o.dictionary = false;
  o.delta_decimals = true;  // off by default (table files, for icebird)
  return o;
}

TEST(DecimalChunkTest, AmountsAreDeltaByteArray) {
  std::vector<std::optional<std::string>> v;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    if (i % 9 == 4) {
      v.push_back(std::nullopt);
    } else {
      // Amounts up to 20,000.00, a few negative (a negative shares no prefix with a
      // positive neighbour: its sign bytes are ff).
      const auto amount = static_cast<Int128>(rng() % 2000000);
      v.push_back(Decimal16(i % 50 == 7 ? -amount : amount));
    }
  }
  v.push_back(Decimal16(Max38()));
  v.push_back(Decimal16(-Max38()));
  ColumnMetaData m = FixedChunk(iceberg::Decimal(38, 2), PlainOptions(), v);
  EXPECT_EQ(m.encodings, (std::vector<Encoding>{Encoding::kRle, Encoding::kDeltaByteArray}));
  ASSERT_EQ(m.encoding_stats.size(), 1u);
  EXPECT_EQ(m.encoding_stats[0].encoding, Encoding::kDeltaByteArray);
  EXPECT_LT(m.total_uncompressed_size, 1000 * 16 / 3);  // PLAIN: 14,560 bytes of values
  // Statistics still come from the values: the extremes, big-endian.
  ASSERT_TRUE(m.statistics && m.statistics->min_value && m.statistics->max_value);
  EXPECT_EQ(*m.statistics->max_value, Decimal16(Max38()));
  EXPECT_EQ(*m.statistics->min_value, Decimal16(-Max38()));
}

TEST(DecimalChunkTest, RandomWideDecimalsAndUuidsStayPlain) {
  std::mt19937_64 rng(5);
  std::vector<std::optional<std::string>> v;
  for (int i = 0; i < 1000; ++i) {
    std::string b(16, '\0');
    for (char& c : b) c = static_cast<char>(rng());
    v.push_back(b);
  }
  // Random 16-byte values share no prefix: DELTA_BYTE_ARRAY would be larger than PLAIN.
  ColumnMetaData uuid = FixedChunk(iceberg::Primitive(iceberg::TypeId::kUuid), PlainOptions(), v);
  EXPECT_EQ(uuid.encodings, (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
  for (auto& b : v) (*b)[0] = static_cast<char>((*b)[0] & 0x3f);  // within decimal(38)
  ColumnMetaData dec = FixedChunk(iceberg::Decimal(38, 0), PlainOptions(), v);
  EXPECT_EQ(dec.encodings, (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
  // Off by default.
  WriterOptions off;
  off.codec = Codec::kUncompressed;
  off.dictionary = false;
  ColumnMetaData small =
      FixedChunk(iceberg::Decimal(38, 2), off, {Decimal16(1), Decimal16(2), Decimal16(3)});
  EXPECT_EQ(small.encodings, (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
}

// One page of doubles through the column writer (zstd, no dictionary); `data` gets the
// chunk's page bytes.
ColumnMetaData DoubleChunk(const std::vector<double>& v, bool split_allowed, std::string* data) {
  iceberg::Schema s;
  s.fields.push_back({1, "d", false, iceberg::Primitive(iceberg::TypeId::kDouble), ""});
  auto ps = ParquetSchema::Make(s);
  EXPECT_TRUE(ps.ok());
  WriterOptions options;
  options.dictionary = false;
  options.byte_stream_split = split_allowed;
  auto compressor = MakeCompressor(options.codec);
  EXPECT_TRUE(compressor.ok());
  ColumnWriter w(&ps->columns()[0], &options);
  for (double d : v) {
    w.AddDouble(0, d);
    w.Mark();
  }
  EXPECT_OK(w.builder().AddPage(w.CutPage(), compressor->get()));
  std::string dict;
  ColumnChunk chunk;
  StatsAccumulator file_stats(&ps->columns()[0]);
  EXPECT_OK(w.builder().Finish(w.dictionary(), compressor->get(), 4, &dict, &chunk, &file_stats));
  *data = w.builder().data();
  return chunk.meta_data;
}

TEST(SplitChunkTest, RandomDoublesAreByteStreamSplit) {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<double> v = {std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           -0.0,
                           0.0,
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::min() / 3,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest()};
  for (int i = 0; i < 20000; ++i) v.push_back(unit(rng));
  std::string data;
  ColumnMetaData m = DoubleChunk(v, true, &data);
  EXPECT_EQ(m.encodings, (std::vector<Encoding>{Encoding::kRle, Encoding::kByteStreamSplit}));
  // The page decompresses to the levels and the 8 streams: stream 7 holds the top byte
  // (sign and exponent) of every value, and the streams give back every value bit for bit.
  PageHeader h;
  size_t header_size = 0;
  ASSERT_OK(ParsePageHeader(data, &h, &header_size));
  ASSERT_OK_AND_ASSIGN(std::string body,
                       Decompress(Codec::kZstd, std::string_view(data).substr(header_size),
                                  static_cast<size_t>(h.uncompressed_page_size)));
  const std::string_view values = std::string_view(body).substr(body.size() - v.size() * 8);
  std::string back;
  ASSERT_OK(DecodeByteStreamSplit(values, 8, v.size(), &back));
  EXPECT_EQ(back, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
  EXPECT_EQ(static_cast<unsigned char>(values[7 * v.size() + 2]), 0xff);  // -inf
  // Statistics skip the NaN and see the infinities.
  ASSERT_TRUE(m.statistics && m.statistics->min_value && m.statistics->max_value);
  double lo, hi;
  std::memcpy(&lo, m.statistics->min_value->data(), 8);
  std::memcpy(&hi, m.statistics->max_value->data(), 8);
  EXPECT_EQ(lo, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(hi, std::numeric_limits<double>::infinity());
}

TEST(SplitChunkTest, ShortDecimalDoublesStayPlain) {
  // Coordinates with 4 decimals (12.3456): PLAIN compresses them far better.
  std::mt19937_64 rng(10);
  std::vector<double> v;
  for (int i = 0; i < 20000; ++i) {
    v.push_back(static_cast<double>(static_cast<int64_t>(rng() % 1800000) - 900000) / 10000);
  }
  std::string data;
  EXPECT_EQ(DoubleChunk(v, true, &data).encodings,
            (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
  // Longitudes in hundredths, -170 + k / 100 (bench/convert/shapes' struct): 34,000
  // values, so that the sample's PLAIN bytes repeat little, and most texts are not short
  // (-20.02000000000001); PLAIN still compresses them better, and the sample says so.
  for (double& d : v) d = -170.0 + static_cast<double>(rng() % 34000) / 100.0;
  EXPECT_EQ(DoubleChunk(v, true, &data).encodings,
            (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
  // And random doubles stay PLAIN when the option is off.
  std::uniform_real_distribution<double> unit(0, 1);
  for (double& d : v) d = unit(rng);
  EXPECT_EQ(DoubleChunk(v, false, &data).encodings,
            (std::vector<Encoding>{Encoding::kPlain, Encoding::kRle}));
}

}  // namespace
}  // namespace icestream::format::parquet
