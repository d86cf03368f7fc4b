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

  // Blocks until `bytes` may pass: true. False at once, or as soon as Stop
  // is called while it waits: the caller is to stop its work.
  bool Acquire(uint64_t bytes);

  // Wakes every Acquire that waits, and makes every later one return false:
  // a slow rate never holds up a shutdown.
  void Stop();

 private:
  const double rate_;
  const double burst_;
  Mutex mu_;
  CondVar stopped_cv_;
  bool stopped_ GUARDED_BY(mu_) = false;
  double tokens_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_ GUARDED_BY(mu_);
};

}  // namespace strata
