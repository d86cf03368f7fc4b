#include "server/base/active_work.h"

namespace strata {

void ActiveWork::Begin() {
  std::lock_guard<std::mutex> lock(mu_);
  ++count_;
}

bool ActiveWork::End() {
  // Notified under the lock: a waiter that sees zero may destroy this object
  // as soon as it has the lock, so nothing here may touch it after that.
  std::lock_guard<std::mutex> lock(mu_);
  const bool last = --count_ == 0;
  if (last) idle_.notify_all();
  return last;
}

uint32_t ActiveWork::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

bool ActiveWork::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_until(lock, deadline, [this] { return count_ == 0; });
}

}  // namespace strata
