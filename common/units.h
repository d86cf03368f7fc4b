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

// A byte amount given absolutely ("1GiB") or as a share of a whole ("5%").
struct ByteThreshold {
  uint64_t bytes = 0;    // used when percent is 0
  uint32_t percent = 0;  // 1..100: this share of the whole
  // The threshold in bytes for a whole of `total` bytes.
  uint64_t Of(uint64_t total) const { return percent ? total / 100 * percent + total % 100 * percent / 100 : bytes; }
};
// Parses "N%" (N from 1 to 100) or a byte size (ParseByteSize). InvalidArgument otherwise.
Result<ByteThreshold> ParseByteThreshold(std::string_view text);
// "5%" or "1.0 GiB".
std::string FormatByteThreshold(const ByteThreshold& t);

// Parses a duration in seconds: a number with an optional unit s, m, h, d, w.
Result<uint64_t> ParseDurationSeconds(std::string_view text);

}  // namespace strata
