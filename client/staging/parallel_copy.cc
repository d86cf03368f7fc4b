#include "client/staging/parallel_copy.h"

#include <sched.h>

#include <algorithm>
#include <cstring>

namespace strata::staging_internal {

int ParallelCopy::AutoThreads() {
  cpu_set_t set;
  int cores = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  if (cores <= 0) cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 4, 1, 4);
}

ParallelCopy::~ParallelCopy() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    start_.SignalAll();
  }
  for (auto& worker : workers_) worker.join();
}

void ParallelCopy::Copy(void* dst, const void* src, size_t n) {
  const size_t most = std::max<size_t>(n / kMinPiece, 1);
  const size_t wanted = std::min(static_cast<size_t>(threads()), most);
  if (wanted <= 1) {
    if (n > 0) std::memcpy(dst, src, n);
    return;
  }
  // The first job of several pieces starts every worker. No job has been
  // posted before it (generation_ is 0), so each waits for the first.
  while (workers_.size() + 1 < static_cast<size_t>(threads_)) {
    const auto index = static_cast<int>(workers_.size()) + 1;
    // Owner: this ParallelCopy (joined by its destructor). Purpose: copies
    // one piece of each large payload beside the producer thread.
    workers_.emplace_back([this, index] { Work(index); });
  }
  const size_t piece = ((n + wanted - 1) / wanted + kPieceAlign - 1) / kPieceAlign * kPieceAlign;
  const auto pieces = static_cast<int>((n + piece - 1) / piece);
  {
    MutexLock lock(&mu_);
    dst_ = static_cast<std::byte*>(dst);
    src_ = static_cast<const std::byte*>(src);
    bytes_ = n;
    piece_ = piece;
    pieces_ = pieces;
    pending_ = pieces - 1;
    ++generation_;
    start_.SignalAll();
  }
  std::memcpy(dst, src, piece);
  MutexLock lock(&mu_);
  done_.Wait(&mu_, [&]() REQUIRES(mu_) { return pending_ == 0; });
}

void ParallelCopy::Work(int index) {
  uint64_t seen = 0;  // the last job this worker woke for
  for (;;) {
    std::byte* dst = nullptr;
    const std::byte* src = nullptr;
    size_t length = 0;
    {
      MutexLock lock(&mu_);
      start_.Wait(&mu_, [&]() REQUIRES(mu_) { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      // A job of fewer pieces than threads leaves the last workers idle. Copy
      // waits for every piece, so a worker never misses a job it has one in.
      if (index >= pieces_) continue;
      const size_t begin = piece_ * static_cast<size_t>(index);
      dst = dst_ + begin;
      src = src_ + begin;
      length = std::min(piece_, bytes_ - begin);
    }
    std::memcpy(dst, src, length);
    MutexLock lock(&mu_);
    if (--pending_ == 0) done_.Signal();
  }
}

}  // namespace strata::staging_internal
