// The GSR wire header: plain and zlib payloads, every malformed shape.
#include "delivery/table/gsr_frame.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "common/testing/status_assertions.h"

namespace icestream::delivery::table {
namespace {

const std::string kId("\x01\x23\x45\x67\x89\xab\xcd\xef\x10\x32\x54\x76\x98\xba\xdc\xfe", 16);

std::string Frame(unsigned char compression, std::string_view payload) {
  return std::string(1, '\x03') + std::string(1, static_cast<char>(compression)) + kId +
         std::string(payload);
}

std::string Zlib(std::string_view in) {
  uLongf n = compressBound(in.size());
  std::string out(n, '\0');
  EXPECT_EQ(compress(reinterpret_cast<Bytef*>(out.data()), &n,
                     reinterpret_cast<const Bytef*>(in.data()), in.size()),
            Z_OK);
  out.resize(n);
  return out;
}

TEST(GsrFrame, PlainPayload) {
  std::string rec = Frame(0, R"({"a":1})");
  ASSERT_TRUE(LooksGsrFramed(rec));
  ASSERT_OK_AND_ASSIGN(auto f, ParseGsrFrame(rec, 1 << 20));
  EXPECT_EQ(f.schema_version_id, "01234567-89ab-cdef-1032-547698badcfe");
  EXPECT_FALSE(f.compressed);
  EXPECT_EQ(f.payload(), R"({"a":1})");
}

TEST(GsrFrame, ZlibPayloadSurvivesAMove) {
  std::string json = R"({"k":"v"})";  // short: the inflated text sits inside the string object
  std::string rec = Frame(5, Zlib(json));
  auto f = ParseGsrFrame(rec, 1 << 20);
  ASSERT_OK(f);
  GsrFrame moved = std::move(f).value();
  EXPECT_TRUE(moved.compressed);
  EXPECT_EQ(moved.payload(), json);
}

TEST(GsrFrame, MalformedShapes) {
  EXPECT_NOT_OK(ParseGsrFrame(R"({"a":1})", 1 << 20));  // plain JSON
  EXPECT_FALSE(LooksGsrFramed(R"({"a":1})"));
  EXPECT_NOT_OK(ParseGsrFrame(std::string("\x03\x00short", 7), 1 << 20));  // header cut short
  EXPECT_NOT_OK(ParseGsrFrame(Frame(7, "{}"), 1 << 20));                   // unknown compression
  EXPECT_FALSE(LooksGsrFramed(Frame(7, "{}")));
  EXPECT_NOT_OK(ParseGsrFrame(Frame(5, "not zlib"), 1 << 20));
  std::string z = Zlib(std::string(1000, 'x'));
  EXPECT_NOT_OK(ParseGsrFrame(Frame(5, z.substr(0, z.size() / 2)), 1 << 20));  // truncated
  EXPECT_NOT_OK(ParseGsrFrame(Frame(5, z + "tail"), 1 << 20));                 // trailing bytes
  auto big = ParseGsrFrame(Frame(5, Zlib(std::string(100000, 'x'))), 1000);    // over the cap
  ASSERT_NOT_OK(big);
  EXPECT_NE(big.status().message().find("exceeds"), std::string::npos);
}

}  // namespace
}  // namespace icestream::delivery::table
