// `icestream convert`: JSON lines -> one Parquet file, through the same schema mapping
// and converter the table sink uses. Prints the rows written and, for every rejected
// line, its number and the reason. The input is cut into blocks of whole lines; each
// block becomes a row group (or more), converted by one of --threads threads; row
// groups are written in input order, so the file does not depend on the thread count.
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fs.h"
#include "common/lines.h"
#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "schema/json_schema.h"
#include "schema/parallel_converter.h"
#include "schema/record_converter.h"
#include "server/commands.h"

namespace icestream::server {
namespace {

namespace pq = format::parquet;

// Input per row group (at most; a row group also ends at --row-group-size). 16 MiB of
// JSON lines make row groups of ~100k-160k rows (DuckDB writes 122,880), and a thread's
// page and chunk buffers, reused from one row group to the next, stay small: with 64 MiB
// a 100 MB input was two row groups whose buffers were all fresh pages, half of the
// process's page faults (bench/convert/shapes: 3-10% less CPU per shape, files 0-2%
// larger from the extra dictionaries and chunk headers).
constexpr size_t kBlockBytes = 16 << 20;

struct ConvertArgs {
  std::string schema_path;
  std::string input_path;
  std::string output_path;
  std::string compression = "zstd";
  int compression_level = 0;
  int threads = 1;
  int64_t row_group_size = 128LL << 20;
  int64_t page_size = 1LL << 20;
  bool no_dictionary = false;
  bool quiet = false;
  bool print_metrics = false;
};

// Reads the input in blocks that end at a line boundary. Thread-safe.
class BlockReader {
 public:
  BlockReader(int fd, std::string path, size_t block_size)
      : fd_(fd), path_(std::move(path)), block_size_(block_size) {}

  ~BlockReader() {
    if (map_ != nullptr) ::munmap(const_cast<char*>(map_), map_size_);
  }

  // Maps a regular file instead of reading it (no copy into buffers); other inputs
  // (pipes) are read().
  void TryMap() {
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return;
    void* m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd_, 0);
    if (m == MAP_FAILED) return;
    ::madvise(m, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
    map_ = static_cast<const char*>(m);
    map_size_ = static_cast<size_t>(st.st_size);
  }

  struct Block {
    int64_t seq = 0;
    const char* data = nullptr;  // whole lines
    size_t size = 0;
    const char* readable_end = nullptr;  // memory up to here may be read (simdjson padding)
    std::unique_ptr<char[]> buf;         // read() mode: the lines, then zero padding
    size_t capacity = 0;
  };

  // Fills *b with the next block (reusing its buffer); false at the end of the input.
  Result<bool> Next(Block* b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (map_ != nullptr) {
      if (map_pos_ >= map_size_) return false;
      // Same cut as the read() path: after the last line end within block_size bytes
      // (or the first one after, for a longer line), so both give the same file.
      size_t end = std::min(map_size_, map_pos_ + block_size_);
      if (end < map_size_) {
        const void* last = ::memrchr(map_ + map_pos_, '\n', end - map_pos_);
        const void* nl = last ? last : std::memchr(map_ + end, '\n', map_size_ - end);
        end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - map_) + 1 : map_size_;
      }
      b->data = map_ + map_pos_;
      b->size = end - map_pos_;
      Populate(b->data, b->size);
      b->readable_end = map_ + map_size_;
      bytes_ += static_cast<int64_t>(b->size);
      map_pos_ = end;
      b->seq = seq_++;
      return true;
    }
    if (eof_ && carry_.empty()) return false;
    const size_t pad = schema::RecordConverter::kPadding;
    size_t have = carry_.size();
    Reserve(b, std::max(block_size_, have + (1 << 20)) + pad);
    std::memcpy(b->buf.get(), carry_.data(), have);
    carry_.clear();
    const char* cut = nullptr;
    while (!eof_) {
      // Fill the buffer, then cut after its last line end; grow for longer lines.
      while (have < b->capacity - pad) {
        ssize_t n = ::read(fd_, b->buf.get() + have, b->capacity - pad - have);
        if (n < 0) {
          if (errno == EINTR) continue;
          return ErrnoError("read " + path_, errno);
        }
        if (n == 0) {
          eof_ = true;
          break;
        }
        have += static_cast<size_t>(n);
        bytes_ += n;
      }
      cut = static_cast<const char*>(::memrchr(b->buf.get(), '\n', have));
      if (cut != nullptr || eof_) break;
      Reserve(b, b->capacity * 2);
    }
    size_t end = eof_ ? have : static_cast<size_t>(cut - b->buf.get()) + 1;
    carry_.assign(b->buf.get() + end, have - end);
    b->data = b->buf.get();
    b->size = end;
    std::memset(b->buf.get() + end, 0, pad);
    b->readable_end = b->data + end + pad;
    b->seq = seq_++;
    return true;
  }

