// What /proc/self/smaps says about this process's mappings of one file: how
// much of it is mapped now, and how much of that through 2 MiB page-table
// entries; and whether this kernel maps files so at all. For tests of what
// the shard reader and the block cache map.
#pragma once

#include <cstdint>
#include <string>

namespace strata::testing {

struct MappedFile {
  uint64_t rss_bytes = 0;         // Rss of every mapping of the file
  uint64_t pmd_mapped_bytes = 0;  // of that, mapped as whole 2 MiB pages (FilePmdMapped)
};

// Sums over every mapping of `path` (an absolute path, as smaps names it).
MappedFile Mapped(const std::string& path);

// Why this kernel is not expected to keep a file in 2 MiB page-cache folios
// and map them whole ("": it is): transparent huge pages off, or a kernel
// before ext4's large folios (Linux 6.16; xfs had them before).
std::string NoLargeFolios();

}  // namespace strata::testing
