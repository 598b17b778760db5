// Little-endian fixed-width encoding helpers for on-disk formats.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace icestream {

inline void PutFixed16(char* dst, uint16_t v) { std::memcpy(dst, &v, 2); }
inline void PutFixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, 4); }
inline void PutFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }
inline uint16_t GetFixed16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t GetFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t GetFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void AppendFixed32(std::string* s, uint32_t v) {
  char b[4];
  PutFixed32(b, v);
  s->append(b, 4);
}
inline void AppendFixed64(std::string* s, uint64_t v) {
  char b[8];
  PutFixed64(b, v);
  s->append(b, 8);
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "on-disk formats assume little endian");

}  // namespace icestream
