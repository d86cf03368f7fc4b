// Private to libstrata: how a stream fills a Batch from the parts servers
// send. A step's batch arrives as one or more v1::Batch parts whose `slots`
// place each sample in the rank's batch; parts may come in any order. A
// part's payload comes beside it (client/received_part.h), where it was
// received, and its bytes are copied once, to their place in the batch.
//
// Thread-safety: as Batch; one thread at a time per batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "client/received_part.h"
#include "strata/batch.h"
#include "strata/v1/data.pb.h"

namespace strata::client_internal {

class BatchAssembler {
 public:
  // Starts *batch over as an empty batch of `size` slots, keeping its buffers.
  static void Reset(Batch* batch, uint64_t epoch, uint64_t step, uint32_t rank, uint64_t dataset_version,
                    uint64_t steps_in_epoch, size_t size);
  // Adds a part (its fields but the payload) and its payload, taking their
  // buffers: a whole batch in slot order whose payload is a string of its own
  // is swapped in, leaving the batch's old buffer in *payload; any other is
  // kept (or copied, if whole) and joined in slot order once the batch is
  // complete. Returns false (and changes nothing) if a slot is out of range
  // or already filled, or the part is inconsistent (array lengths, sizes vs
  // payload, field sizes vs layouts).
  static bool AddPart(Batch* batch, v1::Batch* part, PartPayload* payload);
  // The same for a part whose payload is its own `payload` field; that field
  // holds the batch's old buffer afterwards (or, refused, its own bytes).
  static bool AddPart(Batch* batch, v1::Batch* part);
  // Removes the samples of `part` whose slots `batch` already holds (a part
  // sent again after a failover): a slot is filled once. *payload then holds
  // the kept samples' bytes only.
  static void DropFilled(const Batch& batch, v1::Batch* part, PartPayload* payload);
  static void DropFilled(const Batch& batch, v1::Batch* part);  // payload in `part`
  // Whether `part` holds a whole batch in slot order (which AddPart takes by
  // swap when its payload is a string of its own).
  static bool WholeInOrder(const v1::Batch& part);
  // Whether every slot is filled.
  static bool Complete(const Batch& batch) { return batch.filled_ == batch.ids_.size(); }
  // Whether `slot` has been filled. REQUIRES: slot < batch.size().
  static bool Filled(const Batch& batch, size_t slot) { return batch.slot_filled_[slot]; }
  // Every slot's flag, or null while no slot is filled.
  static const std::vector<bool>* FilledSlots(const Batch& batch) {
    return batch.filled_ == 0 ? nullptr : &batch.slot_filled_;
  }

 private:
  // Joins the kept parts into one payload in slot order.
  static void Finalize(Batch* batch);
};

}  // namespace strata::client_internal
