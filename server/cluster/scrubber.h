// The scrubber: re-verifies every local file's checksums in the background,
// at scrub_bytes_per_sec, pass after pass. A corrupt copy is quarantined
// (moved aside, never served again) and the repair loop copies a good one
// back from another holder. Reads meanwhile check every record anyway; the
// scrubber finds damage in data nobody is reading.
//
// Thread-safety: Start/Stop from one thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "server/base/metrics.h"

#include "common/mutex.h"
#include "server/cluster/rate_limiter.h"
#include "server/storage/data_dir.h"
#include "server/storage/local_files.h"

namespace strata {

class Scrubber {
 public:
  // `bytes_per_sec` 0 disables scrubbing (Start does nothing).
  // `quarantine` sets a corrupt copy aside. The pointers must outlive the Scrubber.
  Scrubber(const LocalFiles* files, const DataDir* dir, Metrics* metrics,
           std::function<void(const v1::FileRef&)> quarantine, uint64_t bytes_per_sec);
  ~Scrubber();

  void Start();
  void Stop();

 private:
  void Run();
  bool WaitOrStop(std::chrono::milliseconds d);

  const LocalFiles* const files_;
  const DataDir* const dir_;
  Metrics* const metrics_;
  const std::function<void(const v1::FileRef&)> quarantine_;
  const uint64_t bytes_per_sec_;
  RateLimiter limiter_;
  Mutex mu_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace strata
