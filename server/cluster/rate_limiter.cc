#include "server/cluster/rate_limiter.h"

#include <algorithm>
#include <thread>

#include "common/mutex.h"

namespace strata {

RateLimiter::RateLimiter(uint64_t bytes_per_sec)
    : rate_(static_cast<double>(bytes_per_sec)),
      burst_(std::max(static_cast<double>(bytes_per_sec) / 10, 1.0)),
      tokens_(burst_),
      last_(std::chrono::steady_clock::now()) {}

void RateLimiter::Acquire(uint64_t bytes) {
  if (rate_ <= 0) return;
  std::chrono::duration<double> wait{0};
  {
    MutexLock lock(&mu_);
    const auto now = std::chrono::steady_clock::now();
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * rate_);
    last_ = now;
    tokens_ -= static_cast<double>(bytes);  // may go negative: the debt is the wait
    if (tokens_ < 0) wait = std::chrono::duration<double>(-tokens_ / rate_);
  }
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

}  // namespace strata