  int64_t bytes() const { return bytes_; }

  // Maps the block's pages in one call: touching them one by one in the converter cost
  // a page fault per few KiB of input (the kernel's fault-around maps a few pages at a
  // time). A file not in the page cache is read here, before the converter needs it.
  static void Populate(const char* data, size_t size) {
#ifdef MADV_POPULATE_READ
    const size_t page = 4096;
    auto first = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
    auto last = reinterpret_cast<uintptr_t>(data + size);
    // Best effort (older kernels: EINVAL): the pages then fault in as they are read.
    (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_READ);
#else
    (void)data;
    (void)size;
#endif
  }

  // The block's lines are converted: drop its whole pages from this process (they stay
  // in the page cache; a neighbour's read of a shared page just faults it back in).
  void Release(const Block& b) {
    if (map_ == nullptr) return;
    const size_t page = 4096;
    auto first = (reinterpret_cast<uintptr_t>(b.data) + page - 1) & ~(page - 1);
    auto last = reinterpret_cast<uintptr_t>(b.data + b.size) & ~(page - 1);
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  }

 private:
  static void Reserve(Block* b, size_t capacity) {
    if (b->capacity >= capacity) return;
    std::unique_ptr<char[]> bigger(new char[capacity]);
    if (b->buf) std::memcpy(bigger.get(), b->buf.get(), b->capacity);
    b->buf = std::move(bigger);
    b->capacity = capacity;
  }

  std::mutex mu_;
  int fd_;
  std::string path_;
  size_t block_size_;
  std::string carry_;
  bool eof_ = false;
  const char* map_ = nullptr;
  size_t map_size_ = 0;
  size_t map_pos_ = 0;
  int64_t seq_ = 0;
  int64_t bytes_ = 0;
};

struct Counts {
  int64_t written = 0;
  int64_t rejected = 0;
};

// A block of input lines as the parallel converter's work: the lines that are not blank.
// A record's line number is only needed when it is rejected, so it is not kept per
// record (a vector of 8 bytes per record, refilled per block, cost a page fault per 512
// records): record i is line i + 1 + the blank lines before it.
struct LineBlock {
  BlockReader::Block block;
  std::vector<size_t> blank_before;  // per blank line: the index of the record after it
  int64_t lines = 0;                 // in the block, blank ones included

