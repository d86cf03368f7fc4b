// HostCopier: slots hold aligned host buffers; staging is one copy (split over
// the copy threads when large) off the caller's critical path. SelectCopier
// lives here too: it is the one place that decides between host and device.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "client/staging/copier.h"

namespace strata::staging_internal {

namespace {

// Alignment of every staging buffer: enough to view a payload as any scalar
// type or SIMD vector, and what cudaMalloc guarantees on the device side.
constexpr size_t kAlignment = 256;
constexpr size_t kMinCapacity = 4096;

class HostCopier final : public Copier {
 public:
  explicit HostCopier(const StagingOptions& o) : Copier(o.copy_threads), hint_(o.max_batch_bytes) {}

  StagingMemory memory() const override { return StagingMemory::kHost; }
  int device() const override { return -1; }

  Status Stage(Slot* slot) override {
    const std::string& payload = slot->batch.payload_buffer();
    if (payload.size() > slot->host_capacity) {
      Free(slot);
      const size_t capacity = GrowCapacity(payload.size(), hint_);
      slot->host = static_cast<std::byte*>(std::aligned_alloc(kAlignment, capacity));
      if (slot->host == nullptr) {
        return Status::ResourceExhausted("cannot allocate a " + std::to_string(capacity) + "-byte staging buffer");
      }
      slot->host_capacity = capacity;
      CountAllocation();
    }
    CopyPayload(slot->host, payload);
    slot->bytes = payload.size();
    return Status::OK();
  }

  Status HandOut(Slot*) override { return Status::OK(); }
  Status Wait(const Slot&) const override { return Status::OK(); }
  Status WaitOn(Slot*, void*) const override { return Status::OK(); }
  void Released(Slot*) override {}

  void Free(Slot* slot) override {
    std::free(slot->host);
    slot->host = nullptr;
    slot->host_capacity = 0;
  }

 private:
  const size_t hint_;
};

}  // namespace

size_t GrowCapacity(size_t needed, size_t hint) {
  size_t capacity = std::max({hint, needed + needed / 4, kMinCapacity});
  return (capacity + kAlignment - 1) / kAlignment * kAlignment;
}

std::unique_ptr<Copier> NewHostCopier(const StagingOptions& options) { return std::make_unique<HostCopier>(options); }

StagingMemory ProbePath(const StagingOptions& options, std::string* description) {
  if (!options.prefer_device) {
    *description = "host memory (prefer_device is off)";
    return StagingMemory::kHost;
  }
#ifdef STRATA_HAVE_CUDA
  std::string what;
  if (!ProbeCudaDevice(options.device, &what)) {
    *description = "host memory (" + what + ")";
    return StagingMemory::kHost;
  }
  *description = "CUDA device " + std::to_string(options.device) + " (" + what + ")";
  return StagingMemory::kDevice;
#else
  *description = "host memory (built without CUDA)";
  return StagingMemory::kHost;
#endif
}

Result<SelectedCopier> SelectCopier(const StagingOptions& options) {
  SelectedCopier selected;
  if (ProbePath(options, &selected.description) == StagingMemory::kHost) {
    selected.copier = NewHostCopier(options);
    return selected;
  }
#ifdef STRATA_HAVE_CUDA
  auto cuda = NewCudaCopier(options);
  if (!cuda.ok()) return cuda.status();
  selected.copier = std::move(cuda).value();
#endif
  return selected;
}

}  // namespace strata::staging_internal
