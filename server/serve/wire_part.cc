#include "server/serve/wire_part.h"

#include <google/protobuf/io/coded_stream.h>

#include <string>

namespace strata {

namespace {

void ReleaseOwner(void* owner) { delete static_cast<std::shared_ptr<const void>*>(owner); }
void ReleaseString(void* s) { delete static_cast<std::string*>(s); }

// A slice that owns `s` (no copy of its bytes).
grpc::Slice SliceOf(std::string s) {
  auto* heap = new std::string(std::move(s));
  return grpc::Slice(heap->data(), heap->size(), ReleaseString, heap);
}

}  // namespace

namespace {

google::protobuf::ArenaOptions PartArenaOptions() {
  google::protobuf::ArenaOptions o;
  o.start_block_size = 16 << 10;
  o.max_block_size = 64 << 10;
  return o;
}

}  // namespace

WirePart::WirePart()
    : arena_(std::make_unique<google::protobuf::Arena>(PartArenaOptions())),
      message_(google::protobuf::Arena::CreateMessage<v1::Batch>(arena_.get())) {}

void WirePart::AppendPayload(std::string_view bytes, std::shared_ptr<const void> owner, bool may_reference) {
  // Consecutive pieces mostly share their owner (a step's pinned blocks): it
  // is kept once, with the first of them (no reference count per record).
  // (Every owner stays held by the piece that kept it, so no other owner can
  // take its address while this part lives.)
  if (owner.get() == last_owner_) {
    owner = nullptr;
  } else {
    last_owner_ = owner.get();
  }
  pieces_.push_back(Piece{bytes, std::move(owner), !may_reference || bytes.size() < kZeroCopyMinBytes});
  payload_bytes_ += bytes.size();
}

grpc::ByteBuffer WirePart::Follow(const grpc::ByteBuffer& head, const grpc::ByteBuffer& next) {
  std::vector<grpc::Slice> slices, more;
  (void)head.Dump(&slices);
  (void)next.Dump(&more);
  using google::protobuf::io::CodedOutputStream;
  constexpr uint32_t kLengthDelimited = 2;
  uint8_t key[20];
  uint8_t* end = CodedOutputStream::WriteVarint32ToArray(
      (static_cast<uint32_t>(v1::Batch::kFollowingFieldNumber) << 3) | kLengthDelimited, key);
  end = CodedOutputStream::WriteVarint64ToArray(next.Length(), end);
  slices.emplace_back(key, static_cast<size_t>(end - key));  // copied into the slice
  for (auto& m : more) slices.push_back(std::move(m));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

grpc::ByteBuffer WirePart::Serialize() const {
  // The message's own fields, then the payload field's key and length: the
  // start of the first gathered buffer.
  size_t small = 0;
  for (const Piece& p : pieces_) {
    if (p.gather) small += p.bytes.size();
  }
  const size_t message_bytes = message_->ByteSizeLong();
  std::string gathered;
  gathered.reserve(message_bytes + 20 + small);
  gathered.resize(message_bytes);
  message_->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(gathered.data()));
  if (payload_bytes_ > 0) {
    using google::protobuf::io::CodedOutputStream;
    constexpr uint32_t kLengthDelimited = 2;
    uint8_t key[20];  // two varints of at most 10 bytes each
    uint8_t* end = CodedOutputStream::WriteVarint32ToArray(
        (static_cast<uint32_t>(v1::Batch::kPayloadFieldNumber) << 3) | kLengthDelimited, key);
    end = CodedOutputStream::WriteVarint64ToArray(payload_bytes_, end);
    gathered.append(reinterpret_cast<const char*>(key), static_cast<size_t>(end - key));
  }
  std::vector<grpc::Slice> slices;
  const std::shared_ptr<const void>* owner = nullptr;  // of the current run of pieces
  for (const Piece& p : pieces_) {
    if (p.owner != nullptr) owner = &p.owner;
    if (p.gather) {
      gathered.append(p.bytes);
      small -= p.bytes.size();
      continue;
    }
    if (!gathered.empty()) {
      slices.push_back(SliceOf(std::move(gathered)));
      gathered = std::string();
      gathered.reserve(small);  // the small pieces still to come
    }
    // gRPC calls ReleaseOwner once the bytes have left; the mapping lives until then.
    slices.emplace_back(const_cast<char*>(p.bytes.data()), p.bytes.size(), ReleaseOwner,
                        new std::shared_ptr<const void>(owner != nullptr ? *owner : nullptr));
  }
  if (!gathered.empty()) slices.push_back(SliceOf(std::move(gathered)));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

v1::Batch WirePart::ToMessage() const {
  v1::Batch b = *message_;
  std::string* payload = b.mutable_payload();
  payload->reserve(payload_bytes_);
  for (const Piece& p : pieces_) payload->append(p.bytes);
  return b;
}

}  // namespace strata
