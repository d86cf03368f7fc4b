// The process's open-file limit (RLIMIT_NOFILE), and what stratad's readers
// of shard files may take of it.
//
// Thread-safety: call at startup, before other threads open files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata {

struct OpenFileLimit {
  uint64_t before = 0;  // the soft limit the process started with
  uint64_t now = 0;     // the soft limit in force (0: unlimited)
  std::string error;    // why raising it failed; empty if it did not
};

// Raises the soft limit on open files to the hard limit. Shells and
// containers often start a process at a soft 1024 while allowing far more;
// each shard file a node reads takes a descriptor, and so does each
// connection, each RocksDB file and each ingest.
OpenFileLimit RaiseOpenFileLimit();

// The soft limit in force now (0: unlimited; 1024 if it cannot be read).
uint64_t OpenFileSoftLimit();

// The shard readers the dataset cache keeps open between uses under a soft
// limit of `open_files` (0: unlimited): a quarter of it, at least 16 and at
// most 16384 (each reader is also a mapping, and vm.max_map_count is 65530
// by default).
size_t KeptReaderLimit(uint64_t open_files);

}  // namespace strata
