// Fuzzes the JSON record -> Parquet columns converter: the input is split into lines,
// each converted as one record against a schema with every Iceberg type and nesting
// kind; the file is then closed (page encoding, statistics, footer). Invariants checked:
// no crash or sanitizer report, a rejected record leaves the row count unchanged, and
// the file ends with the Parquet magic. Differential: the lines are converted again by
// the token walk (token_walker.h), one at a time and a window at a time (ConvertRun over
// the lines in one buffer), and by simdjson On-Demand alone; every line must get the same
// verdict and error from all three, and the three files (dictionaries off) the same bytes.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

std::string Verdict(bool ok, const schema::RecordError& e) {
  if (ok) return "ok";
  return std::string(schema::RecordErrorCodeName(e.code)) + " " + e.path + " " + e.message;
}

// The token walk, per line and per window, against On-Demand alone (see the top).
void Differential(std::string_view input) {
  // The lines in one buffer, as `icestream convert` hands them over, padded after the last.
  std::string buf(input);
  buf.append(schema::RecordConverter::kPadding, '\0');
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < input.size()) {
    size_t nl = input.find('\n', start);
    if (nl == std::string_view::npos) nl = input.size();
    lines.emplace_back(buf.data() + start, nl - start);
    start = nl + 1;
  }
  format::parquet::WriterOptions options;
  options.codec = format::parquet::Codec::kUncompressed;
  options.page_size = 256;
  options.row_group_size = 2048;
  options.dictionary = false;  // (a declined walk may leave unreferenced entries)
  std::string files[3];
  std::unique_ptr<format::parquet::StringOutputStream> sinks[3];
  std::unique_ptr<format::parquet::FileWriter> writers[3];
  std::unique_ptr<schema::RecordConverter> converters[3];
  for (int k = 0; k < 3; ++k) {
    sinks[k] = std::make_unique<format::parquet::StringOutputStream>(&files[k]);
    auto w = format::parquet::FileWriter::Make(Schema().schema, sinks[k].get(), options);
    if (!w.ok()) std::abort();
    writers[k] = std::move(*w);
    schema::ConverterOptions co;
    co.token_walk = k != 0;  // 0: On-Demand alone; 1: token walk per line; 2: per window
    auto c = schema::RecordConverter::Make(Schema(), writers[k].get(), co);
    if (!c.ok()) std::abort();
    converters[k] = std::move(*c);
  }
  schema::RecordError error;
  std::vector<std::string> want;
  for (std::string_view line : lines) {
    auto a = converters[0]->ConvertPadded(line, &error);
    if (!a.ok()) std::abort();
    want.push_back(Verdict(*a, error));
    auto b = converters[1]->ConvertPadded(line, &error);
    if (!b.ok() || Verdict(*b, error) != want.back()) std::abort();
  }
  Status st = converters[2]->ConvertRun(lines.data(), lines.size(), &error,
                                        [&](size_t i, bool ok) -> Status {
                                          if (Verdict(ok, error) != want[i]) std::abort();
                                          return Status::OK();
                                        });
  if (!st.ok()) std::abort();
  for (auto& w : writers) {
    if (!w->Close().ok()) std::abort();
  }
  if (files[1] != files[0] || files[2] != files[0]) std::abort();
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
  if (!metrics.ok() || file.size() < 12 || file.compare(file.size() - 4, 4, "PAR1") != 0)
    std::abort();
  Differential(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
