// Base64 (RFC 4648 standard alphabet, with padding), as AWS JSON 1.1 uses for blobs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace icestream::base64 {

size_t EncodedSize(size_t n);
// Appends the encoding of data[0, n) to *out.
void EncodeAppend(const void* data, size_t n, std::string* out);
// Writes exactly EncodedSize(n) bytes to dst.
void EncodeTo(const void* data, size_t n, char* dst);
std::string Encode(std::string_view data);

// Upper bound of the decoded size; exact once padding is known (DecodedSize).
// Returns nullopt when the length is not a multiple of 4.
std::optional<size_t> DecodedSize(std::string_view text);
// Decodes into dst (DecodedSize bytes). Returns false on a bad character, misplaced
// padding, a length that is not a multiple of 4, or a non-canonical last group (bits
// below the last byte not zero); dst content is then unspecified.
bool DecodeTo(std::string_view text, uint8_t* dst);
std::optional<std::string> Decode(std::string_view text);

// Why `text` does not decode, in the words of AWS's JSON framework (SerializationException
// messages recorded against AWS), e.g. "Invalid Base64 character: '='". Empty when it
// decodes.
std::string DecodeError(std::string_view text);

// Same, for the URL-safe alphabet without padding (opaque tokens).
std::string EncodeUrl(std::string_view data);
std::optional<std::string> DecodeUrl(std::string_view text);

}  // namespace icestream::base64
