// StagedBatch: a caller's lease on one ring slot.
#include <utility>

#include "client/staging/ring.h"
#include "strata/staging.h"

namespace strata {

using staging_internal::RingCore;

StagedBatch::StagedBatch(StagedBatch&& other) noexcept
    : ring_(std::move(other.ring_)), slot_(std::exchange(other.slot_, nullptr)) {}

StagedBatch& StagedBatch::operator=(StagedBatch&& other) noexcept {
  if (this != &other) {
    Release();
    ring_ = std::move(other.ring_);
    slot_ = std::exchange(other.slot_, nullptr);
  }
  return *this;
}

const Batch& StagedBatch::batch() const { return slot_->batch; }
StagingMemory StagedBatch::memory() const { return ring_->copier().memory(); }
int StagedBatch::device() const { return ring_->copier().device(); }

const std::byte* StagedBatch::data() const { return memory() == StagingMemory::kDevice ? slot_->device : slot_->host; }

const std::byte* StagedBatch::host_data() const { return slot_->host; }
size_t StagedBatch::bytes() const { return slot_->bytes; }
void* StagedBatch::ready_event() const { return slot_->ready_event; }
Status StagedBatch::Wait() const { return ring_->copier().Wait(*slot_); }
Status StagedBatch::WaitOn(void* cuda_stream) { return ring_->copier().WaitOn(slot_, cuda_stream); }

void StagedBatch::Release() {
  if (slot_ == nullptr) return;
  ring_->Release(std::exchange(slot_, nullptr));
  ring_.reset();
}

}  // namespace strata
