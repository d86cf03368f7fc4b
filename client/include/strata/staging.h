// Staging: a ring of reusable buffers between a Stream and the trainer, so
// that receiving and copying batch k+1 overlaps compute on batch k.
//
//   auto staged = strata::StagedStream::Open(std::move(stream), {});   // CUDA device 0 if present
//   strata::StagedBatch b;
//   while ((*staged)->Next(&b).ok()) {          // OutOfRange ends the epoch
//     launch_kernels(b.data(), b.bytes(), b.batch().offsets());   // on StagingOptions::cuda_stream
//   }
//
// With CUDA (toolkit at build time, a device at run time) each slot of the ring
// has a pinned host buffer (cudaHostAlloc) and a device buffer; a background
// thread pulls batches with Stream::Next, copies the payload into the pinned
// buffer and issues cudaMemcpyAsync to the device buffer followed by a
// cudaEventRecord: one event per batch. Without CUDA, without a device, or with
// prefer_device = false, slots hold ordinary host buffers and the same API
// serves host memory. Open() logs one line saying which path is active:
//   strata staging: CUDA device 0 (NVIDIA H100 80GB HBM3), prefetch 2, 4 copy threads
//   strata staging: host memory (no CUDA device: ...), prefetch 2, 1 copy thread
//
// Buffers are reused, never allocated per batch: a slot's buffers are
// allocated the first time the slot is filled, grow only when a batch larger
// than they hold arrives, and never shrink. The ring has at most
// prefetch_depth + 1 slots while the caller holds one batch at a time; each
// batch the caller keeps beyond that adds a slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "strata/batch.h"
#include "strata/client.h"
#include "strata/resume_token.h"
#include "strata/status.h"

namespace strata {

namespace staging_internal {
class RingCore;
struct Slot;
}  // namespace staging_internal

enum class StagingMemory : uint8_t {
  kHost,    // ordinary (or, in a CUDA build with a device, pinned) host memory
  kDevice,  // CUDA device memory on StagedStream::device()
};

struct StagingOptions {
  // Batches staged ahead of the one the caller holds. Default 2. REQUIRES: >= 1.
  int prefetch_depth = 2;
  // Bytes each slot's buffers hold when first allocated. Default 0: the first
  // batch staged in the slot, plus a quarter. A batch larger than a slot's
  // buffers grows them, with a quarter of headroom: the one case in which a
  // buffer is allocated after warm-up.
  size_t max_batch_bytes = 0;
  // CUDA device ordinal. Default 0.
  int device = 0;
  // The caller's cudaStream_t, on which it consumes batches. Default nullptr:
  // the legacy default stream. Next() makes this stream wait for the batch's
  // copy (cudaStreamWaitEvent; the host does not block), and a released slot
  // is not overwritten before the work enqueued on it so far has finished.
  void* cuda_stream = nullptr;
  // true (default): copies run on a stream the ring owns, so the copy of
  // batch k+1 overlaps kernels on batch k. false: copies are issued on
  // cuda_stream itself; ordered without waits, but queued behind its kernels.
  bool own_copy_stream = true;
  // false: stage in host memory even when a CUDA device is present.
  bool prefer_device = true;
  // Threads that copy each payload into a slot's (pinned) host buffer, the
  // background thread included; a payload is split into pieces of at least
  // 1 MiB, so small batches use one (and no extra thread is started). One
  // thread copied 5-12 GB/s from DRAM on an H200 machine, whose copy engine
  // took 55: with large batches the host copy bounds the ring. Default 0: a
  // quarter of the cores, from 1 to 4. Otherwise 1 to 64.
  int copy_threads = 0;
};

// One staged batch, handed to the caller by StagedStream::Next. Move-only; it
// holds its ring slot until Release(), destruction, or the next Next() into it.
// The slot's memory stays valid while the StagedBatch holds it, even after the
// StagedStream is destroyed.
//
// Thread-safety: used by one thread at a time; distinct StagedBatch objects may
// be released from different threads.
class StagedBatch {
 public:
  StagedBatch() = default;
  StagedBatch(StagedBatch&& other) noexcept;
  StagedBatch& operator=(StagedBatch&& other) noexcept;
  StagedBatch(const StagedBatch&) = delete;
  StagedBatch& operator=(const StagedBatch&) = delete;
  ~StagedBatch() { Release(); }

