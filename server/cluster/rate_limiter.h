// A token bucket in bytes per second, shared by the background work of one
// node (repair, rebalance, scrubbing) so it never starves foreground reads.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/mutex.h"

namespace strata {

class RateLimiter {
 public:
  // `bytes_per_sec` 0 means unlimited. Bursts up to a tenth of a second.
  explicit RateLimiter(uint64_t bytes_per_sec);

  // Blocks until `bytes` may pass.
  void Acquire(uint64_t bytes);

 private:
  const double rate_;
  const double burst_;
  Mutex mu_;
  double tokens_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_ GUARDED_BY(mu_);
};

}  // namespace strata
