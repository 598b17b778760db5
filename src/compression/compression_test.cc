// The compression module: every codec round-trips, output limits hold before anything is
// written past them, damaged/truncated/trailing input is told apart by subcode, and what
// we write is read by the stock tools (gzip, zstd) and Python's zlib.
#include "compression/compression.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"

namespace icestream::compression {
namespace {

constexpr Codec kAll[] = {Codec::kNone, Codec::kDeflate, Codec::kZlib,
                          Codec::kGzip, Codec::kZstd,    Codec::kSnappy};

std::string RandomText(size_t n, uint32_t seed) {
  // Words from a small alphabet: compressible, but not trivially.
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < n) {
    int len = 1 + static_cast<int>(rng() % 9);
    for (int i = 0; i < len; ++i) s.push_back(static_cast<char>('a' + rng() % 6));
    s.push_back(rng() % 7 == 0 ? '\n' : ' ');
  }
  s.resize(n);
  return s;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string Packed(Codec codec, std::string_view in, CompressOptions o = {}) {
  std::string out;
  EXPECT_OK(Compress(codec, in, &out, o)) << CodecName(codec);
  return out;
}

// Runs `command` and returns its stdout ("" and a test failure when it fails).
std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "popen " << command;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << command;
  return out;
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(CompressionTest, EveryCodecRoundTripsEverySize) {
  for (Codec codec : kAll) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{70000}, size_t{3} << 19}) {
      for (const std::string& in : {RandomText(n, 7), RandomBytes(n, 9)}) {
        std::string packed = Packed(codec, in);
        std::string back;
        ASSERT_OK(Decompress(codec, packed, in.size(), &back)) << CodecName(codec) << " " << n;
        EXPECT_EQ(back, in) << CodecName(codec) << " " << n;
        Decompressor d;  // reused context, exact size
        ASSERT_OK(d.DecompressExact(codec, packed, in.size(), &back));
        EXPECT_EQ(back, in);
        ASSERT_OK(d.DecompressExact(codec, packed, in.size(), &back));  // and again
        EXPECT_EQ(back, in);
      }
    }
  }
}

TEST(CompressionTest, CompressionIsDeterministicAndAppends) {
  std::string in = RandomText(200000, 3);
  for (Codec codec : kAll) {
    std::string a = "prefix", b;
    ASSERT_OK(Compress(codec, in, &a));
    ASSERT_OK_AND_ASSIGN(auto c, Compressor::Make(codec));
    ASSERT_OK(c->Compress(in, &b));
    ASSERT_OK(c->Compress(in, &b));  // the kept context gives the same bytes again
    EXPECT_EQ(a.substr(0, 6), "prefix");
    EXPECT_EQ(a.substr(6), b.substr(0, b.size() / 2)) << CodecName(codec);
    EXPECT_EQ(b.substr(0, b.size() / 2), b.substr(b.size() / 2)) << CodecName(codec);
  }
}

TEST(CompressionTest, OutputLimitsAreEnforcedBeforeWriting) {
  std::string in = RandomText(100000, 5);
  for (Codec codec : kAll) {
    std::string packed = Packed(codec, in), out;
    EXPECT_OK(Decompress(codec, packed, in.size(), &out)) << CodecName(codec);
    Status st = Decompress(codec, packed, in.size() - 1, &out);
    EXPECT_STATUS(kCorruption, st) << CodecName(codec);
    EXPECT_TRUE(st.Is(DecodeError::kTooLarge)) << st.ToString();
    EXPECT_LE(out.size(), in.size()) << CodecName(codec);
    Decompressor d;
    st = d.DecompressExact(codec, packed, in.size() + 1, &out);
    EXPECT_TRUE(st.Is(DecodeError::kSizeMismatch)) << CodecName(codec) << " " << st.ToString();
    st = d.DecompressExact(codec, packed, in.size() - 1, &out);
    EXPECT_TRUE(st.Is(DecodeError::kSizeMismatch)) << CodecName(codec) << " " << st.ToString();
  }
  // 64 MiB of zeros is some 64 KiB of deflate or zstd: refused at the limit.
  std::string zeros(16 << 20, '\0');
  for (Codec codec : {Codec::kGzip, Codec::kZstd, Codec::kZlib, Codec::kDeflate}) {
    std::string bomb;
    ASSERT_OK_AND_ASSIGN(auto s, StreamCompressor::Make(codec, &bomb));
    for (int i = 0; i < 4; ++i) ASSERT_OK(s->Add(zeros));  // zstd streamed: no content size
    ASSERT_OK(s->Finish());
    std::string out;
    Status st = Decompress(codec, bomb, 1 << 20, &out);
    EXPECT_TRUE(st.Is(DecodeError::kTooLarge)) << CodecName(codec) << " " << st.ToString();
    EXPECT_LE(out.capacity(), size_t{4} << 20) << CodecName(codec);
  }
}

