// OpenSSL-backed digests and randomness.
#include "common/crypto.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/md5.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace icestream::crypto {

Md5Digest Md5(std::string_view data) {
  // One per record on the ingest path: the algorithm is fetched once (EVP_md5() would
  // look it up in the provider store, under a lock, on every call) and each thread
  // reuses its digest context.
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "MD5", nullptr);
  struct CtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  thread_local std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  Md5Digest d;
  unsigned int len = 0;
  if (md == nullptr || !ctx || EVP_DigestInit_ex2(ctx.get(), md, nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), d.data(), &len) != 1) {
    // Only without the default provider (a broken OpenSSL install); nothing can route.
    std::abort();
  }
  return d;
}

Sha256Digest Sha256(std::string_view data) {
  Sha256Digest d;
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), d.data());
  return d;
}

Sha256Digest HmacSha256(std::string_view key, std::string_view data) {
  Sha256Digest d;
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), d.data(), &len);
  return d;
}

std::string Hex(const uint8_t* data, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 15];
  }
  return out;
}

void RandomBytes(void* dst, size_t n) {
  if (RAND_bytes(static_cast<unsigned char*>(dst), static_cast<int>(n)) != 1) {
    // OpenSSL's CSPRNG only fails when the OS gives it no entropy at all; nothing
    // sensible can continue then.
    std::abort();
  }
}

uint64_t RandomU64() {
  uint64_t v;
  RandomBytes(&v, sizeof v);
  return v;
}

std::string RandomUuid() {
  uint8_t b[16];
  RandomBytes(b, 16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  std::string h = Hex(b, 16);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

}  // namespace icestream::crypto
