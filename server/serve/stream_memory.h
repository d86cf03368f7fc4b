// The bytes batch streams hold built and not yet sent, bounded server-wide.
//
// A stream is admitted with a reservation of one step's estimated bytes
// (refused with RESOURCE_EXHAUSTED when that does not fit), so an admitted
// stream can always build its next batch. It builds further ahead (up to
// prefetch_batches) only while the shared budget has room, and gives the extra
// back as its batches are sent. A trainer that stops reading therefore holds
// at most what it was granted, and hundreds of unread streams hold at most the
// budget, not prefetch_batches batches each.
//
// Thread-safety: safe for concurrent use (one atomic counter).
#pragma once

#include <atomic>
#include <cstdint>

namespace strata {

class StreamMemory {
 public:
  // `budget_bytes` 0: unbounded (every acquisition succeeds).
  explicit StreamMemory(uint64_t budget_bytes) : budget_(budget_bytes) {}

  // Takes `bytes` if used() + bytes <= budget(); false (nothing taken) otherwise.
  bool TryAcquire(uint64_t bytes);
  // Gives back bytes taken by TryAcquire.
  void Release(uint64_t bytes);

  uint64_t budget() const { return budget_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const uint64_t budget_;
  std::atomic<uint64_t> used_{0};
};

// The bytes one step of a stream is expected to hold: the rank's batch at the
// version's mean sample size, plus per-sample metadata, at least 4 KiB.
uint64_t EstimateStepBytes(uint64_t dataset_payload_bytes, uint64_t dataset_samples, uint32_t batch_size);

}  // namespace strata
