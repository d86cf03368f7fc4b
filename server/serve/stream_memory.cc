#include "server/serve/stream_memory.h"

#include <algorithm>

namespace strata {

bool StreamMemory::TryAcquire(uint64_t bytes) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  for (;;) {
    if (budget_ != 0 && (bytes > budget_ || used > budget_ - bytes)) return false;
    if (used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed)) return true;
  }
}

void StreamMemory::Release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

uint64_t EstimateStepBytes(uint64_t dataset_payload_bytes, uint64_t dataset_samples, uint32_t batch_size) {
  constexpr uint64_t kPerSampleOverhead = 64;  // id, size, slot, label and stratum on the wire
  const uint64_t mean = dataset_samples == 0 ? 0 : (dataset_payload_bytes + dataset_samples - 1) / dataset_samples;
  return std::max<uint64_t>(4096, uint64_t{batch_size} * (mean + kPerSampleOverhead));
}

}  // namespace strata
