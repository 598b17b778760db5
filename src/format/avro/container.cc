// Avro object container files (Avro specification, "Object Container Files",
// "Required Codecs", "Optional Codecs").
#include "format/avro/container.h"

#include <zlib.h>

#include <cstring>

#include "common/crypto.h"
#include "compression/compression.h"
#include "format/avro/encoding.h"

namespace icestream::format::avro {

namespace {

constexpr char kMagic[4] = {'O', 'b', 'j', '\x01'};
constexpr size_t kSyncSize = 16;

// A block through the compression module, its failure said in Avro's words.
Status DecompressBlock(compression::Codec codec, std::string_view in, size_t max_out,
                       std::string* out) {
  Status st = compression::Decompress(codec, in, max_out, out);
  if (st.ok()) return st;
  return st.WithContext("avro: " + std::string(compression::CodecName(codec)) + " block");
}

}  // namespace

std::string_view CodecName(Codec codec) {
  switch (codec) {
    case Codec::kNull:
      return "null";
    case Codec::kDeflate:
      return "deflate";
    case Codec::kSnappy:
      return "snappy";
    case Codec::kZstandard:
      return "zstandard";
  }
  return "null";
}

ContainerWriter::ContainerWriter(std::string schema_json, ContainerWriterOptions options)
    : options_(std::move(options)) {
  out_.append(kMagic, 4);
  // Header metadata: one map block with every entry, then the end marker.
  PutLong(&out_, static_cast<int64_t>(options_.metadata.size() + 2));
  PutString(&out_, "avro.schema");
  PutBytes(&out_, schema_json);
  PutString(&out_, "avro.codec");
  PutBytes(&out_, CodecName(options_.codec));
  for (const auto& [k, v] : options_.metadata) {
    PutString(&out_, k);
    PutBytes(&out_, v);
  }
  PutLong(&out_, 0);
  out_.append(options_.sync_marker);
}

Result<std::unique_ptr<ContainerWriter>> ContainerWriter::Make(std::string schema_json,
                                                               ContainerWriterOptions options) {
  for (const auto& [k, v] : options.metadata) {
    if (k.rfind("avro.", 0) == 0)
      return InvalidArgument("avro: metadata key '" + k + "' is reserved");
  }
  if (options.codec != Codec::kNull && options.codec != Codec::kDeflate) {
    return InvalidArgument("avro: only the null and deflate codecs are written");
  }
  if (options.sync_marker.empty()) {
    options.sync_marker.resize(kSyncSize);
    crypto::RandomBytes(options.sync_marker.data(), kSyncSize);
  }
  if (options.sync_marker.size() != kSyncSize)
    return InvalidArgument("avro: sync marker must be 16 bytes");
  return std::unique_ptr<ContainerWriter>(
      new ContainerWriter(std::move(schema_json), std::move(options)));
}

Status ContainerWriter::EndDatum() {
  ++block_count_;
  ++total_count_;
  if (block_.size() >= options_.block_bytes) return FlushBlock();
  return Status::OK();
}

Status ContainerWriter::FlushBlock() {
  if (block_count_ == 0) return Status::OK();
  PutLong(&out_, block_count_);
  if (options_.codec == Codec::kDeflate) {
    std::string compressed;
    RETURN_IF_ERROR(compression::Compress(compression::Codec::kDeflate, block_, &compressed,
                                          {.level = options_.deflate_level}));
    PutBytes(&out_, compressed);
  } else {
    PutBytes(&out_, block_);
  }
  out_.append(options_.sync_marker);
  block_.clear();
  block_count_ = 0;
  return Status::OK();
}

Result<std::string> ContainerWriter::Finish() {
  if (finished_) return FailedPrecondition("avro: container already finished");
  finished_ = true;
  RETURN_IF_ERROR(FlushBlock());
  return std::move(out_);
}

Result<std::unique_ptr<ContainerReader>> ContainerReader::Open(std::string_view file,
                                                               ContainerLimits limits) {
  std::unique_ptr<ContainerReader> r(new ContainerReader(file, limits));
  RETURN_IF_ERROR(r->ReadHeader());
  return r;
}

std::string ContainerReader::Meta(std::string_view key) const {
  auto it = metadata_.find(std::string(key));
  return it == metadata_.end() ? std::string() : it->second;
}

Status ContainerReader::ReadHeader() {
  if (file_.size() < 4 || std::memcmp(file_.data(), kMagic, 4) != 0) {
    return Corruption("avro: not an object container file (bad magic)");
  }
  Decoder dec(file_.substr(4));
  while (true) {
    ASSIGN_OR_RETURN(int64_t count, dec.ReadLong());
    if (count == 0) break;
    if (count < 0) {
      if (count == INT64_MIN) return Corruption("avro: bad metadata block count");
      count = -count;
      RETURN_IF_ERROR(dec.ReadLong().status());
    }
    if (static_cast<uint64_t>(count) > dec.remaining())
      return Corruption("avro: bad metadata count");
    for (int64_t i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(std::string_view k, dec.ReadBytes());
      ASSIGN_OR_RETURN(std::string_view v, dec.ReadBytes());
      metadata_[std::string(k)] = std::string(v);
    }
  }
  ASSIGN_OR_RETURN(std::string_view sync, dec.ReadFixed(kSyncSize));
  sync_.assign(sync);
  pos_ = 4 + dec.position();

  auto schema_it = metadata_.find("avro.schema");
  if (schema_it == metadata_.end()) return Corruption("avro: header has no avro.schema");
  schema_json_ = schema_it->second;
  auto schema = Schema::Parse(schema_json_);
  if (!schema.ok()) return Corruption("avro: header schema: " + schema.status().message());
  schema_ = std::move(schema).value();

  std::string codec = Meta("avro.codec");
  if (codec.empty() || codec == "null") {
    codec_ = Codec::kNull;
  } else if (codec == "deflate") {
    codec_ = Codec::kDeflate;
  } else if (codec == "snappy") {
    codec_ = Codec::kSnappy;
  } else if (codec == "zstandard") {
    codec_ = Codec::kZstandard;
  } else {
    return Corruption("avro: unsupported codec '" + codec + "'");
  }
  return Status::OK();
}

Status ContainerReader::LoadBlock() {
  Decoder dec(file_.substr(pos_));
  ASSIGN_OR_RETURN(int64_t count, dec.ReadLong());
  ASSIGN_OR_RETURN(std::string_view data, dec.ReadBytes());
  ASSIGN_OR_RETURN(std::string_view sync, dec.ReadFixed(kSyncSize));
  if (count <= 0) return Corruption("avro: block with a non-positive object count");
  if (sync != sync_) return Corruption("avro: block sync marker does not match the header");
  pos_ += dec.position();
  switch (codec_) {
    case Codec::kNull:
      block_ = data;
      break;
    case Codec::kDeflate:
      RETURN_IF_ERROR(DecompressBlock(compression::Codec::kDeflate, data, limits_.max_block_bytes,
                                      &block_storage_));
      block_ = block_storage_;
      break;
    case Codec::kSnappy: {
      if (data.size() < 4) return Corruption("avro: snappy block without checksum");
      // Avro's snappy codec: a raw snappy block, then the CRC-32 of the uncompressed data.
      std::string_view body = data.substr(0, data.size() - 4);
      RETURN_IF_ERROR(DecompressBlock(compression::Codec::kSnappy, body, limits_.max_block_bytes,
                                      &block_storage_));
      auto crc =
          static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(block_storage_.data()),
                                      static_cast<uInt>(block_storage_.size())));
      const auto* c = reinterpret_cast<const unsigned char*>(data.data() + data.size() - 4);
      uint32_t want =
          (uint32_t{c[0]} << 24) | (uint32_t{c[1]} << 16) | (uint32_t{c[2]} << 8) | c[3];
      if (crc != want) return Corruption("avro: snappy block checksum mismatch");
      block_ = block_storage_;
      break;
    }
    case Codec::kZstandard:
      RETURN_IF_ERROR(DecompressBlock(compression::Codec::kZstd, data, limits_.max_block_bytes,
                                      &block_storage_));
      block_ = block_storage_;
      break;
  }
  block_decoder_ = Decoder(block_);
  block_remaining_ = count;
  return Status::OK();
}

Result<bool> ContainerReader::Next(Datum* out) {
  while (block_remaining_ == 0) {
    if (!block_decoder_.at_end()) return Corruption("avro: block has bytes beyond its objects");
    if (pos_ >= file_.size()) return false;
    RETURN_IF_ERROR(LoadBlock());
  }
  ASSIGN_OR_RETURN(*out, DecodeDatum(schema_->root(), &block_decoder_, limits_.decode));
  --block_remaining_;
  return true;
}

}  // namespace icestream::format::avro
