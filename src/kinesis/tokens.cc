// Token layouts:
//   iterator  = base64( 0x01 | uid u64 | shard u32 | offset u64 | issued i64 |
//                       name_len u8 | name | mac[16] )
//   nexttoken = base64( 0x02 | issued i64 | json | mac[16] )
// All integers little-endian; mac = first 16 bytes of HMAC-SHA256(secret, everything before).
#include "kinesis/tokens.h"

#include "common/base64.h"
#include "common/bytes.h"
#include "common/crypto.h"

namespace icestream::kinesis {

std::string TokenCodec::Mac(std::string_view data) const {
  auto d = crypto::HmacSha256(secret_, data);
  return std::string(reinterpret_cast<const char*>(d.data()), 16);
}

std::string TokenCodec::EncodeIterator(const IteratorToken& t) const {
  std::string b;
  b.push_back('\x01');
  AppendFixed64(&b, t.stream_uid);
  AppendFixed32(&b, t.shard_index);
  AppendFixed64(&b, t.offset);
  AppendFixed64(&b, static_cast<uint64_t>(t.issued_ms));
  b.push_back(static_cast<char>(t.stream_name.size()));
  b += t.stream_name;
  b += Mac(b);
  return base64::Encode(b);
}

std::optional<IteratorToken> TokenCodec::DecodeIterator(std::string_view text) const {
  auto raw = base64::Decode(text);
  if (!raw || raw->size() < 1 + 8 + 4 + 8 + 8 + 1 + 16 || (*raw)[0] != '\x01') return std::nullopt;
  const std::string& b = *raw;
  size_t name_len = static_cast<unsigned char>(b[29]);
  if (b.size() != 30 + name_len + 16) return std::nullopt;
  std::string_view body(b.data(), 30 + name_len);
  if (Mac(body) != b.substr(30 + name_len)) return std::nullopt;
  IteratorToken t;
  t.stream_uid = GetFixed64(b.data() + 1);
  t.shard_index = GetFixed32(b.data() + 9);
  t.offset = GetFixed64(b.data() + 13);
  t.issued_ms = static_cast<int64_t>(GetFixed64(b.data() + 21));
  t.stream_name = b.substr(30, name_len);
  return t;
}

std::string TokenCodec::EncodeNextToken(const nlohmann::json& payload, int64_t issued_ms) const {
  std::string b;
  b.push_back('\x02');
  AppendFixed64(&b, static_cast<uint64_t>(issued_ms));
  b += payload.dump();
  b += Mac(b);
  return base64::Encode(b);
}

std::optional<TokenCodec::NextToken> TokenCodec::DecodeNextToken(std::string_view text) const {
  auto raw = base64::Decode(text);
  if (!raw || raw->size() < 1 + 8 + 16 || (*raw)[0] != '\x02') return std::nullopt;
  const std::string& b = *raw;
  std::string_view body(b.data(), b.size() - 16);
  if (Mac(body) != b.substr(b.size() - 16)) return std::nullopt;
  NextToken t;
  t.issued_ms = static_cast<int64_t>(GetFixed64(b.data() + 1));
  t.payload = nlohmann::json::parse(body.substr(9), nullptr, false);
  if (t.payload.is_discarded()) return std::nullopt;
  return t;
}

}  // namespace icestream::kinesis
