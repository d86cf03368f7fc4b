// ParallelCopy: one memcpy split over several threads, for staging large
// payloads into a slot's buffer. A single thread copying from DRAM to DRAM
// moves 5-10 GB/s; a PCIe 5 copy engine takes 50+ GB/s, so with one thread
// the host copy, not the DMA, bounds the staging ring. Private to
// client/staging/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace strata::staging_internal {

// Thread-safety: Copy is called by one thread at a time (the ring's producer).
class ParallelCopy {
 public:
  // Pieces are never smaller than this: below it a worker's wake-up costs
  // more than the bytes it would copy.
  static constexpr size_t kMinPiece = size_t{1} << 20;
  // Piece boundaries fall on multiples of this (whole pages, whole lines).
  static constexpr size_t kPieceAlign = 4096;

  // The thread count StagingOptions::copy_threads = 0 means: a quarter of the
  // cores this process may use, at least 1 and at most 4 (2 cores: 1; 16: 4).
  static int AutoThreads();

  // `threads` >= 1 threads copy, the caller's included: the threads - 1
  // workers start with the first payload large enough to need them (a stream
  // of small batches starts none) and are joined by the destructor. 1: Copy
  // is std::memcpy.
  explicit ParallelCopy(int threads) : threads_(threads) {}
  ~ParallelCopy();
  ParallelCopy(const ParallelCopy&) = delete;
  ParallelCopy& operator=(const ParallelCopy&) = delete;

  int threads() const { return threads_; }
  // Workers started so far (0 until a payload needed them).
  size_t workers_started() const { return workers_.size(); }

  // Copies n bytes from src to dst (which must not overlap) and returns when
  // every piece is done. The caller copies the first piece itself; each
  // worker one other, so n / kMinPiece bounds the threads used.
  void Copy(void* dst, const void* src, size_t n);

 private:
  // Worker `index` (1 to threads - 1): copies its piece of each job.
  void Work(int index);

  Mutex mu_;
  CondVar start_;  // a new job (generation_) or stopping_
  CondVar done_;   // pending_ reached 0
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::byte* dst_ GUARDED_BY(mu_) = nullptr;
  const std::byte* src_ GUARDED_BY(mu_) = nullptr;
  size_t bytes_ GUARDED_BY(mu_) = 0;
  size_t piece_ GUARDED_BY(mu_) = 0;  // bytes per piece; the last may be shorter
  int pieces_ GUARDED_BY(mu_) = 0;    // pieces in this job, the caller's included
  int pending_ GUARDED_BY(mu_) = 0;   // workers' pieces not yet copied
  const int threads_;
  std::vector<std::thread> workers_;  // touched by the thread calling Copy, and the destructor
};

}  // namespace strata::staging_internal
