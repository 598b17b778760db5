// DLQ redrive's model against a real folder-backed object store: the worklist takes the
// channel's DLQ lines that match the filter, one entry per record, sorted, in parts; lines
// an earlier redrive processed are skipped, the new lines of its records that failed
// again are not; DLQ lines of a redrive batch name the redrive and the line they redrove
// and never take the name of an original object; the report gives each entry's outcome.
#include "delivery/redrive.h"

#include <gtest/gtest.h>

#include "common/base64.h"
#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"
#include "common/time_format.h"
#include "delivery/dlq.h"
#include "objectstore/local_store.h"

namespace icestream::delivery {
namespace {

TEST(RedriveModel, TimesProgressAndOrder) {
  EXPECT_EQ(ParseIso8601Ms("2026-11-30T00:44:32.147Z"), 1795999472147);
  EXPECT_EQ(ParseIso8601Ms("2026-11-30T00:44:32Z"), 1795999472000);
  EXPECT_EQ(ParseIso8601Ms(FormatIso8601Ms(1700000000001)), 1700000000001);
  EXPECT_FALSE(ParseIso8601Ms("2026-11-30 00:44:32Z").has_value());
  EXPECT_FALSE(ParseIso8601Ms("2026-13-30T00:44:32Z").has_value());
  EXPECT_FALSE(ParseIso8601Ms("2026-11-30T00:44:32.Z").has_value());
  RedriveProgress p{"id-1", 7, 4, 2, 1};
  EXPECT_EQ(ParseRedriveProgress(RedriveProgressText(p)), p);
  EXPECT_FALSE(ParseRedriveProgress("{}").has_value());
  // Sequence numbers order as numbers; a whole record before its user records.
  EXPECT_LT((RecordId{"s", "9", std::nullopt}), (RecordId{"s", "10", std::nullopt}));
  EXPECT_LT((RecordId{"s", "10", std::nullopt}), (RecordId{"s", "10", 0}));
  EXPECT_LT((RecordId{"s", "10", 1}), (RecordId{"s", "10", 2}));
  EXPECT_LT((RecordId{"a", "99", 1}), (RecordId{"b", "1", std::nullopt}));
  RedriveFilter f;
  f.error_codes = {"A"};
  f.start_ms = 10;
  f.end_ms = 20;
  EXPECT_TRUE(f.Matches("A", 10));
  EXPECT_FALSE(f.Matches("A", 20));
  EXPECT_FALSE(f.Matches("B", 15));
  EXPECT_TRUE(RedriveFilter{}.Matches("ANY", -5));
}

class RedrivePrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<objectstore::LocalObjectStore>(dir_.Path());
    c_.id = "chan-id";
    c_.arn = "arn:aws:kinesis:us-east-1:000000000000:channel/chan-id";
    c_.stream_arn = "arn:aws:kinesis:us-east-1:000000000000:stream/s";
    c_.dlq.bucket_arn = "arn:aws:s3:::dlq";
    c_.dlq.error_output_prefix = "errors/";
    dlq_ = *DlqBucketOf(c_, store_.get(), true);
  }

  // A DLQ line as DlqBatch writes it.
  std::string Line(const std::string& shard, const std::string& seq, const std::string& code,
                   int64_t arrival_ms, std::optional<uint64_t> sub = std::nullopt,
                   const std::string& channel_arn = "") {
    ChannelConfig c = c_;
    if (!channel_arn.empty()) c.arn = channel_arn;
    DlqBatch b(&c, 1);
    DlqRecord r;
    r.shard_id = shard;
    r.sequence_number = seq;
    r.arrival_ms = arrival_ms;
    r.sub_sequence = sub;
    r.error_code = code;
    r.error_message = "m";
    b.Add(r);
    return b.Finish()->body;
  }

  RedriveState Prepare(RedriveFilter filter, const std::vector<RedriveState>& earlier = {}) {
    RedriveState r;
    r.id = "r" + std::to_string(earlier.size() + 1);
    r.filter = std::move(filter);
    Status st = PrepareRedrive(dlq_, c_, earlier, &r);
    EXPECT_OK(st);
    return r;
  }

