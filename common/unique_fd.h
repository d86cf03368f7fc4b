// UniqueFd: sole owner of a file descriptor, closed when the owner goes away.
//
//   UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
//   if (!fd.valid()) return ErrnoStatus("open " + path, errno);
//   ... every early return closes it ...
//
// Close() is for writers, whose close can report a lost write (NFS, quotas).
//
// Thread-safety: a value; one thread at a time.
#pragma once

#include <unistd.h>

#include <string_view>
#include <utility>

#include "common/status.h"

namespace strata {

class UniqueFd {
 public:
  UniqueFd() = default;
  // Takes ownership of `fd`; a negative fd means none (as open(2) reports failure).
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  bool valid() const { return fd_ >= 0; }
  int get() const { return fd_; }
  // Gives up ownership without closing; returns the descriptor.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor held (ignoring errors) and holds `fd` instead.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  // Closes the descriptor, reporting a failure as "close <what>: <strerror>".
  // OK when none is held. Afterwards nothing is held, whatever the result.
  Status Close(std::string_view what);

 private:
  int fd_ = -1;
};

}  // namespace strata