  int64_t LineOf(size_t record) const {
    auto blanks =
        std::upper_bound(blank_before.begin(), blank_before.end(), record) - blank_before.begin();
    return static_cast<int64_t>(record) + 1 + static_cast<int64_t>(blanks);
  }
};

// Converts the input on `threads` threads; row groups are placed in the file in input
// order, so the output is the same for any number of threads. Rejected lines are
// printed (unless quiet) with their line numbers.
Status ConvertParallel(const schema::ConvertibleSchema& schema, pq::FileWriter* writer,
                       BlockReader* reader, int threads, bool quiet, Counts* counts) {
  int64_t lines_before = 0;
  auto next = [&](schema::ConvertBlock* out) -> Result<bool> {
    auto lb = std::make_shared<LineBlock>();
    ASSIGN_OR_RETURN(bool more, reader->Next(&lb->block));
    if (!more) return false;
    out->seq = lb->block.seq;
    out->records.clear();
    ForEachLine(lb->block.data, lb->block.data + lb->block.size,
                [&](const char* begin, const char* line_end) {
                  ++lb->lines;
                  std::string_view line(begin, static_cast<size_t>(line_end - begin));
                  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
                  // A record starts with '{' (or anything but a blank): the blank test
                  // without a call per line.
                  if (line.empty() || ((line[0] == ' ' || line[0] == '\t') &&
                                       line.find_first_not_of(" \t") == std::string_view::npos)) {
                    lb->blank_before.push_back(out->records.size());
                    return;
                  }
                  out->records.push_back(line);
                });
    // simdjson reads up to kPadding bytes past a line: the following lines, the block's
    // zeroed padding, or (at the very end of a mapped file) a copy.
    out->readable_end = lb->block.readable_end;
    out->owner = lb;
    return true;
  };
  auto place = [&](schema::ConvertedBlock&& done) -> Status {
    auto* lb = static_cast<LineBlock*>(done.owner.get());
    for (auto& [key, groups] : done.row_groups) {
      for (auto& g : groups) RETURN_IF_ERROR(writer->AppendRowGroup(&g));
    }
    for (const auto& r : done.rejections) {
      if (!quiet) {
        std::cerr << "line " << lines_before + lb->LineOf(r.index) << ": "
                  << schema::RecordErrorCodeName(r.error.code) << ": " << r.error.message << "\n";
      }
    }
    reader->Release(lb->block);
    lines_before += lb->lines;
    counts->written += done.rows;
    counts->rejected += static_cast<int64_t>(done.rejections.size());
    return Status::OK();
  };
  schema::ParallelConverterOptions po;
  po.threads = threads;
  return schema::ParallelConverter::Run(schema, writer->schema(), writer->options(), po, next,
                                        place);
}

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// What the file would contribute to an Iceberg manifest entry (bounds as hex of their
// single-value serialization), as one JSON line.
std::string MetricsJson(const pq::FileMetrics& m) {
  nlohmann::json j;
  j["record_count"] = m.record_count;
  j["file_size"] = m.file_size;
  j["split_offsets"] = m.split_offsets;
  j["columns"] = nlohmann::json::array();
  for (const auto& c : m.columns) {
    nlohmann::json col;
    col["field_id"] = c.field_id;
    col["column_size"] = c.column_size;
    if (c.value_count) col["value_count"] = *c.value_count;
    if (c.null_count) col["null_count"] = *c.null_count;
    if (c.nan_count) col["nan_count"] = *c.nan_count;
    if (c.lower_bound) col["lower_bound"] = Hex(*c.lower_bound);
    if (c.upper_bound) col["upper_bound"] = Hex(*c.upper_bound);
    j["columns"].push_back(std::move(col));
  }
  return j.dump();
}

Status RunConvert(const ConvertArgs& args) {
  // The converter's buffers (pages of ~1 MiB, chunks and row groups of tens of MB) are
  // freed and allocated again for every page and row group. glibc's defaults hand those
  // back to the kernel (mmap above a threshold, trimming of the heap's top) and take
  // them again: a page fault and a zeroed page per 4 KiB each time, up to 28% of a
  // 1-thread convert in the kernel. This process only converts, so keep them: mmap
  // only above 32 MiB (glibc's largest threshold), trim only beyond 512 MiB free.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 512 << 20);
  pq::WriterOptions options;
  if (!pq::ParseCodec(args.compression, &options.codec)) {
    return InvalidArgument("unknown compression \"" + args.compression +
                           "\" (zstd, snappy, gzip, none)");
  }
  options.compression_level = args.compression_level;
  // Threads work on whole blocks (below); the writer itself stays single-threaded.
  options.threads = 1;
  options.row_group_size = args.row_group_size;
  options.page_size = args.page_size;
  options.dictionary = !args.no_dictionary;
  // A converted file is read by DuckDB, Arrow, hyparquet...: decimals may be DELTA_BYTE_ARRAY
  // (table files are not, for icebird: WriterOptions::delta_decimals).
  options.delta_decimals = true;
  ASSIGN_OR_RETURN(std::string schema_text, fs::ReadFile(args.schema_path));
  auto schema = schema::LoadConvertibleSchema(schema_text);
  if (!schema.ok()) return schema.status().WithContext(args.schema_path);
  int fd = ::open(args.input_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + args.input_path, errno);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  // The output is written once and not read back here: around the page cache
  // (FileOutputOptions::direct_io).
  pq::FileOutputOptions out_options;
  out_options.direct_io = true;
  auto out = pq::FileOutputStream::Open(args.output_path, out_options);
  if (!out.ok()) {
    ::close(fd);
    return out.status();
  }
  auto writer = pq::FileWriter::Make(schema->schema, out->get(), options);
  if (!writer.ok()) {
    ::close(fd);
    return writer.status();
  }
  BlockReader reader(fd, args.input_path, kBlockBytes);
  reader.TryMap();
  Counts counts;
  Status st = ConvertParallel(*schema, writer->get(), &reader, args.threads, args.quiet, &counts);
  ::close(fd);
  RETURN_IF_ERROR(st);
  ASSIGN_OR_RETURN(pq::FileMetrics metrics, (*writer)->Close());
  std::cout << "rows written: " << counts.written << "\n"
            << "rows rejected: " << counts.rejected << "\n"
            << "input bytes: " << reader.bytes() << "\n"
            << "output bytes: " << metrics.file_size << "\n";
  if (args.print_metrics) std::cout << MetricsJson(metrics) << "\n";
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
  cmd->add_option("--compression-level", args->compression_level, "codec level (0 = codec default)")
      ->check(CLI::Range(0, 22));
  cmd->add_option("--threads", args->threads, "threads converting blocks of input in parallel")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--row-group-size", args->row_group_size, "target uncompressed row-group bytes")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--page-size", args->page_size, "target uncompressed data-page bytes")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_flag("--no-dictionary", args->no_dictionary, "PLAIN pages only");
  cmd->add_flag("--quiet", args->quiet, "do not print rejected lines");
  cmd->add_flag("--print-metrics", args->print_metrics,
                "print the file's Iceberg metrics (counts, sizes, bounds) as JSON");
  cmd->callback([args] {
    Status st = RunConvert(*args);
    if (!st.ok()) {
      std::cerr << "convert: " << st.ToString() << "\n";
      SetExitCode(1);
    }
  });
}

}  // namespace icestream::server
