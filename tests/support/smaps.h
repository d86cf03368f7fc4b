// What /proc/self/smaps says about this process's mappings of one file: how
// much of it is mapped now, and how much of that through 2 MiB page-table
// entries. For tests of what the shard reader and the block cache map.
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

}  // namespace strata::testing
