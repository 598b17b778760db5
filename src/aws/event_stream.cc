// Event-stream framing (see event_stream.h).
#include "aws/event_stream.h"

#include <zlib.h>

#include <array>

namespace icestream::aws {

namespace {

void PutU32(std::string* out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out->push_back(static_cast<char>((v >> s) & 0xff));
}

uint32_t GetU32(std::string_view in, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(in[at + i]);
  return v;
}

}  // namespace

// The prelude and message CRCs are CRC-32 (IEEE 802.3), zlib's: its word-at-a-time
// implementation runs several times faster than a byte table over multi-MiB events.
uint32_t Crc32(std::string_view data, uint32_t crc) {
  return static_cast<uint32_t>(
      crc32_z(crc, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

std::string EncodeEventMessage(const EventHeaders& headers, std::string_view payload) {
  std::string hdr;
  for (const auto& [name, value] : headers) {
    hdr.push_back(static_cast<char>(name.size()));
    hdr.append(name);
    hdr.push_back(7);  // string
    hdr.push_back(static_cast<char>((value.size() >> 8) & 0xff));
    hdr.push_back(static_cast<char>(value.size() & 0xff));
    hdr.append(value);
  }
  uint32_t total = static_cast<uint32_t>(12 + hdr.size() + payload.size() + 4);
  std::string out;
  out.reserve(total);
  PutU32(&out, total);
  PutU32(&out, static_cast<uint32_t>(hdr.size()));
  PutU32(&out, Crc32(out));
  out.append(hdr);
  out.append(payload);
  PutU32(&out, Crc32(out));
  return out;
}

std::optional<EventMessage> DecodeEventMessage(std::string_view in, size_t* consumed) {
  if (in.size() < 16) return std::nullopt;
  uint32_t total = GetU32(in, 0);
  uint32_t hlen = GetU32(in, 4);
  if (Crc32(in.substr(0, 8)) != GetU32(in, 8)) return std::nullopt;
  if (total < 16 || total > in.size() || hlen > total - 16) return std::nullopt;
  if (Crc32(in.substr(0, total - 4)) != GetU32(in, total - 4)) return std::nullopt;
  EventMessage m;
  std::string_view h = in.substr(12, hlen);
  size_t i = 0;
  while (i < h.size()) {
    size_t nlen = static_cast<uint8_t>(h[i++]);
    if (nlen == 0 || h.size() - i < nlen + 1) return std::nullopt;
    std::string name(h.substr(i, nlen));
    i += nlen;
    uint8_t type = static_cast<uint8_t>(h[i++]);
    size_t vlen = 0;
    switch (type) {
      case 0:
      case 1:
        vlen = 0;
        break;  // true, false
      case 2:
        vlen = 1;
        break;  // byte
      case 3:
        vlen = 2;
        break;  // int16
      case 4:
        vlen = 4;
        break;  // int32
      case 5:
      case 8:
        vlen = 8;
        break;  // int64, timestamp
      case 9:
        vlen = 16;
        break;  // uuid
      case 6:
      case 7:  // bytes, string: u16 length
        if (h.size() - i < 2) return std::nullopt;
        vlen =
            (static_cast<size_t>(static_cast<uint8_t>(h[i])) << 8) | static_cast<uint8_t>(h[i + 1]);
        i += 2;
        break;
      default:
        return std::nullopt;
    }
    if (h.size() - i < vlen) return std::nullopt;
    m.headers.emplace_back(std::move(name), std::string(h.substr(i, vlen)));
    i += vlen;
  }
  m.payload = std::string(in.substr(12 + hlen, total - 16 - hlen));
  *consumed = total;
  return m;
}

}  // namespace icestream::aws
