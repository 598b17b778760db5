// Opaque tokens handed to clients: shard iterators and NextTokens. Each carries its issue
// time and an HMAC (keyed by a per-data-dir secret), so a forged or damaged token is
// rejected ("Invalid ShardIterator.") and an old one can be reported as expired.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace icestream::kinesis {

struct IteratorToken {
  std::string stream_name;
  uint64_t stream_uid = 0;
  uint32_t shard_index = 0;
  uint64_t offset = 0;  // next record to read
  int64_t issued_ms = 0;
};

class TokenCodec {
 public:
  explicit TokenCodec(std::string secret) : secret_(std::move(secret)) {}

  // Standard base64 text, at most 512 characters for stream names of up to 128.
  std::string EncodeIterator(const IteratorToken& t) const;
  std::optional<IteratorToken> DecodeIterator(std::string_view text) const;

  std::string EncodeNextToken(const nlohmann::json& payload, int64_t issued_ms) const;
  struct NextToken {
    nlohmann::json payload;
    int64_t issued_ms = 0;
  };
  std::optional<NextToken> DecodeNextToken(std::string_view text) const;

 private:
  std::string Mac(std::string_view data) const;  // 16 bytes
  std::string secret_;
};

}  // namespace icestream::kinesis
