// Batch assembly. A step's batch arrives as one or more v1::Batch parts whose
// `slots` place each sample in the rank's batch. The common case, one part in
// slot order, takes the part's payload by swap; parts in any other shape are
// kept until the last slot is filled and then copied once, in slot order.
#include "strata/batch.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "strata/v1/data.pb.h"

namespace strata {

namespace {

constexpr uint32_t kNoLayout = std::numeric_limits<uint32_t>::max();

// Everything about a part except which slots are already filled: array
// lengths, slots in range, sizes summing to the payload, field sizes
// matching their layouts and summing to each sample's size.
bool PartIsConsistent(const v1::Batch& part, size_t batch_size) {
  if (part.batch_size() != batch_size) return false;
  const int n = part.slots_size();
  if (part.ids_size() != n || part.labels_size() != n || part.sizes_size() != n) return false;
  if (part.strata_size() != 0 && part.strata_size() != n) return false;
  if (part.layout_of_size() != 0 && part.layout_of_size() != n) return false;

  const uint64_t payload_size = part.payload().size();
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) {
    if (part.slots(i) >= batch_size) return false;
    if (part.sizes(i) > payload_size - total) return false;
    total += part.sizes(i);
  }
  if (total != payload_size) return false;

  // Without layout_of the samples carry no field information at all.
  if (part.layout_of_size() == 0) return part.field_sizes_size() == 0;
  int next_field = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t layout = part.layout_of(i);
    if (layout >= static_cast<uint32_t>(part.layouts_size())) return false;
    uint64_t sample_bytes = 0;
    for (int k = 0; k < part.layouts(static_cast<int>(layout)).names_size(); ++k, ++next_field) {
      if (next_field >= part.field_sizes_size()) return false;
      const uint64_t field_bytes = part.field_sizes(next_field);
      if (field_bytes > part.sizes(i) - sample_bytes) return false;
      sample_bytes += field_bytes;
    }
    if (sample_bytes != part.sizes(i)) return false;
  }
  return next_field == part.field_sizes_size();
}

bool SlotsInOrder(const v1::Batch& part) {
  for (int i = 0; i < part.slots_size(); ++i) {
    if (part.slots(i) != static_cast<uint32_t>(i)) return false;
  }
  return true;
}

}  // namespace

void Batch::Reset(uint64_t epoch, uint64_t step, uint32_t rank, uint64_t dataset_version, uint64_t steps_in_epoch,
                  size_t size) {
  epoch_ = epoch;
  step_ = step;
  rank_ = rank;
  dataset_version_ = dataset_version;
  steps_in_epoch_ = steps_in_epoch;
  // labels_, strata_ and field_sizes_ keep their elements (and capacity):
  // AddPart overwrites every slot it fills.
  ids_.assign(size, 0);
  labels_.resize(size);
  strata_.resize(size);
  offsets_.assign(size, 0);
  sizes_.assign(size, 0);
  field_names_per_layout_.clear();
  layout_of_.assign(size, kNoLayout);
  field_sizes_.resize(size);
  payload_.clear();
  filled_ = 0;
  slot_filled_.assign(size, false);
  part_payloads_.clear();
  part_of_.assign(size, 0);
}

bool Batch::AddPart(v1::Batch* part) {
  if (!PartIsConsistent(*part, size())) return false;
  const int n = part->slots_size();
  // An empty part (a server with no sample of this step, saying it is done)
  // adds nothing; in particular it must not finalise a complete batch again.
  if (n == 0) return true;
  for (int i = 0; i < n; ++i) {
    const uint32_t slot = part->slots(i);
    if (slot_filled_[slot]) {  // filled before, or twice in this part: undo and refuse
      for (int j = 0; j < i; ++j) slot_filled_[part->slots(j)] = false;
      return false;
    }
    slot_filled_[slot] = true;
  }

  // The part's layouts, mapped to this batch's list (parts may order them differently).
  std::vector<uint32_t> layout_index(static_cast<size_t>(part->layouts_size()));
  for (int l = 0; l < part->layouts_size(); ++l) {
    const auto& names = part->layouts(l).names();
    auto same = [&](const std::vector<std::string>& known) {
      return std::equal(known.begin(), known.end(), names.begin(), names.end());
    };
    auto it = std::find_if(field_names_per_layout_.begin(), field_names_per_layout_.end(), same);
    if (it == field_names_per_layout_.end()) {
      field_names_per_layout_.emplace_back(names.begin(), names.end());
      it = std::prev(field_names_per_layout_.end());
    }
    layout_index[static_cast<size_t>(l)] = static_cast<uint32_t>(it - field_names_per_layout_.begin());
  }

  const bool whole = filled_ == 0 && static_cast<size_t>(n) == size() && SlotsInOrder(*part);
  const auto part_index = static_cast<uint32_t>(part_payloads_.size());
  uint64_t offset = 0;  // within this part's payload
  int next_field = 0;
  for (int i = 0; i < n; ++i) {
    const size_t slot = part->slots(i);
    ids_[slot] = part->ids(i);
    labels_[slot].swap(*part->mutable_labels(i));
    if (part->strata_size() != 0) {
      strata_[slot].swap(*part->mutable_strata(i));
    } else {
      strata_[slot].clear();
    }
    sizes_[slot] = part->sizes(i);
    offsets_[slot] = offset;
    part_of_[slot] = part_index;
    offset += part->sizes(i);
    field_sizes_[slot].clear();
    if (part->layout_of_size() != 0) {
      const uint32_t layout = part->layout_of(i);
      layout_of_[slot] = layout_index[layout];
      const int fields = part->layouts(static_cast<int>(layout)).names_size();
      field_sizes_[slot].assign(part->field_sizes().begin() + next_field,
                                part->field_sizes().begin() + next_field + fields);
      next_field += fields;
    } else {
      layout_of_[slot] = kNoLayout;
    }
  }
  filled_ += static_cast<size_t>(n);

  if (whole) {
    // Slots 0..n-1 in order: the part's payload is the batch's, offsets included.
    payload_.swap(*part->mutable_payload());
  } else {
    part_payloads_.push_back(std::move(*part->mutable_payload()));
    if (Complete()) Finalize();
  }
  return true;
}

// Joins the kept parts into one payload in slot order: the one copy a
// multi-part batch costs.
void Batch::Finalize() {
  uint64_t total = 0;
  for (uint64_t s : sizes_) total += s;
  payload_.clear();
  payload_.reserve(total);
  for (size_t slot = 0; slot < size(); ++slot) {
    const std::string& from = part_payloads_[part_of_[slot]];
    const uint64_t offset = payload_.size();
    payload_.append(from, offsets_[slot], sizes_[slot]);
    offsets_[slot] = offset;
  }
  part_payloads_.clear();
}

std::span<const std::string> Batch::field_names(size_t i) const {
  if (i >= layout_of_.size() || layout_of_[i] == kNoLayout) return {};
  return field_names_per_layout_[layout_of_[i]];
}

std::string_view Batch::field(size_t i, std::string_view name) const {
  const std::span<const std::string> names = field_names(i);
  uint64_t offset = offsets_[i];
  for (size_t k = 0; k < names.size(); ++k) {
    if (names[k] == name) return std::string_view(payload_).substr(offset, field_sizes_[i][k]);
    offset += field_sizes_[i][k];
  }
  return {};
}

}  // namespace strata
