// Packs one step's samples, as they are read, into Batch parts for the wire.
//
// A part holds at most `max_part_bytes` of payload, and at least one sample
// (a sample larger than the limit goes alone). Every part's message starts as
// a copy of the step's header (epoch, step, rank, version, plan hash, node);
// Add appends a sample's fields and its payload (WirePart::AppendPayload), and
// records the sample's field names once per part as a layout that samples
// refer to by index. With indexed_labels (the client asked for them so:
// StreamRequest.indexed_labels), labels and strata are named once per part
// too (Batch.label_names and label_index, stratum_names and stratum_index);
// else every sample's are strings. Finish marks the last part as the end of
// this server's share of the step.
//
// Thread-safety: none; one builder per step being built.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/serve/wire_part.h"
#include "server/storage/shard_format.h"
#include "strata/v1/data.pb.h"

namespace strata {

class PartBuilder {
 public:
  // `header` holds the Batch's per-step fields only; it must outlive the
  // builder. Parts are appended to *out.
  PartBuilder(const v1::Batch& header, uint64_t max_part_bytes, std::vector<WirePart>* out,
              bool indexed_labels = false);

  // Appends sample `id` (its dense id in the version, which its record may
  // count otherwise: ShardInfo.id_offset). `owner` keeps view.payload valid
  // until the part has been written; without may_reference the payload is
  // copied into the part.
  void Add(uint32_t slot, uint64_t id, const RecordView& view, std::shared_ptr<const void> owner,
           bool may_reference = true);
  // Emits the last part, marked last_part.
  void Finish();

 private:
  v1::Batch& message() { return part_.message(); }
  void Start();
  // The index in this part's layouts of a sample's field names, added if new.
  uint32_t LayoutOf(const std::vector<std::string_view>& names);

  // The distinct values of one of a part's name lists (label_names or
  // stratum_names), for finding a sample's: a few are compared one by one,
  // more are looked up by hash.
  class NameIndex {
   public:
    // The position of `value` in *names, appended if new.
    uint32_t Of(std::string_view value, google::protobuf::RepeatedPtrField<std::string>* names);
    void Clear() { by_name_.clear(); }

   private:
    static constexpr int kCompared = 8;  // up to this many names, no hash
    // Views of the strings in *names (which stay where they are while the
    // part is built), once there are more than kCompared.
    std::unordered_map<std::string_view, uint32_t> by_name_;
  };

  const v1::Batch& header_;
  const uint64_t max_part_bytes_;
  std::vector<WirePart>* out_;
  const bool indexed_labels_;
  NameIndex labels_, strata_;
  WirePart part_;
  std::map<std::string, uint32_t> layouts_;  // joined field names -> index in this part
  int last_layout_ = -1;                     // the layout the last sample used, in this part
};

}  // namespace strata
