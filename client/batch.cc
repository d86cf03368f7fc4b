// Batch, and its assembly (client/batch_assembler.h). A step's batch arrives
// as one or more v1::Batch parts whose `slots` place each sample in the
// rank's batch. Each byte of a payload is copied once, from where it was
// received to its place in the batch: one part in slot order at once, parts
// in any other shape when the last slot is filled, in slot order. A part
// whose payload is a string of its own, whole and in order, is swapped in.
#include "strata/batch.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "client/batch_assembler.h"

namespace strata {

namespace {

constexpr uint32_t kNoLayout = std::numeric_limits<uint32_t>::max();

bool Indexed(int names, int indexes) { return names != 0 || indexes != 0; }

// An index per sample, each naming one of `names` entries.
bool IndexesFit(const google::protobuf::RepeatedField<uint32_t>& indexes, int names, int samples) {
  if (indexes.size() != samples) return false;
  return std::all_of(indexes.begin(), indexes.end(), [&](uint32_t i) { return i < static_cast<uint32_t>(names); });
}

// Everything about a part except which slots are already filled: array
// lengths, slots in range, sizes summing to the payload, field sizes
// matching their layouts and summing to each sample's size.
bool PartIsConsistent(const v1::Batch& part, uint64_t payload_size, size_t batch_size) {
  if (part.batch_size() != batch_size) return false;
  const int n = part.slots_size();
  if (part.ids_size() != n || part.sizes_size() != n) return false;
  // Labels: a string per sample, or named once per part (an index per sample).
  if (Indexed(part.label_names_size(), part.label_index_size())) {
    if (part.labels_size() != 0 || !IndexesFit(part.label_index(), part.label_names_size(), n)) return false;
  } else if (part.labels_size() != n) {
    return false;
  }
  // Strata the same, or none at all.
  if (Indexed(part.stratum_names_size(), part.stratum_index_size())) {
    if (part.strata_size() != 0 || !IndexesFit(part.stratum_index(), part.stratum_names_size(), n)) return false;
  } else if (part.strata_size() != 0 && part.strata_size() != n) {
    return false;
  }
  if (part.layout_of_size() != 0 && part.layout_of_size() != n) return false;

  uint64_t total = 0;
  for (int i = 0; i < n; ++i) {
    if (part.slots(i) >= batch_size) return false;
    if (part.sizes(i) > payload_size - total) return false;
    total += part.sizes(i);
  }
  if (total != payload_size) return false;

  // Without layout_of the samples carry no field information at all.
  if (part.layout_of_size() == 0) return part.field_sizes_size() == 0;
  std::vector<int> fields_of(static_cast<size_t>(part.layouts_size()));  // field count per layout
  for (int l = 0; l < part.layouts_size(); ++l) fields_of[static_cast<size_t>(l)] = part.layouts(l).names_size();
  int next_field = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t layout = part.layout_of(i);
    if (layout >= fields_of.size()) return false;
    uint64_t sample_bytes = 0;
    for (int k = 0; k < fields_of[layout]; ++k, ++next_field) {
      if (next_field >= part.field_sizes_size()) return false;
      const uint64_t field_bytes = part.field_sizes(next_field);
      if (field_bytes > part.sizes(i) - sample_bytes) return false;
      sample_bytes += field_bytes;
    }
    if (sample_bytes != part.sizes(i)) return false;
  }
  return next_field == part.field_sizes_size();
}

}  // namespace

bool client_internal::BatchAssembler::WholeInOrder(const v1::Batch& part) {
  if (static_cast<uint64_t>(part.slots_size()) != part.batch_size() || part.slots_size() == 0) return false;
  for (int i = 0; i < part.slots_size(); ++i) {
    if (part.slots(i) != static_cast<uint32_t>(i)) return false;
  }
  return true;
}

