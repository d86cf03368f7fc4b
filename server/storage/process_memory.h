// How much memory this process holds: its resident set (VmRSS), code,
// heap and mapped file pages together, as the kernel counts it and as the
// budget `memory_budget` (server/base/config.h) and an operator's `ps` see it.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace strata {

// This process's resident bytes now, from /proc/self/statm (one pread of an
// fd kept open: a few microseconds). IOError where /proc cannot be read.
Result<uint64_t> ProcessResidentBytes();

}  // namespace strata