  std::vector<RedriveEntry> Read(const RedriveState& r) {
    auto e = ReadWorklist(dlq_, c_, r, 0, r.total);
    EXPECT_OK(e);
    return e.ok() ? *e : std::vector<RedriveEntry>{};
  }

  testing::TempDir dir_;  // first: removed after everything that writes into it
  std::unique_ptr<objectstore::LocalObjectStore> store_;
  ChannelConfig c_;
  DlqBucket dlq_;
};

TEST_F(RedrivePrepareTest, TheWorklistTakesMatchingLinesOncePerRecordSorted) {
  std::string a = Line("shardId-000000000001", "20", "TYPE_MISMATCH", 1000) +
                  Line("shardId-000000000000", "100", "TYPE_MISMATCH", 2000) +
                  Line("shardId-000000000000", "9", "VALUE_OUT_OF_RANGE", 3000, 2) + "not json\n" +
                  Line("shardId-000000000000", "5", "TYPE_MISMATCH", 1000, std::nullopt, "other");
  // A second object repeats one record (a replay's object of another name).
  std::string b = Line("shardId-000000000000", "100", "TYPE_MISMATCH", 2000);
  ASSERT_OK(store_->Put("dlq", "errors/2026/01/01/00/chan-id-a", a));
  ASSERT_OK(store_->Put("dlq", "errors/2026/01/01/01/chan-id-b", b));
  ASSERT_OK(store_->Put("dlq", "elsewhere/x", b));  // outside the prefix
  RedriveState r = Prepare({});
  EXPECT_EQ(r.objects, 2u);
  EXPECT_EQ(r.lines_read, 4u);
  EXPECT_EQ(r.lines_unreadable, 1u);
  EXPECT_EQ(r.lines_skipped, 1u);
  ASSERT_EQ(r.total, 3u);
  auto e = Read(r);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].id(), (RecordId{"shardId-000000000000", "9", 2}));
  EXPECT_EQ(e[1].id(), (RecordId{"shardId-000000000000", "100", std::nullopt}));
  EXPECT_EQ(e[1].object, "errors/2026/01/01/00/chan-id-a");
  EXPECT_EQ(e[1].line, 1u);
  EXPECT_EQ(e[2].id(), (RecordId{"shardId-000000000001", "20", std::nullopt}));
  EXPECT_EQ(e[2].arrival_ms, 1000);
  // Filters.
  RedriveFilter codes;
  codes.error_codes = {"VALUE_OUT_OF_RANGE"};
  EXPECT_EQ(Prepare(codes).total, 1u);
  RedriveFilter times;
  times.start_ms = 1500;
  times.end_ms = 3000;
  RedriveState t = Prepare(times);
  ASSERT_EQ(t.total, 1u);
  EXPECT_EQ(Read(t)[0].sequence_number, "100");
}

