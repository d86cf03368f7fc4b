// Fuzzes ParsePart (client/received_part.h): the bytes a node sends a client
// as a Batch, split into its fields and its payload. The first input byte
// picks the size of the slices the rest arrives in.
// Properties: a part ParsePart accepts, protobuf accepts too, with the same
// fields, the same joined steps (Batch.following) and the same payloads; a
// range of a payload reads back the same bytes as protobuf's. Then assembly
// (client/batch_assembler.h), into a batch whose slot 0 is filled: DropFilled
// and AddPart read only what the part holds, and a part AddPart takes fills
// its slots with the labels it names.
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <string>
#include <vector>

#include "client/batch_assembler.h"
#include "client/received_part.h"
#include "fuzz/fuzz_support.h"

namespace {

// The payload split off reads as protobuf's, whole and in part; protobuf's
// is then cleared, for the caller to compare the remaining fields.
void SamePayload(const strata::client_internal::PartPayload& payload, strata::v1::Batch* protobuf_says) {
  using strata::fuzz::Fail;
  std::string all;
  payload.AppendTo(0, payload.size(), &all);
  if (all != protobuf_says->payload()) Fail("a payload differs from protobuf's");
  const uint64_t from = payload.size() / 3, len = payload.size() / 2;
  std::string some;
  payload.AppendTo(from, len, &some);
  if (some != protobuf_says->payload().substr(from, len)) Fail("a range of a payload differs from protobuf's");
  protobuf_says->clear_payload();
}

// Assembles the part into a batch of its batch_size (a small one) whose slot
// 0 another part filled first.
void Assemble(const strata::v1::Batch& fields, const strata::client_internal::PartPayload& payload) {
  using namespace strata;
  using client_internal::BatchAssembler;
  constexpr uint32_t kMaxBatch = 1024;
  if (fields.batch_size() == 0 || fields.batch_size() > kMaxBatch) return;
  Batch batch;
  BatchAssembler::Reset(&batch, 0, 0, 0, 0, 1, fields.batch_size());
  v1::Batch first;
  first.set_batch_size(fields.batch_size());
  first.add_slots(0);
  first.add_ids(0);
  first.add_labels("first");
  first.add_sizes(0);
  if (!BatchAssembler::AddPart(&batch, &first)) fuzz::Fail("a well-formed part is refused");
  v1::Batch part = fields;
  client_internal::PartPayload bytes = payload;
  BatchAssembler::DropFilled(batch, &part, &bytes);
  const v1::Batch kept = part;
  if (!BatchAssembler::AddPart(&batch, &part, &bytes)) return;
  for (int i = 0; i < kept.slots_size(); ++i) {
    const uint32_t slot = kept.slots(i);
    if (slot == 0 || !BatchAssembler::Filled(batch, slot)) fuzz::Fail("a part took slot 0 again, or left a slot empty");
    const std::string& label =
        kept.label_index_size() ? kept.label_names(static_cast<int>(kept.label_index(i))) : kept.labels(i);
    if (batch.labels()[slot] != label) fuzz::Fail("a slot's label is not the one its part names");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  if (size == 0) return 0;
  const size_t slice_bytes = 1 + data[0] % 64;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += slice_bytes) {
    slices.emplace_back(bytes.data() + at, std::min(slice_bytes, bytes.size() - at));
  }
  grpc::ByteBuffer buffer(slices.data(), slices.size());
  v1::Batch header;
  client_internal::PartPayload payload;
  std::vector<client_internal::ReceivedPart> joined;
  std::string scratch;
  if (!client_internal::ParsePart(&buffer, &header, &payload, &joined, &scratch).ok()) return 0;

  Assemble(header, payload);

  v1::Batch whole;
  if (!whole.ParseFromString(bytes)) fuzz::Fail("ParsePart accepted a part protobuf refuses");
  if (joined.size() != static_cast<size_t>(whole.following_size())) fuzz::Fail("a joined step is lost or added");
  SamePayload(payload, &whole);
  for (size_t i = 0; i < joined.size(); ++i) {
    v1::Batch* step = whole.mutable_following(static_cast<int>(i));
    SamePayload(joined[i].payload, step);
    if (!google::protobuf::util::MessageDifferencer::Equals(joined[i].fields, *step)) {
      fuzz::Fail("a joined step's fields differ from protobuf's");
    }
  }
  whole.clear_following();
  if (!google::protobuf::util::MessageDifferencer::Equals(header, whole)) {
    fuzz::Fail("the fields differ from protobuf's");
  }
  return 0;
}
