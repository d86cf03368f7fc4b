// Small POSIX helpers for files that are written once and published with a
// rename: a temporary name beside the final path, rename-without-replace, and
// the directory fsync that makes a rename durable.
//
// Thread-safety: the functions are safe to call concurrently.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

// "dir/" of "dir/name"; "./" of a bare name.
std::string DirOf(const std::string& path);

// A random 16-hex-digit suffix for temporary file names.
std::string RandomSuffix();

// fsyncs a directory so that a rename inside it survives a crash.
Status SyncDir(const std::string& dir);

// Moves `from` to `to`, failing with AlreadyExists rather than replacing `to`.
Status RenameNoReplace(const std::string& from, const std::string& to);

// Writes all of `bytes` at the file position of `fd` (retrying short writes and
// EINTR). IOError naming `path` on failure.
Status WriteAllFd(int fd, std::string_view bytes, const std::string& path);

// Writes all of `bytes` at `offset` of `fd` (pwrite, retrying short writes).
Status PWriteAllFd(int fd, std::string_view bytes, uint64_t offset, const std::string& path);

// Reads up to `size` bytes at `offset` of `fd` into `out` (pread, retrying
// short reads and EINTR): fewer only where the file ends. IOError naming `path`.
Result<size_t> PReadFd(int fd, char* out, size_t size, uint64_t offset, const std::string& path);

// Reads exactly `size` bytes at `offset` (PReadFd); IOError naming `path` if
// the file ends first.
Status PReadExactFd(int fd, char* out, size_t size, uint64_t offset, const std::string& path);

}  // namespace strata
