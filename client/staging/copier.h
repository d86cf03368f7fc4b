// Copiers put a batch's payload into a ring slot's buffers: HostCopier into
// host memory, CudaCopier (CUDA builds) into pinned host memory and on to the
// device. SelectCopier picks one for a StagingOptions and says why, in the
// words of the one log line. Private to client/staging/.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "client/staging/parallel_copy.h"
#include "client/staging/slot.h"
#include "common/status.h"
#include "strata/staging.h"

namespace strata::staging_internal {

// Thread-safety: Stage runs on the ring's producer thread; Wait, WaitOn and
// Released on whichever thread holds the slot; each call touches only its slot
// (and, for Stage, the copy stream, which only the producer uses).
class Copier {
 public:
  // copy_threads: threads that copy a large payload into a slot (see
  // StagingOptions::copy_threads; 0 is resolved here).
  explicit Copier(int copy_threads) : copy_(copy_threads > 0 ? copy_threads : ParallelCopy::AutoThreads()) {}
  virtual ~Copier() = default;

  virtual StagingMemory memory() const = 0;
  virtual int device() const = 0;  // -1 for host memory

  // Called once on the producer thread before the first Stage.
  virtual Status BindThread() { return Status::OK(); }
  // Copies slot->batch's payload into the slot's buffers, growing them first
  // if they are too small, and sets slot->bytes. The device copy may still be
  // in flight when this returns; slot->ready_event marks its end.
  virtual Status Stage(Slot* slot) = 0;
  // Called on the consumer thread when the slot is handed to the caller.
  virtual Status HandOut(Slot* slot) = 0;
  // See StagedBatch::Wait and StagedBatch::WaitOn.
  virtual Status Wait(const Slot& slot) const = 0;
  virtual Status WaitOn(Slot* slot, void* cuda_stream) const = 0;
  // Called when the caller gives the slot back, before the producer may reuse it.
  virtual void Released(Slot* slot) = 0;
  // Frees the slot's buffers and events; the slot is not used again.
  virtual void Free(Slot* slot) = 0;

  // Host and device buffers allocated so far (a grow counts again).
  uint64_t allocations() const { return allocations_.load(std::memory_order_relaxed); }
  // Threads that copy each large payload, the producer's included.
  int copy_threads() const { return copy_.threads(); }

 protected:
  void CountAllocation() { allocations_.fetch_add(1, std::memory_order_relaxed); }
  // Copies a payload into a slot's host buffer; producer thread only.
  void CopyPayload(std::byte* to, const std::string& payload) { copy_.Copy(to, payload.data(), payload.size()); }

 private:
  std::atomic<uint64_t> allocations_{0};
  ParallelCopy copy_;
};

// The capacity to allocate for `needed` bytes: at least `hint`, a quarter of
// headroom, a multiple of the 256-byte buffer alignment. Used only when
// `needed` exceeds what a slot holds.
size_t GrowCapacity(size_t needed, size_t hint);

std::unique_ptr<Copier> NewHostCopier(const StagingOptions& options);

struct SelectedCopier {
  std::unique_ptr<Copier> copier;
  std::string description;  // "CUDA device 0 (NAME)" or "host memory (REASON)"
};
// The path SelectCopier takes, and its description, without creating anything.
StagingMemory ProbePath(const StagingOptions& options, std::string* description);
// CUDA device options.device if the build has CUDA, prefer_device is set and
// the device answers; host memory otherwise. An error only when a device was
// found but its copy stream could not be created.
Result<SelectedCopier> SelectCopier(const StagingOptions& options);

#ifdef STRATA_HAVE_CUDA
// Whether CUDA device `device` can be used; *what is its name, or the reason not.
bool ProbeCudaDevice(int device, std::string* what);
Result<std::unique_ptr<Copier>> NewCudaCopier(const StagingOptions& options);
#endif

}  // namespace strata::staging_internal