TEST(CompressionTest, TruncatedDamagedAndTrailingInputIsRefused) {
  std::string in = RandomText(50000, 11);
  for (Codec codec : {Codec::kDeflate, Codec::kZlib, Codec::kGzip, Codec::kZstd, Codec::kSnappy}) {
    std::string packed = Packed(codec, in), out;
    // Every cut (snappy blocks state their length, so a cut is damage rather than truncation).
    for (size_t cut = 0; cut < packed.size(); cut += 1 + cut / 16) {
      Status st = Decompress(codec, std::string_view(packed).substr(0, cut), in.size(), &out);
      EXPECT_STATUS(kCorruption, st) << CodecName(codec) << " cut " << cut;
      EXPECT_TRUE(st.Is(DecodeError::kTruncated) || st.Is(DecodeError::kDamaged))
          << CodecName(codec) << " cut " << cut << ": " << st.ToString();
    }
    if (codec != Codec::kSnappy) {  // a snappy block ends where its tags end: no "after"
      Status st = Decompress(codec, packed + "x", in.size(), &out);
      EXPECT_TRUE(st.Is(DecodeError::kTrailingBytes)) << CodecName(codec) << " " << st.ToString();
    }
    // Flipped bytes never crash, never exceed the limit; with a checksum they are caught.
    for (size_t i = 0; i < packed.size(); i += 1 + packed.size() / 97) {
      std::string bad = packed;
      bad[i] ^= 0x20;
      Status st = Decompress(codec, bad, in.size(), &out);
      if (st.ok()) {
        EXPECT_LE(out.size(), in.size());
        if (codec == Codec::kZlib || codec == Codec::kGzip) {
          EXPECT_EQ(out, in) << i;  // a checksum covers the data
        }
      } else {
        EXPECT_TRUE(st.subcode<DecodeError>().has_value()) << st.ToString();
      }
    }
  }
  std::string out;
  EXPECT_TRUE(Decompress(Codec::kGzip, "not gzip at all", 100, &out).Is(DecodeError::kDamaged));
  EXPECT_TRUE(Decompress(Codec::kZstd, "not zstd at all", 100, &out).Is(DecodeError::kDamaged));
}

TEST(CompressionTest, LevelsAreChecked) {
  EXPECT_STATUS(kInvalidArgument, Compressor::Make(Codec::kGzip, {.level = 10}));
  EXPECT_STATUS(kInvalidArgument, Compressor::Make(Codec::kZstd, {.level = 99}));
  std::string sink;
  EXPECT_STATUS(kInvalidArgument, StreamCompressor::Make(Codec::kSnappy, &sink));
  std::string in = RandomText(300000, 1), fast = Packed(Codec::kZstd, in, {.level = 1}),
              small = Packed(Codec::kZstd, in, {.level = 19});
  EXPECT_LT(small.size(), fast.size());
}

// The stock tools read what we write, streamed and one-shot: gzip -d, zstd -d (which checks
// the frame checksum when there is one), and Python's zlib for raw deflate and zlib.
TEST(CompressionTest, StockToolsReadWhatWeWrite) {
  testing::TempDir dir;
  std::string in = RandomText((1 << 20) + 12345, 17);  // more than one 1 MiB chunk
  WriteFile(dir.Path("plain"), in);
  struct Case {
    Codec codec;
    CompressOptions options;
    std::string reader;
  };
  const Case cases[] = {
      {Codec::kGzip, {}, "gzip -dc"},
      {Codec::kZstd, {}, "zstd -dcq"},
      {Codec::kZstd, {.level = 5, .zstd_checksum = true}, "zstd -dcq"},
      {Codec::kZlib,
       {},
       "python3 -c 'import sys,zlib; "
       "sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read()))' <"},
      {Codec::kDeflate,
       {},
       "python3 -c 'import sys,zlib; "
       "sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), -15))' <"},
  };
  for (const auto& c : cases) {
    std::string streamed;
    ASSERT_OK_AND_ASSIGN(auto s, StreamCompressor::Make(c.codec, &streamed, c.options));
    for (size_t at = 0; at < in.size(); at += 1000)
      ASSERT_OK(s->Add(std::string_view(in).substr(at, 1000)));
    ASSERT_OK(s->Finish());
    std::string oneshot = Packed(c.codec, in, c.options);
    for (const auto& [name, bytes] :
         {std::pair{"streamed", streamed}, std::pair{"oneshot", oneshot}}) {
      std::string path = dir.Path(std::string(name) + "." + std::string(CodecName(c.codec)));
      WriteFile(path, bytes);
      EXPECT_EQ(RunCommand(c.reader + " " + path), in) << c.reader << " " << name;
      std::string back;
      ASSERT_OK(Decompress(c.codec, bytes, in.size(), &back));  // and we read it back
      EXPECT_EQ(back, in);
    }
  }
  // And we read what the tools write (gzip's header carries a name and mtime; zstd's frame
  // a checksum).
  for (const auto& [codec, writer] :
       {std::pair{Codec::kGzip, "gzip -c -9"}, std::pair{Codec::kZstd, "zstd -c -q -9"}}) {
    std::string theirs = RunCommand(std::string(writer) + " " + dir.Path("plain")), back;
    ASSERT_OK(Decompress(codec, theirs, in.size(), &back)) << writer;
    EXPECT_EQ(back, in) << writer;
  }
}

}  // namespace
}  // namespace icestream::compression
