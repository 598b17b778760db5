// OutputStream: where a Parquet file goes (a local file, a memory buffer, later an
// object-store upload). Sequential writes only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace icestream::format::parquet {

// Not thread-safe. After an error the stream is unusable; Close() must still be
// called (it reports the first error) or the object destroyed.
class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual Status Write(std::string_view data) = 0;
  // Bytes written so far (the offset of the next byte).
  virtual int64_t Tell() const = 0;
  // Flushes and makes the data durable where the sink supports it.
  virtual Status Close() = 0;
};

// Appends to a caller-owned string, which must outlive the stream.
class StringOutputStream final : public OutputStream {
 public:
  explicit StringOutputStream(std::string* out) : out_(out) {}
  Status Write(std::string_view data) override {
    out_->append(data);
    return Status::OK();
  }
  int64_t Tell() const override { return static_cast<int64_t>(out_->size()); }
  Status Close() override { return Status::OK(); }

 private:
  std::string* out_;
};

// A local file, created or truncated. Close() fsyncs it. Writes are buffered.
class FileOutputStream final : public OutputStream {
 public:
  static Result<std::unique_ptr<FileOutputStream>> Open(const std::string& path);
  ~FileOutputStream() override;
  Status Write(std::string_view data) override;
  int64_t Tell() const override { return offset_; }
  Status Close() override;

 private:
  FileOutputStream(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Status FlushBuffer();
  Status WriteAll(const char* p, size_t n);

  int fd_;
  std::string path_;
  std::string buffer_;
  int64_t offset_ = 0;
};

}  // namespace icestream::format::parquet
