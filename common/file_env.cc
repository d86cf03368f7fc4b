#include "common/file_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace strata {

namespace {

class PosixFileEnv : public FileEnv {
 public:
  int Open(const std::string& path, int flags, mode_t mode) override { return ::open(path.c_str(), flags, mode); }
  ssize_t Write(int fd, const void* data, size_t size, const std::string& /*path*/) override {
    return ::write(fd, data, size);
  }
  ssize_t PWrite(int fd, const void* data, size_t size, off_t offset, const std::string& /*path*/) override {
    return ::pwrite(fd, data, size, offset);
  }
  ssize_t PRead(int fd, void* out, size_t size, off_t offset, const std::string& /*path*/) override {
    return ::pread(fd, out, size, offset);
  }
  int Fsync(int fd, const std::string& /*path*/) override { return ::fsync(fd); }
  int RenameNoReplace(const std::string& from, const std::string& to) override {
    return ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE);
  }
};

// Test only: POSIX with the faults the rules file names (file_env.h).
class FaultFileEnv : public PosixFileEnv {
 public:
  explicit FaultFileEnv(std::string rules_path) : rules_path_(std::move(rules_path)) {}

  int Open(const std::string& path, int flags, mode_t mode) override {
    if (int e = Fault("open", path, path)) return Fail(e);
    if ((flags & O_ACCMODE) == O_RDONLY) {
      if (int e = Fault("read", path, path)) return Fail(e);
    }
    return PosixFileEnv::Open(path, flags, mode);
  }
  ssize_t Write(int fd, const void* data, size_t size, const std::string& path) override {
    if (int e = Fault("write", path, path)) return Fail(e);
    return PosixFileEnv::Write(fd, data, size, path);
  }
  ssize_t PWrite(int fd, const void* data, size_t size, off_t offset, const std::string& path) override {
    if (int e = Fault("write", path, path)) return Fail(e);
    return PosixFileEnv::PWrite(fd, data, size, offset, path);
  }
  ssize_t PRead(int fd, void* out, size_t size, off_t offset, const std::string& path) override {
    if (int e = Fault("read", path, path)) return Fail(e);
    return PosixFileEnv::PRead(fd, out, size, offset, path);
  }
  int Fsync(int fd, const std::string& path) override {
    if (int e = Fault("fsync", path, path)) return Fail(e);
    return PosixFileEnv::Fsync(fd, path);
  }
  int RenameNoReplace(const std::string& from, const std::string& to) override {
    if (int e = Fault("rename", from, to)) return Fail(e);
    return PosixFileEnv::RenameNoReplace(from, to);
  }

 private:
  struct Rule {
    std::string op;
    int err = 0;
    std::string text;
  };

  static int Fail(int err) {
    errno = err;
    return -1;
  }

  // The errno to fail `op` on `a` (or `b`) with; 0: none.
  int Fault(const char* op, const std::string& a, const std::string& b) {
    std::lock_guard<std::mutex> lock(mu_);
    Reload();
    for (const Rule& r : rules_) {
      if (r.op == op && (a.find(r.text) != std::string::npos || b.find(r.text) != std::string::npos)) return r.err;
    }
    return 0;
  }

  // Re-reads the rules when the file's modification time or size changed.
  void Reload() {
    struct stat st {};
    const bool present = ::stat(rules_path_.c_str(), &st) == 0;
    const int64_t stamp = present ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec : -1;
    const int64_t size = present ? static_cast<int64_t>(st.st_size) : -1;
    if (loaded_ && stamp == stamp_ && size == size_) return;
    loaded_ = true;
    stamp_ = stamp;
    size_ = size;
    rules_.clear();
    std::ifstream in(rules_path_);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      Rule r;
      std::string err;
      if (!(words >> r.op >> err >> r.text)) continue;
      r.err = err == "ENOSPC" ? ENOSPC : err == "EIO" ? EIO : 0;
      if (r.err != 0) rules_.push_back(std::move(r));
    }
  }

  const std::string rules_path_;
  std::mutex mu_;
  bool loaded_ = false;
  int64_t stamp_ = -1;
  int64_t size_ = -1;
  std::vector<Rule> rules_;
};

}  // namespace

FileEnv& Env() {
  static FileEnv* const env = []() -> FileEnv* {
    const char* rules = std::getenv("STRATA_FAULTS_FILE");
    if (rules != nullptr && *rules != '\0') return new FaultFileEnv(rules);
    return new PosixFileEnv();
  }();
  return *env;
}

Status FsyncFd(int fd, const std::string& path) {
  if (Env().Fsync(fd, path) != 0) return ErrnoStatus("fsync " + path, errno);
  return Status::OK();
}

}  // namespace strata
