// Generic decoding of Avro values (Avro specification, "Binary Encoding").
#include "format/avro/datum.h"

namespace icestream::format::avro {

const Datum* Datum::Field(std::string_view name) const {
  if (node == nullptr || node->type != AvroType::kRecord) return nullptr;
  int i = node->FieldIndex(name);
  if (i < 0 || static_cast<size_t>(i) >= children.size()) return nullptr;
  return &children[static_cast<size_t>(i)];
}

namespace {

// True if a value of this type may encode to zero bytes.
bool MayBeEmpty(const Node& n, int depth = 0) {
  if (depth > 8) return true;
  switch (n.type) {
    case AvroType::kNull: return true;
    case AvroType::kFixed: return n.size == 0;
    case AvroType::kRecord:
      for (const auto& f : n.fields) {
        if (!MayBeEmpty(*f.type, depth + 1)) return false;
      }
      return true;
    default: return false;
  }
}

class DatumDecoder {
 public:
  DatumDecoder(Decoder* dec, const DecodeLimits& limits) : dec_(dec), limits_(limits) {}

  Status Decode(const Node& node, Datum* out, int depth) {
    if (depth > limits_.max_depth) return Corruption("avro: value nested too deeply");
    out->node = &node;
    switch (node.type) {
      case AvroType::kNull: return Status::OK();
      case AvroType::kBoolean: {
        ASSIGN_OR_RETURN(out->boolean, dec_->ReadBoolean());
        return Status::OK();
      }
      case AvroType::kInt: {
        ASSIGN_OR_RETURN(out->integer, dec_->ReadInt());
        return Status::OK();
      }
      case AvroType::kLong: {
        ASSIGN_OR_RETURN(out->integer, dec_->ReadLong());
        return Status::OK();
      }
      case AvroType::kFloat: {
        ASSIGN_OR_RETURN(float f, dec_->ReadFloat());
        out->real = f;
        return Status::OK();
      }
      case AvroType::kDouble: {
        ASSIGN_OR_RETURN(out->real, dec_->ReadDouble());
        return Status::OK();
      }
      case AvroType::kBytes:
      case AvroType::kString: {
        ASSIGN_OR_RETURN(std::string_view v, dec_->ReadBytes());
        out->bytes.assign(v);
        return Status::OK();
      }
      case AvroType::kFixed: {
        ASSIGN_OR_RETURN(std::string_view v, dec_->ReadFixed(static_cast<size_t>(node.size)));
        out->bytes.assign(v);
        return Status::OK();
      }
      case AvroType::kEnum: {
        ASSIGN_OR_RETURN(out->integer, dec_->ReadInt());
        if (out->integer < 0 || static_cast<size_t>(out->integer) >= node.symbols.size()) {
          return Corruption("avro: enum index out of range");
        }
        return Status::OK();
      }
      case AvroType::kUnion: {
        ASSIGN_OR_RETURN(int64_t branch, dec_->ReadLong());
        if (branch < 0 || static_cast<size_t>(branch) >= node.branches.size()) {
          return Corruption("avro: union branch index out of range");
        }
        return Decode(*node.branches[static_cast<size_t>(branch)], out, depth + 1);
      }
      case AvroType::kRecord: {
        out->children.resize(node.fields.size());
        for (size_t i = 0; i < node.fields.size(); ++i) {
          RETURN_IF_ERROR(Decode(*node.fields[i].type, &out->children[i], depth + 1));
        }
        return Status::OK();
      }
      case AvroType::kArray:
      case AvroType::kMap: return DecodeBlocks(node, out, depth);
    }
    return Corruption("avro: unknown type");
  }

 private:
  Status DecodeBlocks(const Node& node, Datum* out, int depth) {
    const bool is_map = node.type == AvroType::kMap;
    const Node& item = is_map ? *node.values : *node.items;
    const bool may_be_empty = !is_map && MayBeEmpty(item);  // map items start with a key
    int64_t total = 0;
    while (true) {
      ASSIGN_OR_RETURN(int64_t count, dec_->ReadLong());
      if (count == 0) return Status::OK();
      if (count < 0) {
        if (count == INT64_MIN) return Corruption("avro: bad block count");
        count = -count;
        ASSIGN_OR_RETURN(int64_t block_bytes, dec_->ReadLong());
        if (block_bytes < 0) return Corruption("avro: negative block size");
      }
      total += count;
      // Every non-empty item takes at least one byte: a count beyond the bytes left
      // is a lie and would make us allocate for nothing.
      if (may_be_empty ? total > limits_.max_empty_items
                       : static_cast<uint64_t>(count) > dec_->remaining()) {
        return Corruption("avro: block item count exceeds the data");
      }
      for (int64_t i = 0; i < count; ++i) {
        if (is_map) {
          ASSIGN_OR_RETURN(std::string_view key, dec_->ReadBytes());
          out->keys.emplace_back(key);
        }
        out->children.emplace_back();
        RETURN_IF_ERROR(Decode(item, &out->children.back(), depth + 1));
      }
    }
  }

  Decoder* dec_;
  const DecodeLimits& limits_;
};

}  // namespace

Result<Datum> DecodeDatum(const Node& node, Decoder* decoder, const DecodeLimits& limits) {
  Datum d;
  DatumDecoder dd(decoder, limits);
  RETURN_IF_ERROR(dd.Decode(node, &d, 0));
  return d;
}

}  // namespace icestream::format::avro
