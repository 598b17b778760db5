// Shard folder listing (see shard_dir.h).
#include "log/shard_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/fs.h"
#include "log/format.h"

namespace icestream::log {

namespace {

// <20 digits><suffix>, the base offset in *base.
bool NumberedName(const std::string& name, std::string_view suffix, uint64_t* base) {
  if (name.size() != 20 + suffix.size() || !name.ends_with(suffix)) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *base = v;
  return true;
}

}  // namespace

Result<ShardDirListing> ListShardDir(const std::string& dir) {
  ASSIGN_OR_RETURN(auto names, fs::ListDir(dir));
  ShardDirListing out;
  for (const auto& n : names) {
    uint64_t base = 0;
    if (n.ends_with(".tmp")) {
      out.temporary.push_back(n);
    } else if (NumberedName(n, ".idx", &base)) {
      // An index: rebuilt when it does not match its segment.
    } else if (NumberedName(n, ".log", &base)) {
      std::string path = fs::Join(dir, n);
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return ErrnoError("open segment " + path, errno);
      std::string header(kSegmentHeaderSize, '\0');
      auto got = fs::PReadFull(fd, header.data(), header.size(), 0, path);
      ::close(fd);
      if (!got.ok()) return got.status();
      header.resize(*got);
      auto decoded = DecodeSegmentHeader(header);
      if (decoded.ok() && *decoded != base) {
        out.strays.emplace_back(n, "its header says it starts at offset " +
                                       std::to_string(*decoded) +
                                       ", not at the offset its name gives (a copy or a renamed "
                                       "file)");
      } else {
        out.segments.push_back(base);
      }
    } else {
      out.strays.emplace_back(n, "not a segment, index or temporary file of a shard log");
    }
  }
  std::sort(out.segments.begin(), out.segments.end());
  std::sort(out.strays.begin(), out.strays.end());
  return out;
}

}  // namespace icestream::log
