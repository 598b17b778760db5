// Object container files: header layout byte for byte, codecs, verbatim schema text,
// and damaged files (flipped sync byte, truncated tail, inflating garbage).
#include "format/avro/container.h"

#include <gtest/gtest.h>

#include "common/testing/status_assertions.h"
#include "format/avro/encoding.h"

namespace icestream::format::avro {
namespace {

const char* kSchema =
    R"({"type":"record","name":"manifest_file","fields":[{"name":"n","type":"long","field-id":500},)"
    R"({"name":"s","type":["null",{"type":"array","items":"int","element-id":7,"logicalType":"map"}],"default":null,"field-id":501}]})";

std::string Sync() { return std::string("0123456789abcdef"); }

Result<std::string> WriteRows(Codec codec, int rows, size_t block_bytes = 64 << 10) {
  ContainerWriterOptions o;
  o.codec = codec;
  o.sync_marker = Sync();
  o.block_bytes = block_bytes;
  o.metadata = {{"format-version", "2"}};
  ASSIGN_OR_RETURN(auto w, ContainerWriter::Make(kSchema, o));
  for (int i = 0; i < rows; ++i) {
    PutLong(w->datum(), i * 1000);
    if (i % 2) {
      PutUnionBranch(w->datum(), 0);
    } else {
      PutUnionBranch(w->datum(), 1);
      PutLong(w->datum(), 1);
      PutInt(w->datum(), i);
      PutLong(w->datum(), 0);
    }
    RETURN_IF_ERROR(w->EndDatum());
  }
  return w->Finish();
}

Status ReadAll(std::string_view file, int* rows) {
  ASSIGN_OR_RETURN(auto r, ContainerReader::Open(file));
  Datum d;
  *rows = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, r->Next(&d));
    if (!more) return Status::OK();
    if (d.Field("n")->integer != *rows * 1000) return Internal("wrong value");
    ++*rows;
  }
}

TEST(AvroContainerTest, HeaderLayoutIsExact) {
  ASSERT_OK_AND_ASSIGN(auto file, WriteRows(Codec::kNull, 0));
  std::string want = "Obj\x01";
  PutLong(&want, 3);
  PutString(&want, "avro.schema");
  PutString(&want, kSchema);
  PutString(&want, "avro.codec");
  PutString(&want, "null");
  PutString(&want, "format-version");
  PutString(&want, "2");
  PutLong(&want, 0);
  want += Sync();
  EXPECT_EQ(file, want);  // no block for zero objects
}

TEST(AvroContainerTest, KeepsTheSchemaTextVerbatim) {
  ASSERT_OK_AND_ASSIGN(auto file, WriteRows(Codec::kDeflate, 3));
  ASSERT_OK_AND_ASSIGN(auto r, ContainerReader::Open(file));
  EXPECT_EQ(r->schema_json(), kSchema);
  EXPECT_EQ(r->Meta("format-version"), "2");
  EXPECT_EQ(r->codec(), Codec::kDeflate);
  EXPECT_EQ(r->schema().root().fields[1].field_id, 501);
  EXPECT_EQ(r->schema().root().fields[1].type->branches[1]->logical_type, "map");
}

TEST(AvroContainerTest, RoundTripsAcrossBlocksAndCodecs) {
  for (Codec c : {Codec::kNull, Codec::kDeflate}) {
    for (size_t block : {size_t{1}, size_t{100}, size_t{1 << 20}}) {
      ASSERT_OK_AND_ASSIGN(auto file, WriteRows(c, 500, block));
      int rows = 0;
      Status st = ReadAll(file, &rows);
      EXPECT_OK(st);
      EXPECT_EQ(rows, 500);
    }
  }
}

TEST(AvroContainerTest, DeflateIsRawWithoutZlibHeader) {
  ASSERT_OK_AND_ASSIGN(auto file, WriteRows(Codec::kDeflate, 1));
  ASSERT_OK(ContainerReader::Open(file));
  // The block data starts right after the header: count, size, then deflate bytes.
  size_t header_end = file.find(Sync()) + 16;
  Decoder d(std::string_view(file).substr(header_end));
  EXPECT_EQ(*d.ReadLong(), 1);
  ASSERT_OK_AND_ASSIGN(auto data, d.ReadBytes());
  ASSERT_GE(data.size(), 2u);
  EXPECT_FALSE(static_cast<unsigned char>(data[0]) == 0x78);  // no zlib CMF byte
}

TEST(AvroContainerTest, DetectsDamage) {
  ASSERT_OK_AND_ASSIGN(auto file, WriteRows(Codec::kDeflate, 50, 200));
  int rows = 0;
  // A flipped byte in the last sync marker.
  std::string bad = file;
  bad[bad.size() - 3] ^= 0x40;
  EXPECT_STATUS(kCorruption, ReadAll(bad, &rows));
  // Truncated tail.
  EXPECT_STATUS(kCorruption, ReadAll(std::string_view(file).substr(0, file.size() - 20), &rows));
  // Bad magic.
  bad = file;
  bad[0] = 'X';
  EXPECT_STATUS(kCorruption, ReadAll(bad, &rows));
  // Garbage instead of deflate data in the first block.
  bad = file;
  size_t header_end = bad.find(Sync()) + 16;
  for (size_t i = header_end + 4; i < header_end + 30 && i < bad.size(); ++i) bad[i] = '\xff';
  EXPECT_STATUS(kCorruption, ReadAll(bad, &rows));
}

TEST(AvroContainerTest, RefusesReservedMetadataAndBadSync) {
  ContainerWriterOptions o;
  o.metadata = {{"avro.x", "1"}};
  EXPECT_STATUS(kInvalidArgument, ContainerWriter::Make(kSchema, o));
  ContainerWriterOptions o2;
  o2.sync_marker = "short";
  EXPECT_STATUS(kInvalidArgument, ContainerWriter::Make(kSchema, o2));
}

}  // namespace
}  // namespace icestream::format::avro
