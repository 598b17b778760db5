// DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY decoding
// (Encodings.md "Delta Encoding", "Delta-length byte array", "Delta Strings").
#include "format/parquet/delta_decoder.h"

#include <algorithm>

#include "format/parquet/rle_decoder.h"

namespace icestream::format::parquet {
namespace {

Status Uleb(std::string_view in, size_t* pos, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= in.size()) return Corruption("delta: stream ends inside a varint");
    auto b = static_cast<uint8_t>(in[(*pos)++]);
    result |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return Status::OK();
    }
  }
  return Corruption("delta: varint longer than 10 bytes");
}

Status ZigZag(std::string_view in, size_t* pos, uint64_t* v) {
  uint64_t u;
  RETURN_IF_ERROR(Uleb(in, pos, &u));
  *v = (u >> 1) ^ (~(u & 1) + 1);  // as two's complement bits
  return Status::OK();
}

// Lengths must be non-negative 32-bit values.
Status Lengths(std::string_view in, size_t n, std::vector<int64_t>* lengths, size_t* consumed) {
  lengths->resize(n);
  RETURN_IF_ERROR(DecodeDeltaBinaryPacked(in, n, lengths->data(), consumed));
  for (int64_t len : *lengths) {
    if (len < 0 || len > INT32_MAX)
      return Corruption("delta: byte array length " + std::to_string(len));
  }
  return Status::OK();
}

}  // namespace

Status DecodeDeltaBinaryPacked(std::string_view in, size_t n, int64_t* out, size_t* consumed) {
  size_t pos = 0;
  uint64_t block_size, miniblocks, total, first;
  RETURN_IF_ERROR(Uleb(in, &pos, &block_size));
  RETURN_IF_ERROR(Uleb(in, &pos, &miniblocks));
  RETURN_IF_ERROR(Uleb(in, &pos, &total));
  RETURN_IF_ERROR(ZigZag(in, &pos, &first));
  if (block_size == 0 || block_size % 128 != 0 || block_size > (1u << 20)) {
    return Corruption("DELTA_BINARY_PACKED: block size " + std::to_string(block_size));
  }
  if (miniblocks == 0 || block_size % miniblocks != 0 || (block_size / miniblocks) % 32 != 0) {
    return Corruption("DELTA_BINARY_PACKED: " + std::to_string(miniblocks) +
                      " miniblocks in a block of " + std::to_string(block_size));
  }
  if (total != n) {
    return Corruption("DELTA_BINARY_PACKED: " + std::to_string(total) +
                      " values where the page has " + std::to_string(n));
  }
  const uint64_t per_mini = block_size / miniblocks;
  if (n == 0) {
    *consumed = pos;
    return Status::OK();
  }
  uint64_t last = first;
  out[0] = static_cast<int64_t>(first);
  size_t done = 1;
  uint64_t buf[256];
  while (done < n) {
    uint64_t min_delta;
    RETURN_IF_ERROR(ZigZag(in, &pos, &min_delta));
    if (in.size() - pos < miniblocks)
      return Corruption("DELTA_BINARY_PACKED: stream ends in the bit widths");
    const auto* widths = reinterpret_cast<const uint8_t*>(in.data() + pos);
    pos += static_cast<size_t>(miniblocks);
    for (uint64_t m = 0; m < miniblocks && done < n; ++m) {
      int w = widths[m];
      if (w > 64) return Corruption("DELTA_BINARY_PACKED: bit width " + std::to_string(w));
      size_t bytes = static_cast<size_t>(per_mini * static_cast<uint64_t>(w) / 8);
      if (in.size() - pos < bytes)
        return Corruption("DELTA_BINARY_PACKED: stream ends inside a miniblock");
      const auto* p = reinterpret_cast<const uint8_t*>(in.data() + pos);
      for (uint64_t i = 0; i < per_mini && done < n;) {
        size_t take = static_cast<size_t>(std::min<uint64_t>({per_mini - i, n - done, 256}));
        // Chunks of 256 start at multiples of 8 values: whole bytes.
        size_t off = static_cast<size_t>(i * static_cast<uint64_t>(w) / 8);
        UnpackBits(p + off, bytes - off, w, take, buf);
        for (size_t k = 0; k < take; ++k) {
          last += min_delta + buf[k];
          out[done++] = static_cast<int64_t>(last);
        }
        i += take;
      }
      pos += bytes;
    }
  }
  *consumed = pos;
  return Status::OK();
}

Status DecodeDeltaLengthByteArray(std::string_view in, size_t n,
                                  std::vector<std::string_view>* out) {
  std::vector<int64_t> lengths;
  size_t pos;
  RETURN_IF_ERROR(Lengths(in, n, &lengths, &pos));
  for (int64_t len : lengths) {
    if (in.size() - pos < static_cast<size_t>(len)) {
      return Corruption("DELTA_LENGTH_BYTE_ARRAY: values run past the page");
    }
    out->push_back(in.substr(pos, static_cast<size_t>(len)));
    pos += static_cast<size_t>(len);
  }
  return Status::OK();
}

Status DecodeDeltaByteArray(std::string_view in, size_t n, size_t max_bytes, std::string* storage,
                            std::vector<std::string_view>* out) {
  std::vector<int64_t> prefixes;
  size_t pos;
  RETURN_IF_ERROR(Lengths(in, n, &prefixes, &pos));
  std::vector<std::string_view> suffixes;
  RETURN_IF_ERROR(DecodeDeltaLengthByteArray(in.substr(pos), n, &suffixes));
  // Sizes first, so that *storage is allocated once and the views stay valid.
  size_t total = 0, prev = 0;
  for (size_t i = 0; i < n; ++i) {
    auto prefix = static_cast<size_t>(prefixes[i]);
    if (prefix > prev) {
      return Corruption("DELTA_BYTE_ARRAY: prefix " + std::to_string(prefix) +
                        " longer than the previous value");
    }
    prev = prefix + suffixes[i].size();
    total += prev;
    if (total > max_bytes)
      return ResourceExhausted("DELTA_BYTE_ARRAY: values exceed the read budget");
  }
  storage->clear();
  storage->reserve(total);
  size_t prev_start = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t start = storage->size();
    // The source lies before the end and capacity suffices: no reallocation, no overlap.
    storage->append(*storage, prev_start, static_cast<size_t>(prefixes[i]));
    storage->append(suffixes[i]);
    prev_start = start;
  }
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t len = static_cast<size_t>(prefixes[i]) + suffixes[i].size();
    out->push_back(std::string_view(*storage).substr(at, len));
    at += len;
  }
  return Status::OK();
}

}  // namespace icestream::format::parquet
