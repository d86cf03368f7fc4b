#include "server/storage/process_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace strata {

Result<uint64_t> ProcessResidentBytes() {
  // Opened once; /proc regenerates the file on every read from offset 0.
  static const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open /proc/self/statm");
  char buf[128];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return ErrnoStatus("read /proc/self/statm", n < 0 ? errno : EIO);
  buf[n] = '\0';
  unsigned long long size_pages = 0, resident_pages = 0;  // NOLINT(runtime/int): sscanf's type
  if (std::sscanf(buf, "%llu %llu", &size_pages, &resident_pages) != 2) {
    return Status::IOError("cannot parse /proc/self/statm");
  }
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return static_cast<uint64_t>(resident_pages) * page;
}

}  // namespace strata
