// The wall clock as milliseconds since the Unix epoch, for times that are
// stored or shown (heartbeats, cursors, when an ingest began). Durations are
// measured with the steady clock instead (common/steady_clock.h).
#pragma once

#include <chrono>
#include <cstdint>

namespace strata {

inline int64_t UnixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace strata
