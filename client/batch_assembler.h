// Private to libstrata: how a stream fills a Batch from the parts servers
// send. A step's batch arrives as one or more v1::Batch parts whose `slots`
// place each sample in the rank's batch; parts may come in any order.
//
// Thread-safety: as Batch; one thread at a time per batch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/batch.h"
#include "strata/v1/data.pb.h"

namespace strata::client_internal {

class BatchAssembler {
 public:
  // Starts *batch over as an empty batch of `size` slots, keeping its buffers.
  static void Reset(Batch* batch, uint64_t epoch, uint64_t step, uint32_t rank, uint64_t dataset_version,
                    uint64_t steps_in_epoch, size_t size);
  // Adds a part, taking its buffers (it may swap them out). Returns false (and
  // changes nothing) if a slot is out of range or already filled, or the part
  // is inconsistent (array lengths, sizes vs payload, field sizes vs layouts).
  static bool AddPart(Batch* batch, v1::Batch* part);
  // Removes the samples of `part` whose slots `batch` already holds (a part
  // sent again after a failover): a slot is filled once.
  static void DropFilled(const Batch& batch, v1::Batch* part);
  // Whether every slot is filled.
  static bool Complete(const Batch& batch) { return batch.filled_ == batch.ids_.size(); }
  // Whether `slot` has been filled. REQUIRES: slot < batch.size().
  static bool Filled(const Batch& batch, size_t slot) { return batch.slot_filled_[slot]; }

 private:
  // Joins the kept parts into one payload in slot order.
  static void Finalize(Batch* batch);
};

}  // namespace strata::client_internal
