#include "server/cluster/rate_limiter.h"

#include <algorithm>

#include "common/mutex.h"

namespace strata {

RateLimiter::RateLimiter(uint64_t bytes_per_sec)
    : rate_(static_cast<double>(bytes_per_sec)),
      burst_(std::max(static_cast<double>(bytes_per_sec) / 10, 1.0)),
      tokens_(burst_),
      last_(std::chrono::steady_clock::now()) {}

bool RateLimiter::Acquire(uint64_t bytes) {
  MutexLock lock(&mu_);
  if (stopped_) return false;
  if (rate_ <= 0) return true;
  const auto now = std::chrono::steady_clock::now();
  tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * rate_);
  last_ = now;
  tokens_ -= static_cast<double>(bytes);  // may go negative: the debt is the wait
  if (tokens_ >= 0) return true;
  const auto wait =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(-tokens_ / rate_));
  // Others acquire meanwhile (the lock is released while this waits): their
  // debt adds to the bucket's, as when this slept outside the lock.
  return !stopped_cv_.WaitUntil(&mu_, now + wait, [this]() REQUIRES(mu_) { return stopped_; });
}

void RateLimiter::Stop() {
  MutexLock lock(&mu_);
  stopped_ = true;
  stopped_cv_.SignalAll();
}

}  // namespace strata
