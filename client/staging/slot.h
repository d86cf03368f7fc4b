// One slot of the staging ring: a batch, the buffers its payload is staged
// in, and the CUDA events that order their reuse. Private to client/staging/.
//
// Ownership moves with the state: the producer thread owns a kFilling slot,
// the ring's queue a kReady one, one StagedBatch a kHeld one; only the owner
// touches the fields below `state`. The Copier that allocated the buffers and
// events frees them.
#pragma once

#include <cstddef>

#include "strata/batch.h"
#include "strata/resume_token.h"

namespace strata::staging_internal {

struct Slot {
  enum class State { kFree, kFilling, kReady, kHeld };
  State state = State::kFree;  // GUARDED_BY(RingCore::mu_)

  Batch batch;           // reused: its vectors and payload keep their capacity
  ResumeToken position;  // the inner stream's token right after `batch`
  size_t bytes = 0;      // payload bytes staged

  std::byte* host = nullptr;  // pinned with CUDA, else aligned host memory
  size_t host_capacity = 0;
  std::byte* device = nullptr;  // CUDA only
  size_t device_capacity = 0;

  void* ready_event = nullptr;      // cudaEvent_t: recorded after the device copy
  bool copy_issued = false;         // ready_event has been recorded at least once
  void* released_event = nullptr;   // cudaEvent_t: recorded on consumer_stream at release
  bool release_pending = false;     // released_event recorded, not yet waited for
  void* consumer_stream = nullptr;  // cudaStream_t whose work a release waits for
};

}  // namespace strata::staging_internal