void client_internal::BatchAssembler::Reset(Batch* b, uint64_t epoch, uint64_t step, uint32_t rank,
                                            uint64_t dataset_version, uint64_t steps_in_epoch, size_t size) {
  b->epoch_ = epoch;
  b->step_ = step;
  b->rank_ = rank;
  b->dataset_version_ = dataset_version;
  b->steps_in_epoch_ = steps_in_epoch;
  // labels_, strata_ and field_sizes_ keep their elements (and capacity):
  // AddPart overwrites every slot it fills.
  b->ids_.assign(size, 0);
  b->labels_.resize(size);
  b->strata_.resize(size);
  b->offsets_.assign(size, 0);
  b->sizes_.assign(size, 0);
  b->field_names_per_layout_.clear();
  b->layout_of_.assign(size, kNoLayout);
  b->field_sizes_.resize(size);
  b->payload_.clear();
  b->filled_ = 0;
  b->slot_filled_.assign(size, false);
  b->part_payloads_.clear();
  b->part_of_.assign(size, 0);
}

bool client_internal::BatchAssembler::AddPart(Batch* b, v1::Batch* part) {
  PartPayload payload = PartPayload::Owning(std::move(*part->mutable_payload()));
  const bool added = AddPart(b, part, &payload);
  *part->mutable_payload() = payload.TakeOwned();  // refused: its bytes; swapped: the batch's old buffer
  return added;
}

bool client_internal::BatchAssembler::AddPart(Batch* b, v1::Batch* part, PartPayload* payload) {
  if (!PartIsConsistent(*part, payload->size(), b->size())) return false;
  const int n = part->slots_size();
  // An empty part (a server with no sample of this step, saying it is done)
  // adds nothing; in particular it must not finalise a complete batch again.
  if (n == 0) return true;
  for (int i = 0; i < n; ++i) {
    const uint32_t slot = part->slots(i);
    if (b->slot_filled_[slot]) {  // filled before, or twice in this part: undo and refuse
      for (int j = 0; j < i; ++j) b->slot_filled_[part->slots(j)] = false;
      return false;
    }
    b->slot_filled_[slot] = true;
  }

  // The part's layouts, mapped to this batch's list (parts may order them differently).
  std::vector<uint32_t> layout_index(static_cast<size_t>(part->layouts_size()));
  std::vector<int> fields_of(layout_index.size());  // field count per layout of the part
  for (int l = 0; l < part->layouts_size(); ++l) {
    const auto& names = part->layouts(l).names();
    auto same = [&](const std::vector<std::string>& known) {
      return std::equal(known.begin(), known.end(), names.begin(), names.end());
    };
    auto it = std::find_if(b->field_names_per_layout_.begin(), b->field_names_per_layout_.end(), same);
    if (it == b->field_names_per_layout_.end()) {
      b->field_names_per_layout_.emplace_back(names.begin(), names.end());
      it = std::prev(b->field_names_per_layout_.end());
    }
    layout_index[static_cast<size_t>(l)] = static_cast<uint32_t>(it - b->field_names_per_layout_.begin());
    fields_of[static_cast<size_t>(l)] = names.size();
  }

  const bool whole = b->filled_ == 0 && WholeInOrder(*part);
  const auto part_index = static_cast<uint32_t>(b->part_payloads_.size());
  uint64_t offset = 0;  // within this part's payload
  int next_field = 0;
  for (int i = 0; i < n; ++i) {
    const size_t slot = part->slots(i);
    b->ids_[slot] = part->ids(i);
    if (part->label_index_size() != 0) {
      b->labels_[slot] = part->label_names(static_cast<int>(part->label_index(i)));
    } else {
      b->labels_[slot].swap(*part->mutable_labels(i));
    }
    if (part->stratum_index_size() != 0) {
      b->strata_[slot] = part->stratum_names(static_cast<int>(part->stratum_index(i)));
    } else if (part->strata_size() != 0) {
      b->strata_[slot].swap(*part->mutable_strata(i));
    } else {
      b->strata_[slot].clear();
    }
    b->sizes_[slot] = part->sizes(i);
    b->offsets_[slot] = offset;
    b->part_of_[slot] = part_index;
    offset += part->sizes(i);
    b->field_sizes_[slot].clear();
    if (part->layout_of_size() != 0) {
      const uint32_t layout = part->layout_of(i);
      b->layout_of_[slot] = layout_index[layout];
      const int fields = fields_of[layout];
      b->field_sizes_[slot].assign(part->field_sizes().begin() + next_field,
                                   part->field_sizes().begin() + next_field + fields);
      next_field += fields;
    } else {
      b->layout_of_[slot] = kNoLayout;
    }
  }
  b->filled_ += static_cast<size_t>(n);

  if (whole && payload->owning()) {
    // Slots 0..n-1 in order: the part's payload is the batch's, offsets included.
    payload->SwapOwned(&b->payload_);
  } else if (whole) {     // received: copied once, here (readers mostly make such payloads strings first)
    b->payload_.clear();  // keeps its capacity
    b->payload_.reserve(payload->size());
    payload->AppendTo(0, payload->size(), &b->payload_);
  } else {
    b->part_payloads_.push_back(std::make_shared<PartPayload>(std::move(*payload)));
    *payload = PartPayload();
    if (Complete(*b)) Finalize(b);
  }
  return true;
}

