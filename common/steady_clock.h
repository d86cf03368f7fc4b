// The steady clock as a count of nanoseconds, for timestamps kept in atomics
// (when a read began, when a shard was last used) and compared by subtraction.
#pragma once

#include <chrono>
#include <cstdint>

namespace strata {

inline int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace strata
