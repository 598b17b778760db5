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
// What O_DIRECT wants aligned (buffer address, length, file offset): the device's logical
// block size; 4096 covers every block size up to a page.
constexpr size_t kDirectAlign = 4096;
// Writes all of data from offset 0 of fd, a regular file just created for writing, around
// the page cache where the file system allows: whole 4096-byte blocks go with O_DIRECT
// (through a bounce buffer mapped for the write when data is not aligned), the unaligned tail, and
// everything where O_DIRECT is refused (EINVAL: tmpfs on older kernels, some FUSE file
// systems), through it. For large files nothing reads back soon: the kernel's page
// allocation and copy of a buffered write cost more than the write itself (an 18 MB data
// file, written and fsynced on this project's ext4 machines: 40-90 ms buffered, 10-20 ms
// direct, with almost no system time). fd's flags are as before on return; the caller
// still fsyncs (the tail and the file's size).
Status WriteAllDirect(int fd, std::string_view data, const std::string& path);
// Reads up to n bytes at offset; returns the number read (short only at end of file).
Result<size_t> PReadFull(int fd, void* dst, size_t n, uint64_t offset, const std::string& path);

}  // namespace icestream::fs
