// Human units: byte sizes ("64MiB", "1G", "4096") and durations ("30s", "1d").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

// Parses a byte size: a number with an optional unit K, M, G, T (powers of
// 1024; "KiB", "KB", "k" and "kb" all mean 1024). InvalidArgument otherwise.
Result<uint64_t> ParseByteSize(std::string_view text);
// "1.5 MiB", "512 B".
std::string FormatBytes(uint64_t bytes);

// Parses a duration in seconds: a number with an optional unit s, m, h, d, w.
Result<uint64_t> ParseDurationSeconds(std::string_view text);

}  // namespace strata
