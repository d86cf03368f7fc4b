// RingCore: the slots of one staging ring and the hand-off between the
// producer thread (which fills slots) and the caller (which holds them).
// Shared by the StagedStream and every StagedBatch it handed out, so a held
// slot's memory outlives the stream. Private to client/staging/.
//
// Invariant: slots kReady plus kFilling never exceed prefetch_depth; a slot is
// created only when the producer may fill one and none is free, so with one
// batch held at a time the ring settles at prefetch_depth + 1 slots.
//
// Thread-safety: every method is safe to call from any thread.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "client/staging/copier.h"
#include "client/staging/slot.h"
#include "common/mutex.h"
#include "common/status.h"
#include "strata/staging.h"

namespace strata::staging_internal {

class RingCore : public std::enable_shared_from_this<RingCore> {
 public:
  RingCore(std::unique_ptr<Copier> copier, int prefetch_depth);
  // Frees every slot's buffers. No StagedBatch refers to the ring by then.
  ~RingCore();

  Copier& copier() { return *copier_; }

  // Producer: waits until a slot may be filled and returns it (kFilling), or
  // nullptr once Stop() was called.
  Slot* AcquireForFill();
  // Producer: the slot is staged (ok) or could not be (the status ends the
  // ring: batches already ready are still delivered, then `status`).
  void Filled(Slot* slot, Status status);
  // Producer: it will fill no more slots; Take returns `status` once the
  // ready batches are delivered.
  void Finish(Status status);

  // Caller: waits for the oldest ready slot and hands it to *out (which must
  // hold nothing) with *position set to the slot's resume position; or
  // returns the status that ended the ring, or Cancelled after Stop().
  Status Take(StagedBatch* out, ResumeToken* position);
  // A StagedBatch gives its slot back.
  void Release(Slot* slot);
  // Wakes and ends both sides; slots still held stay valid.
  void Stop();

  size_t slots() const;

 private:
  const std::unique_ptr<Copier> copier_;
  const size_t depth_;
  mutable Mutex mu_;
  CondVar changed_;
  std::vector<std::unique_ptr<Slot>> slots_ GUARDED_BY(mu_);
  // Refilled oldest-released first, so every slot takes its turn and a slot's
  // previous device copy has had the longest time to finish.
  std::deque<Slot*> free_ GUARDED_BY(mu_);
  std::deque<Slot*> ready_ GUARDED_BY(mu_);  // oldest first
  size_t filling_ GUARDED_BY(mu_) = 0;
  bool stopped_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  Status end_ GUARDED_BY(mu_);  // once finished_
};

}  // namespace strata::staging_internal
