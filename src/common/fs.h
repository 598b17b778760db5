// File-system helpers with the durability steps spelled out: every function that makes
// something durable says so. Errors are IOError statuses naming the path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace icestream::fs {

Status MakeDirs(const std::string& path);
// MakeDirs, then fsyncs the parent of every directory it created, so that the new
// directories survive a power loss (needed before files in them are made durable).
Status MakeDirsDurable(const std::string& path);
// fsyncs a directory so that entries created or removed in it are durable.
Status SyncDir(const std::string& path);
// Writes `data` to path via a temp file in the same directory: write, fsync, rename,
// fsync the directory. After success the file is durable and whole; after failure the
// old content (if any) is intact.
Status WriteFileAtomic(const std::string& path, std::string_view data);
Result<std::string> ReadFile(const std::string& path);
bool Exists(const std::string& path);
// Names (not paths) of the entries of a directory, sorted.
Result<std::vector<std::string>> ListDir(const std::string& path);
Status RemoveFile(const std::string& path);
// Removes a directory tree; a missing path is not an error.
Status RemoveAll(const std::string& path);
std::string Join(std::string_view a, std::string_view b);

// Writes all of data at `offset` (pwrite loop).
Status PWriteAll(int fd, const void* data, size_t n, uint64_t offset, const std::string& path);
// Reads up to n bytes at offset; returns the number read (short only at end of file).
Result<size_t> PReadFull(int fd, void* dst, size_t n, uint64_t offset, const std::string& path);

}  // namespace icestream::fs
