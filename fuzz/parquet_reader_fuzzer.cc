// Fuzzes the Parquet reader: footer and page-header parsing (thrift compact), the
// schema walk, page decoding (levels, PLAIN, dictionaries, delta encodings,
// BYTE_STREAM_SPLIT, codecs), record assembly and row copying. Seeds are files from our
// own writer (and a few from DuckDB for the v2 encodings).
// Invariants: no crash, no allocation beyond the read budget; a file whose rows all
// read is copied through the writer, and the copy reads back to the same rows.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "format/parquet/file_reader.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/json_rows.h"
#include "format/parquet/output_stream.h"

using namespace icestream;
namespace pq = icestream::format::parquet;

namespace {

bool ReadAll(std::string_view file, std::string* json) {
  pq::ReaderOptions o;
  o.max_row_group_bytes = 32 << 20;
  auto r = pq::ParquetFileReader::Open(file, o);
  if (!r.ok()) return false;
  for (int g = 0; g < (*r)->num_row_groups(); ++g) {
    if (!pq::AppendJsonRows(**r, g, json).ok()) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string json;
  const bool readable = ReadAll(in, &json);

  pq::ReaderOptions o;
  o.max_row_group_bytes = 32 << 20;
  auto r = pq::ParquetFileReader::Open(in, o);
  if (!r.ok() || (*r)->schema().parquet_schema() == nullptr) return 0;
  std::string copy;
  pq::StringOutputStream out(&copy);
  pq::WriterOptions wo;
  wo.codec = pq::Codec::kUncompressed;
  auto w = pq::FileWriter::Make((*r)->schema().iceberg_schema(), &out, wo);
  if (!w.ok()) std::abort();  // the derived schema is always writable
  if (!(*r)->CopyRows(w->get()).ok()) return 0;
  if (!(*w)->Close().ok()) std::abort();
  if (readable) {
    std::string again;
    if (!ReadAll(copy, &again) || again != json) std::abort();
  }
  return 0;
}
