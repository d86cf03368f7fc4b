#include "common/file_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdint>
#include <random>

#include "common/file_env.h"
#include "common/unique_fd.h"

namespace strata {

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "./" : path.substr(0, slash + 1);
}

std::string RandomSuffix() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  uint64_t bits = rng();
  for (char& c : s) {
    c = kHex[bits & 15];
    bits >>= 4;
  }
  return s;
}

Status SyncDir(const std::string& dir) {
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open directory " + dir, errno);
  if (Env().Fsync(fd.get(), dir) != 0) return ErrnoStatus("fsync directory " + dir, errno);
  return Status::OK();
}

Status RenameNoReplace(const std::string& from, const std::string& to) {
  if (Env().RenameNoReplace(from, to) == 0) return Status::OK();
  if (errno == EEXIST) return Status::AlreadyExists(to + " already exists");
  if (errno != EINVAL && errno != ENOSYS) return ErrnoStatus("rename " + from + " to " + to, errno);
  // The file system cannot rename without replacing; link() never replaces either.
  if (link(from.c_str(), to.c_str()) != 0) {
    if (errno == EEXIST) return Status::AlreadyExists(to + " already exists");
    return ErrnoStatus("link " + from + " to " + to, errno);
  }
  if (unlink(from.c_str()) != 0) {
    Status status = ErrnoStatus("unlink " + from, errno);
    unlink(to.c_str());  // the link we just made; nothing else can be there
    return status;
  }
  return Status::OK();
}

Status WriteAllFd(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = Env().Write(fd, bytes.data(), bytes.size(), path);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write " + path, errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

Status PWriteAllFd(int fd, std::string_view bytes, uint64_t offset, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = Env().PWrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset), path);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write " + path, errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::OK();
}

Result<size_t> PReadFd(int fd, char* out, size_t size, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = Env().PRead(fd, out + done, size - done, static_cast<off_t>(offset + done), path);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read " + path, errno);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Status PReadExactFd(int fd, char* out, size_t size, uint64_t offset, const std::string& path) {
  auto got = PReadFd(fd, out, size, offset, path);
  if (!got.ok()) return got.status();
  if (got.value() != size) return Status::IOError("read " + path + ": unexpected end of file");
  return Status::OK();
}

}  // namespace strata
