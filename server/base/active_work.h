// ActiveWork: a count of calls in progress of one kind (open streams, open
// ingests) that shutdown can wait on. The RPC layer brackets each call with
// Begin() and End(); the daemon's drain waits until the count is zero,
// woken by the last End() rather than polling.
//
// Thread-safety: every method is safe to call from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace strata {

class ActiveWork {
 public:
  ActiveWork() = default;
  ActiveWork(const ActiveWork&) = delete;
  ActiveWork& operator=(const ActiveWork&) = delete;

  void Begin();
  // Ends one call begun with Begin(). Returns true when it was the last one
  // in progress. REQUIRES: a Begin() not yet ended.
  bool End();
  uint32_t count() const;

  // Blocks until no call is in progress or `deadline` passes. Returns whether
  // the count reached zero.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);

 private:
  mutable std::mutex mu_;
  std::condition_variable idle_;
  uint32_t count_ = 0;  // GUARDED_BY(mu_)
};

}  // namespace strata
