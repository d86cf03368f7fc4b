// FileEnv: the seam between strata's own files (shards, stratum indexes,
// files in transfer) and the operating system, as LevelDB's Env: opening,
// reading, writing, fsync and rename go through it (common/file_util.h's
// helpers, server/storage's shard reader and writer, server/cluster's file
// transfer). RocksDB, which holds the catalog, has an Env of its own and is
// not covered.
//
// The default is plain POSIX. For tests only, a process started with
// STRATA_FAULTS_FILE=<path> injects faults: before each operation it reads the
// file (again when it changed) and fails the operation when a line
//   <op> <errno> <text>
// has the operation's name (open, read, write, fsync, rename), and `text`
// occurs in the file's path (a rename: either path). errno is EIO or ENOSPC.
// "read" also fails opening a file for reading, as a disk that cannot read
// it would. An empty or missing file injects nothing, so a test turns faults
// on and off while the process runs.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/status.h"

namespace strata {

class FileEnv {
 public:
  virtual ~FileEnv() = default;
  // Each behaves as its POSIX call: on failure -1, with errno set.
  virtual int Open(const std::string& path, int flags, mode_t mode) = 0;
  virtual ssize_t Write(int fd, const void* data, size_t size, const std::string& path) = 0;
  virtual ssize_t PWrite(int fd, const void* data, size_t size, off_t offset, const std::string& path) = 0;
  virtual ssize_t PRead(int fd, void* out, size_t size, off_t offset, const std::string& path) = 0;
  virtual int Fsync(int fd, const std::string& path) = 0;
  // renameat2(RENAME_NOREPLACE); -1 with EINVAL where the file system cannot.
  virtual int RenameNoReplace(const std::string& from, const std::string& to) = 0;
};

// The process's FileEnv: POSIX, or the fault-injecting one when
// STRATA_FAULTS_FILE is set (read once, at the first call).
FileEnv& Env();

// fsync through Env(); IOError (or ResourceExhausted) naming `path`.
Status FsyncFd(int fd, const std::string& path);

}  // namespace strata
