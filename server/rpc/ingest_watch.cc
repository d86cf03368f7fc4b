#include "server/rpc/ingest_watch.h"

namespace strata {

void IngestWatch::Add(Call* call) {
  MutexLock lock(&mu_);
  calls_.insert(call);
}

void IngestWatch::Remove(Call* call) {
  MutexLock lock(&mu_);
  calls_.erase(call);
}

size_t IngestWatch::Sweep(int64_t now_ns) {
  if (idle_timeout_.count() == 0) return 0;
  const int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(idle_timeout_).count();
  size_t expired = 0;
  MutexLock lock(&mu_);  // held while expiring: a call is not removed, nor its reactor deleted, meanwhile
  for (Call* call : calls_) {
    const int64_t since = call->waiting_since.load(std::memory_order_acquire);
    if (since == 0 || now_ns - since <= limit) continue;
    if (call->expire(false)) ++expired;
  }
  return expired;
}

size_t IngestWatch::EndAllForShutdown() {
  shutting_down_.store(true, std::memory_order_release);
  size_t ended = 0;
  MutexLock lock(&mu_);
  for (Call* call : calls_) {
    if (call->waiting_since.load(std::memory_order_acquire) != 0 && call->expire(true)) ++ended;
  }
  return ended;
}

}  // namespace strata
