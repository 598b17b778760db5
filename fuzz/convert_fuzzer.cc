// Fuzzes the JSON record -> Parquet columns converter: the input is split into lines,
// each converted as one record against a schema with every Iceberg type and nesting
// kind; the file is then closed (page encoding, statistics, footer). Invariants checked:
// no crash or sanitizer report, a rejected record leaves the row count unchanged, and
// the file ends with the Parquet magic.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "schema/json_schema.h"
#include "schema/record_converter.h"

namespace {

using namespace icestream;

constexpr const char* kSchema = R"j({"type":"struct","schema-id":0,"fields":[
  {"id":1,"name":"b","required":false,"type":"boolean"},
  {"id":2,"name":"i","required":false,"type":"int"},
  {"id":3,"name":"l","required":true,"type":"long"},
  {"id":4,"name":"f","required":false,"type":"float"},
  {"id":5,"name":"d","required":false,"type":"double"},
  {"id":6,"name":"dec","required":false,"type":"decimal(9,2)"},
  {"id":7,"name":"big","required":false,"type":"decimal(38,5)"},
  {"id":8,"name":"date","required":false,"type":"date"},
  {"id":9,"name":"time","required":false,"type":"time"},
  {"id":10,"name":"ts","required":false,"type":"timestamp"},
  {"id":11,"name":"tz","required":false,"type":"timestamptz"},
  {"id":12,"name":"s","required":false,"type":"string"},
  {"id":13,"name":"u","required":false,"type":"uuid"},
  {"id":14,"name":"fx","required":false,"type":"fixed[4]"},
  {"id":15,"name":"bin","required":false,"type":"binary"},
  {"id":16,"name":"st","required":false,"type":{"type":"struct","fields":[
    {"id":17,"name":"x","required":true,"type":"int"},
    {"id":18,"name":"tags","required":false,"type":{"type":"list","element-id":19,
      "element-required":false,"element":"string"}}]}},
  {"id":20,"name":"m","required":false,"type":{"type":"map","key-id":21,"key":"string",
    "value-id":22,"value-required":false,"value":{"type":"list","element-id":23,
    "element-required":true,"element":{"type":"struct","fields":[
      {"id":24,"name":"q","required":false,"type":"double"}]}}}}
]})j";

const schema::ConvertibleSchema& Schema() {
  static const schema::ConvertibleSchema* s = [] {
    auto r = schema::LoadConvertibleSchema(kSchema);
    if (!r.ok()) std::abort();
    return new schema::ConvertibleSchema(std::move(*r));
  }();
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string file;
  format::parquet::StringOutputStream sink(&file);
  format::parquet::WriterOptions options;
  options.codec = format::parquet::Codec::kSnappy;
  options.page_size = 256;  // many pages and row groups from small inputs
  options.row_group_size = 2048;
  auto writer = format::parquet::FileWriter::Make(Schema().schema, &sink, options);
  if (!writer.ok()) std::abort();
  auto converter = schema::RecordConverter::Make(Schema(), writer->get());
  if (!converter.ok()) std::abort();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  schema::RecordError error;
  while (!input.empty()) {
    size_t nl = input.find('\n');
    std::string_view line = input.substr(0, nl);
    input = nl == std::string_view::npos ? std::string_view() : input.substr(nl + 1);
    int64_t before = (*writer)->num_rows();
    auto ok = (*converter)->Convert(line, &error);
    if (!ok.ok()) std::abort();  // the string sink never fails
    if ((*writer)->num_rows() != before + (*ok ? 1 : 0)) std::abort();
  }
  auto metrics = (*writer)->Close();
  if (!metrics.ok() || file.size() < 12 || file.compare(file.size() - 4, 4, "PAR1") != 0) std::abort();
  return 0;
}
