// `icestream parquet`: looks into Parquet files with the project's reader.
//   parquet cat FILE [--row-group N]      rows as JSON lines (format/parquet/json_rows.h)
//   parquet schema FILE                   the Iceberg schema read from the file, as JSON;
//                                         columns the reader cannot read on stderr
//   parquet copy IN OUT [--schema JSON]   rows copied into a new file written by the
//                                         project's writer, into the file's own schema or
//                                         an Iceberg schema (matched by field id)
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "common/fs.h"
#include "format/parquet/file_reader.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/json_rows.h"
#include "format/parquet/output_stream.h"
#include "iceberg/schema/schema_json.h"
#include "server/commands.h"

namespace icestream::server {
namespace {

namespace pq = format::parquet;

struct ParquetArgs {
  std::string path;
  std::string output_path;
  std::string schema_path;
  std::string compression = "zstd";
  int row_group = -1;
};

Status Cat(const ParquetArgs& a) {
  ASSIGN_OR_RETURN(std::string bytes, fs::ReadFile(a.path));
  ASSIGN_OR_RETURN(auto reader, pq::ParquetFileReader::Open(bytes));
  for (const auto& s : reader->schema().skipped())
    std::cerr << "parquet cat: not shown: " << s << "\n";
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    if (a.row_group >= 0 && g != a.row_group) continue;
    std::string out;
    RETURN_IF_ERROR(pq::AppendJsonRows(*reader, g, &out));
    std::cout << out;
  }
  std::cout.flush();
  return Status::OK();
}

Status Schema(const ParquetArgs& a) {
  ASSIGN_OR_RETURN(std::string bytes, fs::ReadFile(a.path));
  ASSIGN_OR_RETURN(auto reader, pq::ParquetFileReader::Open(bytes));
  for (const auto& s : reader->schema().skipped())
    std::cerr << "parquet schema: not readable: " << s << "\n";
  std::cout << iceberg::SchemaToJson(reader->schema().iceberg_schema()) << "\n";
  return Status::OK();
}

Status Copy(const ParquetArgs& a) {
  ASSIGN_OR_RETURN(std::string bytes, fs::ReadFile(a.path));
  ASSIGN_OR_RETURN(auto reader, pq::ParquetFileReader::Open(bytes));
  iceberg::Schema schema = reader->schema().iceberg_schema();
  if (!a.schema_path.empty()) {
    ASSIGN_OR_RETURN(std::string text, fs::ReadFile(a.schema_path));
    ASSIGN_OR_RETURN(schema, iceberg::SchemaFromJson(text));
  }
  pq::WriterOptions options;
  if (!pq::ParseCodec(a.compression, &options.codec))
    return InvalidArgument("unknown codec " + a.compression);
  ASSIGN_OR_RETURN(auto out, pq::FileOutputStream::Open(a.output_path));
  ASSIGN_OR_RETURN(auto writer, pq::FileWriter::Make(schema, out.get(), options));
  RETURN_IF_ERROR(reader->CopyRows(writer.get()));
  ASSIGN_OR_RETURN(pq::FileMetrics m, writer->Close());
  std::cout << m.record_count << " rows\n";
  return Status::OK();
}

}  // namespace

void AddParquetCommand(CLI::App* app) {
  auto args = std::make_shared<ParquetArgs>();
  auto* cmd = app->add_subcommand("parquet", "Read Parquet files: cat, schema, copy");
  cmd->require_subcommand(1);
  auto* cat = cmd->add_subcommand("cat", "Print the rows of a Parquet file as JSON lines");
  cat->add_option("file", args->path, "Parquet file")->required();
  cat->add_option("--row-group", args->row_group, "only this row group (0-based)");
  auto* schema = cmd->add_subcommand("schema", "Print the Iceberg schema read from a Parquet file");
  schema->add_option("file", args->path, "Parquet file")->required();
  auto* copy = cmd->add_subcommand(
      "copy", "Copy the rows of a Parquet file into a new one (icestream's writer)");
  copy->add_option("input", args->path, "Parquet file to read")->required();
  copy->add_option("output", args->output_path, "Parquet file to write")->required();
  copy->add_option("--schema", args->schema_path,
                   "Iceberg schema JSON of the output (default: the input's)");
  copy->add_option("--compression", args->compression, "zstd, snappy, gzip or none")
      ->capture_default_str();
  auto run = [args](const char* name, Status (*fn)(const ParquetArgs&)) {
    return [args, name, fn] {
      Status st = fn(*args);
      if (!st.ok()) {
        std::cerr << "parquet " << name << ": " << st.ToString() << "\n";
        SetExitCode(1);
      }
    };
  };
  cat->callback(run("cat", Cat));
  schema->callback(run("schema", Schema));
  copy->callback(run("copy", Copy));
}

}  // namespace icestream::server