void client_internal::BatchAssembler::DropFilled(const Batch& batch, v1::Batch* part) {
  PartPayload payload = PartPayload::Owning(std::move(*part->mutable_payload()));
  DropFilled(batch, part, &payload);
  *part->mutable_payload() = payload.TakeOwned();
}

void client_internal::BatchAssembler::DropFilled(const Batch& batch, v1::Batch* part, PartPayload* payload) {
  bool any = false;
  for (uint32_t slot : part->slots()) any = any || (slot < batch.size() && Filled(batch, slot));
  // A part that repeats no slot (nearly every one) is left for AddPart to
  // check; an inconsistent one is left whole, for AddPart to refuse.
  if (!any || !PartIsConsistent(*part, payload->size(), batch.size())) return;
  v1::Batch kept;
  kept.CopyFrom(*part);  // with label_names and stratum_names
  kept.clear_slots();
  kept.clear_ids();
  kept.clear_labels();
  kept.clear_label_index();
  kept.clear_stratum_index();
  kept.clear_sizes();
  kept.clear_layout_of();
  kept.clear_field_sizes();
  kept.clear_strata();
  kept.clear_payload();
  std::string kept_bytes;
  uint64_t offset = 0;
  int field = 0;
  for (int i = 0; i < part->slots_size(); ++i) {
    const int fields = part->layout_of_size() ? part->layouts(static_cast<int>(part->layout_of(i))).names_size() : 0;
    const uint32_t slot = part->slots(i);
    if (!Filled(batch, slot)) {
      kept.add_slots(slot);
      kept.add_ids(part->ids(i));
      if (part->label_index_size()) {
        kept.add_label_index(part->label_index(i));
      } else {
        kept.add_labels(part->labels(i));
      }
      kept.add_sizes(part->sizes(i));
      if (part->layout_of_size()) kept.add_layout_of(part->layout_of(i));
      if (part->stratum_index_size()) {
        kept.add_stratum_index(part->stratum_index(i));
      } else if (part->strata_size()) {
        kept.add_strata(part->strata(i));
      }
      for (int k = 0; k < fields; ++k) kept.add_field_sizes(part->field_sizes(field + k));
      payload->AppendTo(offset, part->sizes(i), &kept_bytes);
    }
    offset += part->sizes(i);
    field += fields;
  }
  *part = std::move(kept);
  *payload = PartPayload::Owning(std::move(kept_bytes));
}

// Joins the kept parts into one payload in slot order: the one copy of their
// bytes. Slots that follow each other in one part are copied as one run.
void client_internal::BatchAssembler::Finalize(Batch* b) {
  uint64_t total = 0;
  for (uint64_t s : b->sizes_) total += s;
  b->payload_.clear();
  b->payload_.reserve(total);
  uint32_t run_part = 0;
  uint64_t run_from = 0, run_bytes = 0;
  const auto copy_run = [&] {
    if (run_bytes != 0) b->part_payloads_[run_part]->AppendTo(run_from, run_bytes, &b->payload_);
  };
  uint64_t offset = 0;  // in the joined payload
  for (size_t slot = 0; slot < b->size(); ++slot) {
    const uint32_t part = b->part_of_[slot];
    const uint64_t from = b->offsets_[slot];
    if (part != run_part || from != run_from + run_bytes) {
      copy_run();
      run_part = part;
      run_from = from;
      run_bytes = 0;
    }
    run_bytes += b->sizes_[slot];
    b->offsets_[slot] = offset;
    offset += b->sizes_[slot];
  }
  copy_run();
  b->part_payloads_.clear();
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
