// TokenWalker: the converter's fast record walk, over simdjson's stage 1 output (the
// offsets of every structural character and scalar start) instead of its On-Demand
// iterator, for the records a schema expects: members it names, values of its types,
// nulls where it allows them. It checks the JSON grammar itself, token by token (stage 1
// has checked UTF-8, string ends and control characters), and declines everything else
// (an unknown member, an escaped key or string, a value the column does not take, bad
// JSON): the caller rolls the record back and converts it the full way
// (record_converter.cc), which writes it or says why not. A record the walker writes is
// written exactly as that way would write it (the same scalar writer, the same levels).
//
// One stage 1 pass may index many records lying back to back (JSON lines): each is
// walked from its first token. Not thread-safe; one per RecordConverter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "format/parquet/record_sink.h"
#include "schema/converter_node.h"
#include "schema/scalar_writer.h"

namespace icestream::schema {

class TokenWalker {
 public:
  // root and sink must outlive the walker. max_depth: ConverterOptions::max_record_depth.
  TokenWalker(const ConverterNode* root, format::parquet::RecordSink* sink, int max_depth);
  ~TokenWalker();
  TokenWalker(const TokenWalker&) = delete;
  TokenWalker& operator=(const TokenWalker&) = delete;

  // The most bytes Index() takes in one pass.
  static constexpr size_t kCapacity = 64 << 10;

  // Stage 1 over text[0, len) (text[len, len + kPadding) readable); the cursor is then
  // at the first token. False when len > kCapacity, or stage 1 refuses the text (invalid
  // UTF-8, an unclosed string, a control character in a string); nothing is indexed then.
  bool Index(const char* text, size_t len);

  // Moves the cursor to the first token at or after offset `pos` of the indexed text and
  // says whether one starts exactly there.
  bool SeekToken(size_t pos);

  // Walks the JSON object whose first token is at the cursor into the sink's columns.
  // true: written (not committed: the caller ends the record), and the cursor is just
  // after its last token, which lies before offset `end`, and the next token (if any) at
  // or after `end`. false: declined; entries may have been added (the caller aborts the
  // record) and the cursor is somewhere inside it. ctx->routed is set when the record has
  // the routed field.
  bool Record(size_t end, ScalarContext* ctx);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace icestream::schema