  // Whether this object holds a batch. The accessors below REQUIRE it.
  bool valid() const { return slot_ != nullptr; }

  // Ids, labels, offsets, sizes, fields and step of the batch. Offsets index
  // data() and host_data() as they index batch().payload().
  const Batch& batch() const;
  // Where data() points: device memory on device(), or host memory.
  StagingMemory memory() const;
  // CUDA device ordinal, or -1 for host memory.
  int device() const;
  // The payload, bytes() long, in memory(). With kDevice, a device pointer
  // that is ready on the consumer stream (see StagingOptions::cuda_stream)
  // or after Wait(); never dereference it on the host.
  const std::byte* data() const;
  // The slot's host buffer holding the same bytes (pinned in a CUDA build with
  // a device); equal to data() with kHost. Ready at once.
  const std::byte* host_data() const;
  size_t bytes() const;
  // The cudaEvent_t recorded after this batch's copy, or nullptr with kHost.
  void* ready_event() const;
  // Blocks the calling thread until data() holds the payload. OK at once with
  // kHost; a CUDA error otherwise.
  Status Wait() const;
  // Makes `cuda_stream` (a cudaStream_t) wait for the copy without blocking
  // the host, and makes it the stream whose work a later release waits for.
  // OK at once with kHost.
  Status WaitOn(void* cuda_stream);

  // Hands the slot back to the ring; valid() is false afterwards. No-op if
  // nothing is held.
  void Release();

 private:
  friend class staging_internal::RingCore;
  StagedBatch(std::shared_ptr<staging_internal::RingCore> ring, staging_internal::Slot* slot)
      : ring_(std::move(ring)), slot_(slot) {}

  std::shared_ptr<staging_internal::RingCore> ring_;  // keeps the slot's memory alive
  staging_internal::Slot* slot_ = nullptr;
};

// A Stream behind a staging ring. Next() and the accessors are for one
// consumer thread; Cancel() may be called from any thread.
class StagedStream {
 public:
  // The path Open(stream, options) would take, without opening anything:
  // kDevice or kHost, and in *description the words it would log.
  static StagingMemory Probe(const StagingOptions& options, std::string* description);

  // Takes ownership of `stream` and starts the background thread that pulls
  // from it. InvalidArgument on bad options; a CUDA error when a device was
  // selected but its resources could not be created. Selecting host memory
  // because there is no CUDA or no device is not an error.
  static Result<std::unique_ptr<StagedStream>> Open(std::unique_ptr<Stream> stream, const StagingOptions& options = {});

  // Cancels the inner stream and joins the background thread. Batches the
  // caller still holds stay valid.
  virtual ~StagedStream() = default;

  // Releases what *batch holds, then waits for the next staged batch.
  // Batches staged before an error are delivered before it; after the last
  // step, OutOfRange; after Cancel(), Cancelled. Once not OK, Next keeps
  // returning the same status.
  virtual Status Next(StagedBatch* batch) = 0;

  // kDevice or kHost for every batch of this stream, and the device ordinal
  // (-1 for host memory).
  virtual StagingMemory memory() const = 0;
  virtual int device() const = 0;
  // The path in words, as logged: "CUDA device 0 (NAME)" or "host memory (REASON)".
  virtual const std::string& description() const = 0;

  // Continues after the last batch Next() returned, not after the batches
  // staged ahead of it: save this with a checkpoint.
  virtual ResumeToken resume_token() const = 0;
  // Steps in the epoch (0 until the first batch is returned).
  virtual uint64_t steps_in_epoch() const = 0;

  // Slots in the ring and buffer allocations so far (host and device counted
  // separately). With equal-sized batches and one batch held at a time, both
  // stop growing after the first prefetch_depth + 1 batches.
  virtual size_t slots() const = 0;
  virtual uint64_t buffer_allocations() const = 0;

  // Stops the inner stream; a blocked Next() returns Cancelled.
  virtual void Cancel() = 0;
};

}  // namespace strata
