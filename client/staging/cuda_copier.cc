// CudaCopier: each slot has a pinned host buffer and a device buffer. Stage
// copies the payload into the pinned buffer and issues cudaMemcpyAsync to the
// device buffer on the copy stream, then records the slot's ready event.
//
// Reuse is ordered by events, never by synchronizing the device:
// - the pinned buffer is rewritten only after the previous copy out of it has
//   finished (cudaEventSynchronize on the slot's ready event);
// - the device buffer is rewritten only after the work the caller had enqueued
//   on its consumer stream when it released the slot (the released event,
//   which the copy stream waits for).
// The runtime API is called from plain C++; libcudart is linked statically,
// and a machine without a driver makes ProbeCudaDevice fail, not crash.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <utility>

#include "client/staging/copier.h"

namespace strata::staging_internal {

namespace {

// OK, or Internal naming the call and the CUDA error.
Status Cuda(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return Status::OK();
  return Status::Internal(std::string("CUDA ") + call + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

cudaStream_t AsStream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t AsEvent(void* e) { return static_cast<cudaEvent_t>(e); }

class CudaCopier final : public Copier {
 public:
  CudaCopier(const StagingOptions& o, cudaStream_t copy_stream, bool owns_stream)
      : Copier(o.copy_threads),
        device_(o.device),
        hint_(o.max_batch_bytes),
        default_consumer_(AsStream(o.cuda_stream)),
        copy_stream_(copy_stream),
        owns_stream_(owns_stream) {}

  ~CudaCopier() override {
    if (owns_stream_) cudaStreamDestroy(copy_stream_);
  }

  StagingMemory memory() const override { return StagingMemory::kDevice; }
  int device() const override { return device_; }

  Status BindThread() override { return Cuda(cudaSetDevice(device_), "cudaSetDevice"); }

  Status Stage(Slot* slot) override {
    if (slot->ready_event == nullptr) {
      cudaEvent_t ready = nullptr, released = nullptr;
      STRATA_RETURN_IF_ERROR(Cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate"));
      slot->ready_event = ready;
      STRATA_RETURN_IF_ERROR(Cuda(cudaEventCreateWithFlags(&released, cudaEventDisableTiming), "cudaEventCreate"));
      slot->released_event = released;
    }
    // The previous copy out of the pinned buffer must be over before it is rewritten.
    if (slot->copy_issued) {
      STRATA_RETURN_IF_ERROR(Cuda(cudaEventSynchronize(AsEvent(slot->ready_event)), "cudaEventSynchronize"));
    }
    const std::string& payload = slot->batch.payload_buffer();
    if (payload.size() > slot->host_capacity || payload.size() > slot->device_capacity) {
      STRATA_RETURN_IF_ERROR(Grow(slot, payload.size()));
    }
    CopyPayload(slot->host, payload);
    slot->bytes = payload.size();
    if (slot->release_pending) {
      STRATA_RETURN_IF_ERROR(
          Cuda(cudaStreamWaitEvent(copy_stream_, AsEvent(slot->released_event), 0), "cudaStreamWaitEvent"));
      slot->release_pending = false;
    }
    if (!payload.empty()) {
      STRATA_RETURN_IF_ERROR(
          Cuda(cudaMemcpyAsync(slot->device, slot->host, payload.size(), cudaMemcpyHostToDevice, copy_stream_),
               "cudaMemcpyAsync"));
    }
    STRATA_RETURN_IF_ERROR(Cuda(cudaEventRecord(AsEvent(slot->ready_event), copy_stream_), "cudaEventRecord"));
    slot->copy_issued = true;
    return Status::OK();
  }

  Status HandOut(Slot* slot) override {
    slot->consumer_stream = default_consumer_;
    // With copies on the caller's own stream, stream order already covers it.
    if (!owns_stream_) return Status::OK();
    return WaitOn(slot, default_consumer_);
  }

  Status Wait(const Slot& slot) const override {
    STRATA_RETURN_IF_ERROR(Cuda(cudaEventSynchronize(AsEvent(slot.ready_event)), "cudaEventSynchronize"));
    return Status::OK();
  }

  Status WaitOn(Slot* slot, void* cuda_stream) const override {
    STRATA_RETURN_IF_ERROR(
        Cuda(cudaStreamWaitEvent(AsStream(cuda_stream), AsEvent(slot->ready_event), 0), "cudaStreamWaitEvent"));
    slot->consumer_stream = cuda_stream;
    return Status::OK();
  }

  void Released(Slot* slot) override {
    if (slot->released_event == nullptr) return;
    if (!owns_stream_ && slot->consumer_stream == copy_stream_) return;  // stream order suffices
    // If the record fails the slot is reused without waiting; nothing better
    // can be done on a release path, and the next Stage reports the error.
    slot->release_pending =
        cudaEventRecord(AsEvent(slot->released_event), AsStream(slot->consumer_stream)) == cudaSuccess;
  }

  void Free(Slot* slot) override {
    // cudaFree waits for the device to be idle, so no kernel still reads the buffer.
    if (slot->device != nullptr) cudaFree(slot->device);
    if (slot->host != nullptr) cudaFreeHost(slot->host);
    if (slot->ready_event != nullptr) cudaEventDestroy(AsEvent(slot->ready_event));
    if (slot->released_event != nullptr) cudaEventDestroy(AsEvent(slot->released_event));
    slot->device = nullptr;
    slot->host = nullptr;
    slot->ready_event = slot->released_event = nullptr;
    slot->device_capacity = slot->host_capacity = 0;
    slot->copy_issued = slot->release_pending = false;
  }

 private:
  // Replaces both buffers with larger ones. The old device buffer may still be
  // read by the caller's released work: wait for it before freeing.
  Status Grow(Slot* slot, size_t needed) {
    if (slot->release_pending) {
      STRATA_RETURN_IF_ERROR(Cuda(cudaEventSynchronize(AsEvent(slot->released_event)), "cudaEventSynchronize"));
      slot->release_pending = false;
    }
    const size_t capacity = GrowCapacity(needed, hint_);
    if (slot->device != nullptr) STRATA_RETURN_IF_ERROR(Cuda(cudaFree(slot->device), "cudaFree"));
    if (slot->host != nullptr) STRATA_RETURN_IF_ERROR(Cuda(cudaFreeHost(slot->host), "cudaFreeHost"));
    slot->device = nullptr;
    slot->host = nullptr;
    slot->device_capacity = slot->host_capacity = 0;
    void* host = nullptr;
    void* device = nullptr;
    STRATA_RETURN_IF_ERROR(Cuda(cudaHostAlloc(&host, capacity, cudaHostAllocDefault), "cudaHostAlloc"));
    slot->host = static_cast<std::byte*>(host);
    slot->host_capacity = capacity;
    CountAllocation();
    STRATA_RETURN_IF_ERROR(Cuda(cudaMalloc(&device, capacity), "cudaMalloc"));
    slot->device = static_cast<std::byte*>(device);
    slot->device_capacity = capacity;
    CountAllocation();
    return Status::OK();
  }

  const int device_;
  const size_t hint_;
  const cudaStream_t default_consumer_;
  const cudaStream_t copy_stream_;
  const bool owns_stream_;
};

}  // namespace

bool ProbeCudaDevice(int device, std::string* what) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *what = std::string("no CUDA device: ") + cudaGetErrorString(err);
    return false;
  }
  if (device < 0 || device >= count) {
    *what = "CUDA device " + std::to_string(device) + " requested, " + std::to_string(count) + " present";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    *what = "CUDA device " + std::to_string(device) + " does not answer";
    return false;
  }
  *what = prop.name;
  return true;
}

Result<std::unique_ptr<Copier>> NewCudaCopier(const StagingOptions& options) {
  // The copy stream belongs to options.device; the calling thread's current
  // device is the caller's business and is put back afterwards.
  int previous = 0;
  STRATA_RETURN_IF_ERROR(Cuda(cudaGetDevice(&previous), "cudaGetDevice"));
  STRATA_RETURN_IF_ERROR(Cuda(cudaSetDevice(options.device), "cudaSetDevice"));
  cudaStream_t stream = AsStream(options.cuda_stream);
  Status created;
  if (options.own_copy_stream) {
    created = Cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  STRATA_RETURN_IF_ERROR(Cuda(cudaSetDevice(previous), "cudaSetDevice"));
  STRATA_RETURN_IF_ERROR(created);
  return std::unique_ptr<Copier>(std::make_unique<CudaCopier>(options, stream, options.own_copy_stream));
}

}  // namespace strata::staging_internal
