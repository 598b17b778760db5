// KPL aggregate decoding (protobuf wire format: varints, length-delimited fields).
#include "delivery/kpl.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "common/crypto.h"

namespace icestream::delivery {

namespace {

constexpr size_t kMd5Size = 16;

// A bounded protobuf reader over one message.
class Wire {
 public:
  explicit Wire(std::string_view b) : b_(b) {}
  bool done() const { return pos_ >= b_.size(); }

  std::optional<uint64_t> Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= b_.size()) return std::nullopt;
      auto c = static_cast<uint8_t>(b_[pos_++]);
      v |= static_cast<uint64_t>(c & 0x7F) << shift;
      if ((c & 0x80) == 0) return v;
    }
    return std::nullopt;
  }

  std::optional<std::string_view> Bytes() {
    auto n = Varint();
    if (!n || *n > b_.size() - pos_) return std::nullopt;
    std::string_view out = b_.substr(pos_, *n);
    pos_ += *n;
    return out;
  }

  // Skips a field of this wire type (groups are not used by KPL and are refused).
  bool Skip(uint32_t wire_type) {
    switch (wire_type) {
      case 0:
        return Varint().has_value();
      case 1:
        return Advance(8);
      case 2:
        return Bytes().has_value();
      case 5:
        return Advance(4);
      default:
        return false;
    }
  }

 private:
  bool Advance(size_t n) {
    if (n > b_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  std::string_view b_;
  size_t pos_ = 0;
};

struct RawRecord {
  std::optional<uint64_t> pk_index;
  std::optional<uint64_t> ehk_index;
  std::optional<std::string_view> data;
};

bool ParseRecord(std::string_view body, RawRecord* out) {
  Wire w(body);
  while (!w.done()) {
    auto key = w.Varint();
    if (!key) return false;
    uint32_t field = static_cast<uint32_t>(*key >> 3), type = static_cast<uint32_t>(*key & 7);
    if (field == 1 && type == 0) {
      out->pk_index = w.Varint();
      if (!out->pk_index) return false;
    } else if (field == 2 && type == 0) {
      out->ehk_index = w.Varint();
      if (!out->ehk_index) return false;
    } else if (field == 3 && type == 2) {
      out->data = w.Bytes();
      if (!out->data) return false;
    } else if (!w.Skip(type)) {
      return false;  // tags (field 4) are skipped here too
    }
  }
  return true;
}

KplAggregate Corrupt(std::string why) {
  KplAggregate a;
  a.kind = KplAggregate::Kind::kCorrupt;
  a.error = "The record is a KPL aggregate that does not decode: " + std::move(why) + ".";
  return a;
}

}  // namespace

KplAggregate Deaggregate(std::string_view data) {
  if (data.size() < kKplMagic.size() || data.substr(0, kKplMagic.size()) != kKplMagic) return {};
  if (data.size() < kKplMagic.size() + kMd5Size)
    return Corrupt("it is shorter than its magic and MD5");
  std::string_view body = data.substr(kKplMagic.size(), data.size() - kKplMagic.size() - kMd5Size);
  std::string_view md5 = data.substr(data.size() - kMd5Size);
  crypto::Md5Digest digest = crypto::Md5(body);
  if (std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()) != md5) {
    return Corrupt("the MD5 of its protobuf does not match");
  }
  std::vector<std::string_view> pks, ehks;
  std::vector<RawRecord> raws;
  Wire w(body);
  while (!w.done()) {
    auto key = w.Varint();
    if (!key) return Corrupt("a field key is cut short");
    uint32_t field = static_cast<uint32_t>(*key >> 3), type = static_cast<uint32_t>(*key & 7);
    if (type == 2 && field >= 1 && field <= 3) {
      auto bytes = w.Bytes();
      if (!bytes) return Corrupt("a length-delimited field runs past the end");
      if (field == 1) {
        pks.push_back(*bytes);
      } else if (field == 2) {
        ehks.push_back(*bytes);
      } else {
        RawRecord r;
        if (!ParseRecord(*bytes, &r))
          return Corrupt(fmt::format("user record {} is malformed", raws.size()));
        raws.push_back(r);
      }
    } else if (!w.Skip(type)) {
      return Corrupt("a field has an unknown wire type");
    }
  }
  if (raws.empty()) return Corrupt("it holds no user records");
  KplAggregate a;
  a.kind = KplAggregate::Kind::kAggregate;
  a.records.reserve(raws.size());
  for (size_t i = 0; i < raws.size(); ++i) {
    const RawRecord& r = raws[i];
    if (!r.pk_index || !r.data)
      return Corrupt(fmt::format("user record {} lacks its partition key or data", i));
    if (*r.pk_index >= pks.size()) {
      return Corrupt(
          fmt::format("user record {} names partition key {} of {}", i, *r.pk_index, pks.size()));
    }
    KplUserRecord u{pks[*r.pk_index], {}, *r.data};
    if (r.ehk_index) {
      if (*r.ehk_index >= ehks.size()) {
        return Corrupt(fmt::format("user record {} names explicit hash key {} of {}", i,
                                   *r.ehk_index, ehks.size()));
      }
      u.explicit_hash_key = ehks[*r.ehk_index];
    }
    a.records.push_back(u);
  }
  return a;
}

}  // namespace icestream::delivery
