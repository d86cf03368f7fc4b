#include "tests/support/smaps.h"

#include <sys/utsname.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace strata::testing {

MappedFile Mapped(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool ours = false;
  MappedFile out;
  while (std::getline(smaps, line)) {
    std::istringstream in(line);
    std::string first;
    in >> first;
    if (first.find('-') != std::string::npos && first.back() != ':') {  // a mapping's first line
      std::string perms, offset, dev, inode, name;
      in >> perms >> offset >> dev >> inode >> name;
      ours = name == path;
      continue;
    }
    if (!ours) continue;
    uint64_t kib = 0;
    in >> kib;
    if (first == "Rss:") out.rss_bytes += kib << 10;
    if (first == "FilePmdMapped:") out.pmd_mapped_bytes += kib << 10;
  }
  return out;
}

std::string NoLargeFolios() {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(thp, modes);
  if (modes.empty() || modes.find("[never]") != std::string::npos) return "transparent huge pages are off";
  utsname u{};
  uname(&u);
  int major = 0, minor = 0;
  if (sscanf(u.release, "%d.%d", &major, &minor) != 2 || major < 6 || (major == 6 && minor < 16)) {
    return std::string("kernel ") + u.release + " predates ext4 large folios";
  }
  return "";
}

}  // namespace strata::testing
