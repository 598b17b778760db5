// `icestream convert`: JSON lines -> one Parquet file, through the same schema mapping
// and converter the table sink uses. Prints the rows written and, for every rejected
// line, its number and the reason.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "common/fs.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "schema/json_schema.h"
#include "schema/record_converter.h"
#include "server/commands.h"

namespace icestream::server {
namespace {

namespace pq = format::parquet;

struct ConvertArgs {
  std::string schema_path;
  std::string input_path;
  std::string output_path;
  std::string compression = "zstd";
  int threads = 1;
  int64_t row_group_size = 128LL << 20;
  int64_t page_size = 1LL << 20;
  bool no_dictionary = false;
  bool quiet = false;
};

struct Counts {
  int64_t written = 0;
  int64_t rejected = 0;
  int64_t bytes = 0;
};

// Feeds every line of the file to the converter without copying: lines are converted
// in place in a read buffer that keeps simdjson's padding after its data.
Status ConvertLines(int fd, const std::string& path, schema::RecordConverter* converter, bool quiet,
                    Counts* counts) {
  constexpr size_t kBlock = 8 << 20;
  std::string buf(kBlock + schema::RecordConverter::kPadding, '\0');
  size_t have = 0;  // bytes of buf holding unread data
  int64_t line_no = 0;
  bool eof = false;
  schema::RecordError error;
  while (!eof || have > 0) {
    if (!eof) {
      if (have == buf.size() - schema::RecordConverter::kPadding) {
        // A line longer than the buffer: grow it.
        buf.resize(buf.size() * 2);
      }
      ssize_t n = ::read(fd, buf.data() + have, buf.size() - schema::RecordConverter::kPadding - have);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoError("read " + path, errno);
      }
      if (n == 0) eof = true;
      have += static_cast<size_t>(n);
      counts->bytes += n;
    }
    size_t pos = 0;
    while (pos < have) {
      const char* start = buf.data() + pos;
      const void* nl = std::memchr(start, '\n', have - pos);
      if (nl == nullptr && !eof) break;  // incomplete line: read more first
      size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - start) : have - pos;
      pos += len + (nl ? 1 : 0);
      ++line_no;
      std::string_view line(start, len);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank line
      // The bytes after the line (the rest of the buffer, or its zeroed padding) are
      // readable, which is all simdjson needs.
      ASSIGN_OR_RETURN(bool ok, converter->ConvertPadded(line, &error));
      if (ok) {
        ++counts->written;
      } else {
        ++counts->rejected;
        if (!quiet) {
          std::cerr << "line " << line_no << ": " << schema::RecordErrorCodeName(error.code) << ": "
                    << error.message << "\n";
        }
      }
    }
    std::memmove(buf.data(), buf.data() + pos, have - pos);
    have -= pos;
    std::memset(buf.data() + have, 0, schema::RecordConverter::kPadding);
    if (eof && have == 0) break;
  }
  return Status::OK();
}

Status RunConvert(const ConvertArgs& args) {
  pq::WriterOptions options;
  if (!pq::ParseCodec(args.compression, &options.codec)) {
    return InvalidArgument("unknown compression \"" + args.compression + "\" (zstd, snappy, gzip, none)");
  }
  options.threads = args.threads;
  options.row_group_size = args.row_group_size;
  options.page_size = args.page_size;
  options.dictionary = !args.no_dictionary;
  ASSIGN_OR_RETURN(std::string schema_text, fs::ReadFile(args.schema_path));
  auto schema = schema::LoadConvertibleSchema(schema_text);
  if (!schema.ok()) return schema.status().WithContext(args.schema_path);
  int fd = ::open(args.input_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + args.input_path, errno);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  auto out = pq::FileOutputStream::Open(args.output_path);
  if (!out.ok()) {
    ::close(fd);
    return out.status();
  }
  auto writer = pq::FileWriter::Make(schema->schema, out->get(), options);
  if (!writer.ok()) {
    ::close(fd);
    return writer.status();
  }
  auto converter = schema::RecordConverter::Make(*schema, writer->get());
  if (!converter.ok()) {
    ::close(fd);
    return converter.status();
  }
  Counts counts;
  Status st = ConvertLines(fd, args.input_path, converter->get(), args.quiet, &counts);
  ::close(fd);
  RETURN_IF_ERROR(st);
  ASSIGN_OR_RETURN(pq::FileMetrics metrics, (*writer)->Close());
  std::cout << "rows written: " << counts.written << "\n"
            << "rows rejected: " << counts.rejected << "\n"
            << "input bytes: " << counts.bytes << "\n"
            << "output bytes: " << metrics.file_size << "\n";
  return Status::OK();
}

}  // namespace

void AddConvertCommand(CLI::App* app) {
  auto args = std::make_shared<ConvertArgs>();
  auto* cmd = app->add_subcommand("convert", "Convert JSON lines to Parquet with a schema");
  cmd->add_option("--schema", args->schema_path, "JSON Schema (draft 4/7) or Iceberg schema JSON")
      ->required();
  cmd->add_option("--input", args->input_path, "JSON lines, one record per line")->required();
  cmd->add_option("--output", args->output_path, "Parquet file to write")->required();
  cmd->add_option("--compression", args->compression, "zstd, snappy, gzip or none")
      ->capture_default_str();
  cmd->add_option("--threads", args->threads, "1, or 2 to compress pages on a second thread")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  cmd->add_option("--row-group-size", args->row_group_size, "target uncompressed row-group bytes")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--page-size", args->page_size, "target uncompressed data-page bytes")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_flag("--no-dictionary", args->no_dictionary, "PLAIN pages only");
  cmd->add_flag("--quiet", args->quiet, "do not print rejected lines");
  cmd->callback([args] {
    Status st = RunConvert(*args);
    if (!st.ok()) {
      std::cerr << "convert: " << st.ToString() << "\n";
      SetExitCode(1);
    }
  });
}

}  // namespace icestream::server
