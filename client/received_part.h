// Private to libstrata: a part (v1::Batch) as a client receives it. Its
// fields other than the payload are parsed; its payload stays in the buffers
// gRPC received it in, until the batch it belongs to is assembled and its
// bytes are copied, once, to their place in the batch's payload.
//
// Parsing a part with protobuf copies its payload out of gRPC's buffers into
// the part's string; a batch made of several parts (one per node) then
// copied every byte again to join them in slot order. Splitting the part
// here leaves one copy per byte whatever the number of parts.
//
// Thread-safety: a PartPayload is a value; one thread at a time.
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "strata/v1/data.pb.h"

namespace strata::client_internal {

// The bytes of a received message, shared by the parts split from it.
struct ReceivedMessage {
  std::vector<grpc::Slice> slices;  // referenced, not copied
  std::vector<uint64_t> starts;     // where each slice starts in the message
};

// A part's payload bytes: a range of a received message, or a string of
// its own.
class PartPayload {
 public:
  PartPayload() = default;
  // A payload held in a string (a part built in memory).
  static PartPayload Owning(std::string bytes);

  uint64_t size() const { return size_; }
  // Appends bytes [offset, offset + len) to *out. REQUIRES: offset + len <= size().
  void AppendTo(uint64_t offset, uint64_t len, std::string* out) const;
  // Whether the payload is a string of its own (then SwapOwned and
  // TakeOwned give it without copying).
  bool owning() const { return message_ == nullptr; }
  // The owned string, leaving this payload empty. REQUIRES: owning().
  std::string TakeOwned();
  // Makes the payload a string of its own: its bytes are copied into
  // `buffer`, whose capacity is reused, which it then holds.
  void Own(std::string buffer);
  // Swaps the owned string with *other. REQUIRES: owning().
  void SwapOwned(std::string* other) {
    owned_.swap(*other);
    size_ = owned_.size();
  }

 private:
  friend class PartSplitter;

  std::string owned_;
  std::shared_ptr<const ReceivedMessage> message_;  // null: owned_ holds the bytes
  uint64_t begin_ = 0;                              // where the payload starts in the message
  uint64_t size_ = 0;
};

// A part split from a received message.
struct ReceivedPart {
  v1::Batch fields;  // every field but the payload
  PartPayload payload;
};

// Splits a serialized v1::Batch: every field but `payload` and `following`
// is parsed into *header (replacing what it held; a recycled header keeps
// its elements' capacity), and the payload is left in `buffer`'s slices,
// referenced by *payload. Each step the node joined into the message
// (Batch.following) is split the same way into *joined, in order: it is
// resized to their number, and the fields of elements it already held are
// replaced (recycled messages keep their capacity). A joined step's own
// `following` (which no node may send) stays in its fields, unsplit. As
// protobuf, a payload field given twice takes the last. Returns
// InvalidArgument for bytes that are not a well-formed Batch: a truncated or
// overlong varint or length (a tag or length in more than the 5 bytes
// protobuf reads), field number 0, group wire types (a Batch has no groups),
// messages nested deeper than protobuf allows in the whole message, or
// fields protobuf refuses. What it accepts, protobuf parsing the whole
// message accepts too (fuzz/received_part_fuzzer.cc). *header and *joined
// may then hold anything, *payload is unchanged. `scratch` holds the other
// fields' bytes while they are parsed (kept by callers for its capacity).
Status ParsePart(grpc::ByteBuffer* buffer, v1::Batch* header, PartPayload* payload, std::vector<ReceivedPart>* joined,
                 std::string* scratch);

}  // namespace strata::client_internal
