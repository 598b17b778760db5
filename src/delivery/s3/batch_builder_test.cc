#include "delivery/s3/batch_builder.h"

#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <nlohmann/json.hpp>

#include "common/testing/status_assertions.h"
#include "stream/sequence_number.h"

namespace icestream::delivery::s3 {
namespace {

std::string Gunzip(const std::string& in) {
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  std::string out(in.size() * 20 + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

std::string Unzstd(const std::string& in) {
  std::string out(ZSTD_getFrameContentSize(in.data(), in.size()) == ZSTD_CONTENTSIZE_UNKNOWN
                      ? in.size() * 20 + 1024
                      : 1 << 20,
                  '\0');
  size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  EXPECT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(n);
  return out;
}

constexpr int64_t kAttemptMs = 1788431700250;  // 2026-09-03T10:35:00.250Z

class BatchBuilderTest : public ::testing::Test {
 protected:
  ChannelConfig Channel(RecordFormat f, Compression c) {
    ChannelConfig ch;
    ch.id = "abc";
    ch.name = "chan";
    ch.arn = "arn:aws:kinesis:us-east-1:000000000000:channel/abc";
    ch.stream_name = "s";
    ch.stream_arn = "arn:aws:kinesis:us-east-1:000000000000:stream/s";
    ch.stream_uid = 123456789012345;
    ch.record_format = f;
    ch.destination = S3DestinationConfig{};
    ch.s3().compression = c;
    ch.dlq.error_output_prefix = "errors/";
    return ch;
  }
  Result<BatchResult> Build(const ChannelConfig& ch, const std::string& tmpl_text,
                            const std::vector<std::pair<int64_t, std::string>>& recs) {
    tmpl_ = std::make_unique<KeyTemplate>(*KeyTemplate::Parse(tmpl_text, ch.s3().compression));
    BatchBuilder b({&ch, tmpl_.get(), "shardId-000000000002", 0, kAttemptMs});
    uint64_t off = 100;
    seqs_.clear();
    for (size_t i = 0; i < recs.size(); ++i) {
      seqs_.push_back(stream::SequenceNumber::ForRecord(123456789012345, 2, off + i).ToString());
    }
    for (size_t i = 0; i < recs.size(); ++i) {
      Status st = b.Add({seqs_[i], off + i, recs[i].first, recs[i].second});
      if (!st.ok()) return st;
    }
    return b.Finish();
  }
  std::unique_ptr<KeyTemplate> tmpl_;
  std::vector<std::string> seqs_;
};

std::string Seq(uint64_t offset) {
  return stream::SequenceNumber::ForRecord(123456789012345, 2, offset).ToString();
}

// 2026-09-03T10:29:59Z and one minute later.
constexpr int64_t kT0 = 1788431399000;
constexpr int64_t kT1 = kT0 + 60'000;

TEST_F(BatchBuilderTest, JsonRecordsGroupedByMinuteAndGzipped) {
  auto ch = Channel(RecordFormat::kJson, Compression::kGzip);
  ASSERT_OK_AND_ASSIGN(auto r,
                       Build(ch, "out/!{HH}/!{mm}/!{channel-name}!{extension}",
                             {{kT0, R"({"a":1})"}, {kT0 + 500, R"([1,2])"}, {kT1, R"("x")"}}));
  ASSERT_EQ(r.objects.size(), 2u);
  EXPECT_EQ(r.objects[0].key.substr(0, 15), "out/10/29/chan-");
  EXPECT_TRUE(r.objects[0].key.ends_with(".gz"));
  EXPECT_EQ(r.objects[0].key.size(), std::string("out/10/29/chan.gz").size() + kSuffixLength);
  EXPECT_EQ(Gunzip(r.objects[0].body), "{\"a\":1}\n[1,2]\n");
  EXPECT_EQ(Gunzip(r.objects[1].body), "\"x\"\n");
  EXPECT_EQ(r.objects[0].first_sequence_number, Seq(100));
  EXPECT_EQ(r.objects[0].last_sequence_number, Seq(101));
  EXPECT_EQ(r.objects[1].first_sequence_number, Seq(102));
  // The suffix names the first record: its offset (18 digits) and shard (6 digits).
  EXPECT_NE(r.objects[0].key.find("-000000000000000100-000002-"), std::string::npos)
      << r.objects[0].key;
  EXPECT_FALSE(r.dlq.has_value());
  EXPECT_EQ(r.records_in, 3u);
}

TEST_F(BatchBuilderTest, InvalidJsonGoesToTheDlqOnly) {
  auto ch = Channel(RecordFormat::kJson, Compression::kZstd);
  ASSERT_OK_AND_ASSIGN(auto r, Build(ch, "d/!{mm}!{extension}",
                                     {{kT0, "{\"ok\":true}"}, {kT0, "{broken"}, {kT0, "7"}}));
  ASSERT_EQ(r.objects.size(), 1u);
  EXPECT_EQ(Unzstd(r.objects[0].body), "{\"ok\":true}\n7\n");
  EXPECT_EQ(r.objects[0].records, 2u);
  ASSERT_TRUE(r.dlq.has_value());
  EXPECT_EQ(r.failed_records, 1u);
  EXPECT_EQ(r.dlq->key.substr(0, 27), "errors/2026/09/03/10/abc-00");
  auto line = nlohmann::json::parse(r.dlq->body.substr(0, r.dlq->body.size() - 1));
  EXPECT_EQ(line["shardId"], "shardId-000000000002");
  EXPECT_EQ(line["sequenceNumber"],
            stream::SequenceNumber::ForRecord(123456789012345, 2, 101).ToString());
  EXPECT_EQ(line["errorCode"], "DESERIALIZATION_ERROR");
  EXPECT_EQ(line["streamARN"], ch.stream_arn);
  EXPECT_EQ(line["approximateArrivalTimestamp"], "2026-09-03T10:29:59.000Z");
  EXPECT_EQ(line["attemptTimestamp"], "2026-09-03T10:35:00.250Z");
  EXPECT_EQ(line["channelARN"], ch.arn);
  EXPECT_FALSE(line.contains("data"));  // no payload in the DLQ
}

TEST_F(BatchBuilderTest, StringNeedsUtf8AndByteArrayTakesAnything) {
  auto s = Channel(RecordFormat::kString, Compression::kNone);
  ASSERT_OK_AND_ASSIGN(
      auto r,
      Build(s, "t/!{mm}", {{kT0, "h\xc3\xa9llo"}, {kT0, "bad\xff"}, {kT0, "\xed\xa0\x80"}}));
  EXPECT_EQ(r.objects[0].body, "h\xc3\xa9llo\n");
  EXPECT_EQ(r.failed_records, 2u);
  auto b = Channel(RecordFormat::kByteArray, Compression::kNone);
  ASSERT_OK_AND_ASSIGN(
      auto rb, Build(b, "t/!{mm}", {{kT0, std::string("\x00\xff", 2)}, {kT0, "{not json"}}));
  EXPECT_EQ(rb.objects[0].body, std::string("\x00\xff{not json", 11));
  EXPECT_EQ(rb.failed_records, 0u);
}

TEST_F(BatchBuilderTest, SameRecordsGiveSameBytes) {
  for (auto c : {Compression::kGzip, Compression::kZstd, Compression::kNone}) {
    auto ch = Channel(RecordFormat::kJson, c);
    std::vector<std::pair<int64_t, std::string>> recs;
    for (int i = 0; i < 500; ++i)
      recs.emplace_back(kT0 + i * 1000, "{\"i\":" + std::to_string(i) + "}");
    auto a = Build(ch, "k/!{HH}-!{mm}!{extension}", recs);
    auto b = Build(ch, "k/!{HH}-!{mm}!{extension}", recs);
    ASSERT_OK(a);
    ASSERT_OK(b);
    ASSERT_EQ(a->objects.size(), b->objects.size());
    for (size_t i = 0; i < a->objects.size(); ++i) {
      EXPECT_EQ(a->objects[i].key, b->objects[i].key);
      EXPECT_EQ(a->objects[i].body, b->objects[i].body);
    }
  }
}

}  // namespace
}  // namespace icestream::delivery::s3
