#include "server/serve/part_builder.h"

#include <algorithm>

namespace strata {

PartBuilder::PartBuilder(const v1::Batch& header, uint64_t max_part_bytes, std::vector<WirePart>* out,
                         bool indexed_labels)
    : header_(header), max_part_bytes_(max_part_bytes), out_(out), indexed_labels_(indexed_labels) {
  Start();
}

void PartBuilder::Add(uint32_t slot, uint64_t id, const RecordView& view, std::shared_ptr<const void> owner,
                      bool may_reference) {
  if (message().ids_size() > 0 && part_.payload_bytes() + view.payload.size() > max_part_bytes_) {
    out_->push_back(std::move(part_));
    Start();
  }
  v1::Batch& m = message();
  m.add_slots(slot);
  m.add_ids(id);
  if (indexed_labels_) {
    m.add_label_index(labels_.Of(view.label, m.mutable_label_names()));
    m.add_stratum_index(strata_.Of(view.stratum, m.mutable_stratum_names()));
  } else {
    m.add_labels(view.label.data(), view.label.size());
    m.add_strata(view.stratum.data(), view.stratum.size());
  }
  m.add_sizes(view.payload.size());
  m.add_layout_of(LayoutOf(view.field_names));
  for (uint64_t fs : view.field_sizes) m.add_field_sizes(fs);
  part_.AppendPayload(view.payload, std::move(owner), may_reference);
}

void PartBuilder::Finish() {
  message().set_last_part(true);
  out_->push_back(std::move(part_));
}

void PartBuilder::Start() {
  part_ = WirePart();
  message().CopyFrom(header_);
  last_layout_ = -1;
  layouts_.clear();
  labels_.Clear();
  strata_.Clear();
}

uint32_t PartBuilder::NameIndex::Of(std::string_view value, google::protobuf::RepeatedPtrField<std::string>* names) {
  const int n = names->size();
  if (n <= kCompared) {
    for (int i = 0; i < n; ++i) {
      if ((*names)[i] == value) return static_cast<uint32_t>(i);
    }
  } else if (auto it = by_name_.find(value); it != by_name_.end()) {
    return it->second;
  }
  names->Add()->assign(value.data(), value.size());
  if (n + 1 > kCompared) {
    // Past the names compared one by one: index every name not yet indexed.
    for (int i = static_cast<int>(by_name_.size()); i <= n; ++i)
      by_name_.emplace((*names)[i], static_cast<uint32_t>(i));
  }
  return static_cast<uint32_t>(n);
}

// Records of a dataset mostly share one layout: the last one is tried first.
uint32_t PartBuilder::LayoutOf(const std::vector<std::string_view>& names) {
  v1::Batch& m = message();
  auto same = [&](int l) {
    const auto& known = m.layouts(l).names();
    return std::equal(known.begin(), known.end(), names.begin(), names.end());
  };
  if (last_layout_ >= 0 && same(last_layout_)) return static_cast<uint32_t>(last_layout_);
  std::string joined;
  for (std::string_view n : names) {
    joined += n;
    joined += '\0';
  }
  auto [it, added] = layouts_.try_emplace(std::move(joined), m.layouts_size());
  if (added) {
    auto* copy = m.add_layouts()->mutable_names();
    for (std::string_view n : names) copy->Add()->assign(n.data(), n.size());
  }
  last_layout_ = static_cast<int>(it->second);
  return it->second;
}

}  // namespace strata
