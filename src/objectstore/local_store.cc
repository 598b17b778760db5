// Local-folder object store.
#include "objectstore/local_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "aws/arn.h"
#include "common/crypto.h"
#include "common/fs.h"

namespace icestream::objectstore {

Result<std::string> BucketFromArn(std::string_view s) {
  std::string from_arn;
  if (s.starts_with("arn:")) {
    // arn:<partition>:s3:::<bucket>: an S3 bucket ARN has no region or account.
    auto arn = aws::ParseArn(s);
    if (!arn || !arn->Is("s3", "") || !arn->region.empty() || !arn->account.empty()) {
      return InvalidArgument("not an S3 bucket ARN: " + std::string(s));
    }
    from_arn = arn->resource;
    s = from_arn;
  }
  if (s.empty() || s.size() > 63 || s.find('/') != std::string_view::npos) {
    return InvalidArgument("not an S3 bucket name or ARN: " + std::string(s));
  }
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return InvalidArgument("invalid character in bucket name: " + std::string(s));
  }
  return std::string(s);
}

Result<std::string> LocalObjectStore::PathFor(const std::string& bucket,
                                              const std::string& key) const {
  if (bucket.empty() || bucket == "." || bucket == ".." || bucket.find('/') != std::string::npos) {
    return InvalidArgument("invalid bucket name: " + bucket);
  }
  if (key.empty() || key.front() == '/') return InvalidArgument("invalid object key: " + key);
  size_t start = 0;
  while (start <= key.size()) {
    size_t slash = key.find('/', start);
    std::string_view seg(key.data() + start,
                         (slash == std::string::npos ? key.size() : slash) - start);
    if (seg == "." || seg == ".." || (seg.empty() && slash != std::string::npos)) {
      return InvalidArgument("object key has an empty, '.' or '..' segment: " + key);
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return fs::Join(fs::Join(root_, bucket), key);
}

Status LocalObjectStore::Put(const std::string& bucket, const std::string& key,
                             std::string_view data, const PutOptions& options) {
  ASSIGN_OR_RETURN(std::string path, PathFor(bucket, key));
  std::string dir = std::filesystem::path(path).parent_path().string();
  RETURN_IF_ERROR(fs::MakeDirsDurable(dir));
  if (options.if_none_match && fs::Exists(path)) {
    return Conflict("object already exists: " + bucket + "/" + key);
  }
  // A unique temporary name: concurrent writers of one key each rename a whole file.
  static std::atomic<uint64_t> counter{0};
  std::string tmp =
      path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create " + tmp, errno);
  // Data files (megabytes, read back by queries and compaction later, if at all) go around
  // the page cache; metadata and manifests, read back at once, through it.
  Status st = data.size() >= kDirectWriteMinBytes
                  ? fs::WriteAllDirect(fd, data, tmp)
                  : fs::PWriteAll(fd, data.data(), data.size(), 0, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = ErrnoError("fsync " + tmp, errno);
  ::close(fd);
  if (st.ok() && options.if_none_match) {
    // link() fails if the target exists: an atomic "create if absent".
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      if (err == EEXIST) return Conflict("object already exists: " + bucket + "/" + key);
      return ErrnoError("link " + path, err);
    }
    ::unlink(tmp.c_str());
  } else if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = ErrnoError("rename " + tmp, errno);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return fs::SyncDir(dir);
}

Result<std::string> LocalObjectStore::Get(const std::string& bucket, const std::string& key,
                                          const ReadOptions&) {
  ASSIGN_OR_RETURN(std::string path, PathFor(bucket, key));
  auto r = fs::ReadFile(path);
  if (!r.ok() && r.status().code() == StatusCode::kNotFound) {
    return NotFound("no such object: " + bucket + "/" + key);
  }
  return r;
}

Result<std::string> LocalObjectStore::GetRange(const std::string& bucket, const std::string& key,
                                               uint64_t offset, uint64_t length,
                                               const ReadOptions&) {
  ASSIGN_OR_RETURN(std::string path, PathFor(bucket, key));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("no such object: " + bucket + "/" + key);
    return ErrnoError("open " + path, errno);
  }
  std::string out(static_cast<size_t>(length), '\0');
  auto got = fs::PReadFull(fd, out.data(), out.size(), offset, path);
  ::close(fd);
  if (!got.ok()) return got.status();
  out.resize(*got);
  return out;
}

Result<ObjectInfo> LocalObjectStore::Head(const std::string& bucket, const std::string& key,
                                          const ReadOptions&) {
  ASSIGN_OR_RETURN(std::string path, PathFor(bucket, key));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound("no such object: " + bucket + "/" + key);
  }
  ObjectInfo info;
  info.key = key;
  info.size = static_cast<uint64_t>(st.st_size);
  info.last_modified_ms =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  return info;
}

namespace {

// Whether `name` is the temporary file of a Put by a process that no longer runs
// ("<key>.tmp-<pid>-<n>", the pid not this process's and gone): it can never be renamed
// into place.
bool DeadWritersTemporary(const std::string& name) {
  size_t at = name.rfind(".tmp-");
  if (at == std::string::npos) return false;
  const char* p = name.c_str() + at + 5;
  char* end = nullptr;
  errno = 0;
  long pid = std::strtol(p, &end, 10);
  if (errno != 0 || end == p || *end != '-' || pid <= 0 || pid == ::getpid()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

Result<std::vector<ObjectInfo>> LocalObjectStore::List(const std::string& bucket,
                                                       const std::string& prefix,
                                                       const ReadOptions&) {
  std::string broot = fs::Join(root_, bucket);
  std::vector<ObjectInfo> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(broot, ec)) return NotFound("no such bucket: " + bucket);
  for (auto it = std::filesystem::recursive_directory_iterator(broot, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    std::string rel = std::filesystem::relative(it->path(), broot, ec).string();
    if (rel.find(".tmp-") != std::string::npos) {
      // An unfinished Put: not an object. One of a process that died mid-Put (a crash)
      // is removed, as nothing else would ever remove it.
      if (DeadWritersTemporary(it->path().filename().string())) {
        std::error_code rm;
        std::filesystem::remove(it->path(), rm);
      }
      continue;
    }
    if (rel.rfind(prefix, 0) != 0) continue;
    ObjectInfo info;
    info.key = rel;
    info.size = static_cast<uint64_t>(it->file_size(ec));
    auto mtime = std::filesystem::last_write_time(it->path(), ec);
    info.last_modified_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::file_clock::to_sys(mtime).time_since_epoch())
                                .count();
    out.push_back(std::move(info));
  }
  if (ec) return IOError("list " + broot + ": " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Status LocalObjectStore::Delete(const std::string& bucket, const std::string& key,
                                const ReadOptions&) {
  ASSIGN_OR_RETURN(std::string path, PathFor(bucket, key));
  return fs::RemoveFile(path);
}

Status LocalObjectStore::CheckBucket(const std::string& bucket, const ReadOptions&) {
  if (bucket.empty() || bucket.find('/') != std::string::npos || bucket == "." || bucket == "..") {
    return InvalidArgument("invalid bucket name: " + bucket);
  }
  return fs::MakeDirs(fs::Join(root_, bucket));
}

std::string LocalObjectStore::Uri(const std::string& bucket, const std::string& key) const {
  std::string abs = std::filesystem::absolute(fs::Join(fs::Join(root_, bucket), key)).string();
  return "file://" + abs;
}

}  // namespace icestream::objectstore
