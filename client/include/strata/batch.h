// A batch: one rank's samples for one step, with their payloads in one buffer.
//
// Sample i's payload is payload()[offset(i), offset(i) + size(i)); if the
// sample has several fields (WebDataset style: "jpg", "cls"), they lie back to
// back in that range in field_names(i) order.
//
// Thread-safety: a Batch is a value; not safe for concurrent mutation.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

namespace client_internal {
class BatchAssembler;
class PartPayload;
}  // namespace client_internal

class Batch {
 public:
  Batch() = default;

  uint64_t epoch() const { return epoch_; }
  uint64_t step() const { return step_; }
  uint32_t rank() const { return rank_; }
  uint64_t dataset_version() const { return dataset_version_; }
  uint64_t steps_in_epoch() const { return steps_in_epoch_; }

  // Number of samples.
  size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }

  const std::vector<uint64_t>& ids() const { return ids_; }
  const std::vector<std::string>& labels() const { return labels_; }
  const std::vector<std::string>& strata() const { return strata_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  const std::vector<uint64_t>& sizes() const { return sizes_; }

  // The whole payload buffer.
  std::string_view payload() const { return payload_; }
  // The buffer itself, for zero-copy hand-off (numpy, DLPack, pinned staging).
  const std::string& payload_buffer() const { return payload_; }

  // Sample i's payload. REQUIRES: i < size().
  std::string_view sample(size_t i) const { return std::string_view(payload_).substr(offsets_[i], sizes_[i]); }
  // Sample i's field names, in payload order.
  std::span<const std::string> field_names(size_t i) const;
  // Sample i's field `name`, or an empty view if it has none.
  std::string_view field(size_t i, std::string_view name) const;

  // Total payload bytes.
  uint64_t payload_bytes() const { return payload_.size(); }

 private:
  // Streams fill batches from the parts servers send (client/batch_assembler.h).
  friend class client_internal::BatchAssembler;

  uint64_t epoch_ = 0;
  uint64_t step_ = 0;
  uint32_t rank_ = 0;
  uint64_t dataset_version_ = 0;
  uint64_t steps_in_epoch_ = 0;
  std::vector<uint64_t> ids_;
  std::vector<std::string> labels_;
  std::vector<std::string> strata_;
  std::vector<uint64_t> offsets_;
  std::vector<uint64_t> sizes_;
  std::vector<std::vector<std::string>> field_names_per_layout_;
  std::vector<uint32_t> layout_of_;
  std::vector<std::vector<uint64_t>> field_sizes_;
  std::string payload_;
  size_t filled_ = 0;
  std::vector<bool> slot_filled_;
  // Assembly from several parts: each part's payload is kept (where it was
  // received) until the batch is complete; meanwhile part_of_[slot] names the
  // part holding that sample and offsets_[slot] is its offset within that
  // part's payload.
  std::vector<std::shared_ptr<client_internal::PartPayload>> part_payloads_;
  std::vector<uint32_t> part_of_;
};

}  // namespace strata
