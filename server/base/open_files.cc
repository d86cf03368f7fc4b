#include "server/base/open_files.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace strata {

namespace {
uint64_t Limit(rlim_t value) { return value == RLIM_INFINITY ? 0 : static_cast<uint64_t>(value); }
}  // namespace

OpenFileLimit RaiseOpenFileLimit() {
  OpenFileLimit out;
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    out.error = std::string("getrlimit: ") + std::strerror(errno);
    return out;
  }
  out.before = out.now = Limit(limit.rlim_cur);
  if (limit.rlim_cur == limit.rlim_max) return out;
  const rlim_t soft = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  int rc = setrlimit(RLIMIT_NOFILE, &limit);
  if (rc != 0 && limit.rlim_max == RLIM_INFINITY) {
    // Linux caps descriptors at fs.nr_open (1048576 by default) even under an unlimited hard limit.
    limit.rlim_cur = 1 << 20;
    rc = setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (rc != 0) {
    out.error = std::string("setrlimit: ") + std::strerror(errno);
    limit.rlim_cur = soft;
  }
  out.now = Limit(limit.rlim_cur);
  return out;
}

uint64_t OpenFileSoftLimit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  return Limit(limit.rlim_cur);
}

size_t KeptReaderLimit(uint64_t open_files) {
  constexpr uint64_t kMin = 16;
  constexpr uint64_t kMax = 16384;
  if (open_files == 0) return kMax;
  return static_cast<size_t>(std::clamp<uint64_t>(open_files / 4, kMin, kMax));
}

}  // namespace strata