TEST_F(RedrivePrepareTest, LinesOfEarlierRedrivesAreSkippedButTheirNewLinesAreNot) {
  ASSERT_OK(store_->Put("dlq", "errors/2026/01/01/00/chan-id-a",
                        Line("shardId-000000000000", "1", "TYPE_MISMATCH", 1000) +
                            Line("shardId-000000000000", "2", "TYPE_MISMATCH", 1000)));
  RedriveState first = Prepare({});
  ASSERT_EQ(first.total, 2u);
  first.status = RedriveStatus::kCompleted;
  // Record 2 failed again: the first redrive's batch wrote a line marked with it.
  auto entries = Read(first);
  RedriveSpan span{first.id, 0, 2, entries, RedriveProgress{first.id, 0, 0, 0, 0}};
  DlqBatch again(&c_, 5, &span);
  DlqRecord r;
  r.shard_id = "shardId-000000000000";
  r.sequence_number = "2";
  r.arrival_ms = 1000;
  r.error_code = "TYPE_MISMATCH";
  r.error_message = "still";
  again.Add(r);
  EXPECT_EQ(again.redrive_rejects().size(), 1u);
  EXPECT_EQ(again.redrive_rejects().at(1).first, "TYPE_MISMATCH");
  auto obj = again.Finish();
  ASSERT_TRUE(obj.has_value());
  EXPECT_EQ(obj->key, "errors/1970/01/01/00/chan-id-redrive-r1-0000000000");
  auto j = nlohmann::json::parse(obj->body);
  EXPECT_EQ(j["redriveId"], "r1");
  EXPECT_EQ(j["redriveOf"]["object"], "errors/2026/01/01/00/chan-id-a");
  EXPECT_EQ(j["redriveOf"]["line"], 1);
  ASSERT_OK(store_->Put("dlq", obj->key, obj->body));
  // The report of that batch.
  auto report = RedriveReport(span, {}, again.redrive_rejects());
  EXPECT_EQ(report.after, (RedriveProgress{"r1", 2, 1, 1, 0}));
  EXPECT_NE(report.report.find("\"outcome\":\"FAILED_AGAIN\""), std::string::npos);
  EXPECT_NE(report.report.find("\"outcome\":\"DELIVERED\""), std::string::npos);
  // A later redrive takes only the new line.
  RedriveState second = Prepare({}, {first});
  EXPECT_EQ(second.lines_skipped, 2u);
  ASSERT_EQ(second.total, 1u);
  auto e = Read(second);
  EXPECT_EQ(e[0].object, obj->key);
  EXPECT_EQ(e[0].sequence_number, "2");
  // An earlier redrive that stopped half way skips only what it processed.
  first.status = RedriveStatus::kFailed;
  first.progress.next = 1;
  RedriveState third = Prepare({}, {first});
  EXPECT_EQ(third.total, 1u);  // record 1 was processed; record 2's two lines are one record
  // The worklist of an earlier redrive is gone: preparing says so.
  ASSERT_OK(store_->Delete("dlq", WorklistKey(c_, first.id, 0)));
  RedriveState fourth;
  fourth.id = "r4";
  EXPECT_STATUS(kNotFound, PrepareRedrive(dlq_, c_, {first}, &fourth));
}

TEST_F(RedrivePrepareTest, TheWorklistIsWrittenInPartsAndReadAcrossThem) {
  std::string body;
  const uint64_t n = kWorklistPartEntries + 5;
  for (uint64_t i = 0; i < n; ++i) {
    body += Line("shardId-000000000000", std::to_string(1000000 + i), "TYPE_MISMATCH", 1000);
  }
  ASSERT_OK(store_->Put("dlq", "errors/2026/01/01/00/chan-id-big", body));
  RedriveState r = Prepare({});
  ASSERT_EQ(r.total, n);
  EXPECT_OK(store_->Head("dlq", WorklistKey(c_, r.id, 1)));
  ASSERT_OK_AND_ASSIGN(
      auto span, ReadWorklist(dlq_, c_, r, kWorklistPartEntries - 2, kWorklistPartEntries + 3));
  ASSERT_EQ(span.size(), 5u);
  EXPECT_EQ(span[0].sequence_number, std::to_string(1000000 + kWorklistPartEntries - 2));
  EXPECT_EQ(span[4].sequence_number, std::to_string(1000000 + kWorklistPartEntries + 2));
}

TEST_F(RedrivePrepareTest, ThePayloadModeKeepsTheRecordInTheLine) {
  c_.dlq.include_record_data = true;
  DlqBatch b(&c_, 1);
  DlqRecord r;
  r.shard_id = "shardId-000000000000";
  r.sequence_number = "7";
  r.error_code = "TYPE_MISMATCH";
  r.partition_key = "pk-1";
  r.data = std::string_view("\x00\x01{bytes}", 9);
  r.path = "$.n";
  b.Add(r);
  EXPECT_EQ(b.summary().by_reason.at("TYPE_MISMATCH $.n"), 1u);
  EXPECT_EQ(b.summary().ReasonsText(), "TYPE_MISMATCH $.n ×1");
  auto obj = b.Finish();
  auto j = nlohmann::json::parse(obj->body);
  EXPECT_EQ(j["partitionKey"], "pk-1");
  EXPECT_EQ(base64::Decode(j["data"].get<std::string>()), std::string(r.data));
  ASSERT_OK(store_->Put("dlq", "errors/x", obj->body));
  RedriveState s = Prepare({});
  auto e = Read(s);
  ASSERT_EQ(e.size(), 1u);
  ASSERT_TRUE(e[0].data.has_value());
  EXPECT_EQ(*e[0].data, std::string(r.data));
  EXPECT_EQ(e[0].partition_key, "pk-1");
}

}  // namespace
}  // namespace icestream::delivery
