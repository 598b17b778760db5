// POSIX implementations of the file-system helpers.
#include "common/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

namespace icestream::fs {

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return IOError("create directory " + path + ": " + ec.message());
  return Status::OK();
}

Status MakeDirsDurable(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path);
  std::vector<std::filesystem::path> missing;
  for (auto q = p; !q.empty() && !Exists(q.string()); q = q.parent_path()) {
    missing.push_back(q);
    if (q == q.parent_path()) break;
  }
  RETURN_IF_ERROR(MakeDirs(path));
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    RETURN_IF_ERROR(SyncDir(it->parent_path().string()));
  }
  return Status::OK();
}

Status SyncDir(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open dir " + path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError("fsync dir " + path, err);
  return Status::OK();
}

Status PWriteAll(int fd, const void* data, size_t n, uint64_t offset, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write " + path, errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::OK();
}

Status WriteAllDirect(int fd, std::string_view data, const std::string& path) {
  uint64_t offset = 0;
#ifdef O_DIRECT
  constexpr size_t kAlign = kDirectAlign;
  constexpr size_t kChunk = 1 << 20;
  const uint64_t whole = data.size() & ~uint64_t{kAlign - 1};
  struct stat st {};
  const int flags = whole > 0 ? ::fcntl(fd, F_GETFL) : -1;
  if (flags >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0) {
    // The bounce buffer is mapped for this write and unmapped after it (a page fault per
    // 4 KiB of it, a 256th of the file's pages at most): kept in a thread's heap it added
    // tens of MiB to a delivering server's peak RSS (bench/table-delivery --only memory).
    struct Unmap {
      void operator()(char* p) const {
        if (p != nullptr) ::munmap(p, kChunk);
      }
    };
    std::unique_ptr<char, Unmap> bounce;
    if (reinterpret_cast<uintptr_t>(data.data()) % kAlign != 0) {
      void* m = ::mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m != MAP_FAILED) bounce.reset(static_cast<char*>(m));
    }
    bool direct = true;
    while (direct && offset < whole) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, whole - offset));
      const char* p = data.data() + offset;
      if (reinterpret_cast<uintptr_t>(p) % kAlign != 0) {
        if (bounce == nullptr) break;
        std::memcpy(bounce.get(), p, n);
        p = bounce.get();
      }
      ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EINVAL) break;  // no direct write here: the rest goes buffered
        int err = errno;
        (void)::fcntl(fd, F_SETFL, flags);
        return ErrnoError("write " + path, err);
      }
      // A short write leaves the offset unaligned; the next direct write is refused
      // (EINVAL) and the rest goes buffered.
      offset += static_cast<uint64_t>(w);
    }
    if (::fcntl(fd, F_SETFL, flags) != 0) return ErrnoError("fcntl " + path, errno);
  }
#endif
  return PWriteAll(fd, data.data() + offset, data.size() - offset, offset, path);
}

Result<size_t> PReadFull(int fd, void* dst, size_t n, uint64_t offset, const std::string& path) {
  char* p = static_cast<char*>(dst);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("read " + path, errno);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

Status WriteFileAtomic(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create " + tmp, errno);
  Status st = PWriteAll(fd, data.data(), data.size(), 0, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = ErrnoError("fsync " + tmp, errno);
  ::close(fd);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoError("rename " + tmp, errno);
  std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDir(dir.empty() ? "." : dir);
}

Result<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("no such file: " + path);
    return ErrnoError("open " + path, errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("stat " + path, err);
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  auto got = PReadFull(fd, out.data(), out.size(), 0, path);
  ::close(fd);
  if (!got.ok()) return got.status();
  out.resize(*got);
  return out;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

Result<std::vector<std::string>> ListDir(const std::string& path) {
  DIR* d = ::opendir(path.c_str());
  if (!d) {
    if (errno == ENOENT) return NotFound("no such directory: " + path);
    return ErrnoError("opendir " + path, errno);
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError("unlink " + path, errno);
  return Status::OK();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return IOError("remove " + path + ": " + ec.message());
  return Status::OK();
}

std::string Join(std::string_view a, std::string_view b) {
  std::string out(a);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(b);
  return out;
}

}  // namespace icestream::fs
