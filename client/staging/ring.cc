#include "client/staging/ring.h"

#include <utility>

#include "common/mutex.h"

namespace strata::staging_internal {

RingCore::RingCore(std::unique_ptr<Copier> copier, int prefetch_depth)
    : copier_(std::move(copier)), depth_(static_cast<size_t>(prefetch_depth)) {}

RingCore::~RingCore() {
  for (auto& slot : slots_) copier_->Free(slot.get());
}

Slot* RingCore::AcquireForFill() {
  MutexLock lock(&mu_);
  changed_.Wait(&mu_, [&]() REQUIRES(mu_) { return stopped_ || ready_.size() + filling_ < depth_; });
  if (stopped_) return nullptr;
  Slot* slot;
  if (free_.empty()) {
    slots_.push_back(std::make_unique<Slot>());
    slot = slots_.back().get();
  } else {
    slot = free_.front();
    free_.pop_front();
  }
  slot->state = Slot::State::kFilling;
  ++filling_;
  return slot;
}

void RingCore::Filled(Slot* slot, Status status) {
  MutexLock lock(&mu_);
  --filling_;
  if (status.ok()) {
    slot->state = Slot::State::kReady;
    ready_.push_back(slot);
  } else {
    slot->state = Slot::State::kFree;
    free_.push_back(slot);
    if (!finished_) {
      finished_ = true;
      end_ = std::move(status);
    }
  }
  changed_.SignalAll();
}

void RingCore::Finish(Status status) {
  MutexLock lock(&mu_);
  if (!finished_) {
    finished_ = true;
    end_ = std::move(status);
  }
  changed_.SignalAll();
}

Status RingCore::Take(StagedBatch* out, ResumeToken* position) {
  Slot* slot = nullptr;
  {
    MutexLock lock(&mu_);
    changed_.Wait(&mu_, [&]() REQUIRES(mu_) { return stopped_ || finished_ || !ready_.empty(); });
    if (stopped_) return Status::Cancelled("stream cancelled");
    if (ready_.empty()) return end_;
    slot = ready_.front();
    ready_.pop_front();
    slot->state = Slot::State::kHeld;
    changed_.SignalAll();  // the producer may fill another slot
  }
  *position = slot->position;
  *out = StagedBatch(shared_from_this(), slot);
  return copier_->HandOut(slot);
}

void RingCore::Release(Slot* slot) {
  copier_->Released(slot);
  MutexLock lock(&mu_);
  slot->state = Slot::State::kFree;
  free_.push_back(slot);
  changed_.SignalAll();
}

void RingCore::Stop() {
  MutexLock lock(&mu_);
  stopped_ = true;
  changed_.SignalAll();
}

size_t RingCore::slots() const {
  MutexLock lock(&mu_);
  return slots_.size();
}

}  // namespace strata::staging_internal
