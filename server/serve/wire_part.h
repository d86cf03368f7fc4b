// A Batch part as it goes on the wire, without copying payload bytes on the
// server.
//
// `message` holds every field of the v1::Batch but the payload; the payload is
// a list of pieces, each a view of record bytes that stays valid while its
// owner lives (a shard reader whose file is mapped, or a record a peer sent).
// Serialize() lays the protobuf encoding of the whole Batch out as gRPC
// slices: the encoded message, the payload field's tag and length, then the
// pieces themselves. Protobuf parses a message from the concatenation of its
// fields' encodings, so the client sees an ordinary Batch. Pieces of at least
// kZeroCopyMinBytes become slices that reference the mapped bytes (gRPC
// releases the owner once the bytes are on the socket), unless the caller says
// they may not be referenced; smaller neighbours are gathered into one buffer,
// one copy, because a slice per kilobyte costs more than copying it.
//
// Thread-safety: a WirePart is a value; Serialize() may run on any thread.
#pragma once

#include <google/protobuf/arena.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "strata/v1/data.pb.h"

namespace strata {

class WirePart {
 public:
  static constexpr size_t kZeroCopyMinBytes = 16 * 1024;

  // The message lives in an arena of its own: a part of 256 samples holds
  // two strings per sample (label and stratum), which would otherwise cost an
  // allocation and a free each.
  WirePart();

  v1::Batch& message() { return *message_; }
  const v1::Batch& message() const { return *message_; }
  uint64_t payload_bytes() const { return payload_bytes_; }

  // Appends `bytes` to the payload. `owner` keeps them valid. Without
  // may_reference the bytes are copied when the part is serialised, whatever
  // their size, so that nothing refers to them once Serialize returns.
  void AppendPayload(std::string_view bytes, std::shared_ptr<const void> owner, bool may_reference = true);

  // The encoding of the Batch with its payload. REQUIRES: message().payload() is empty.
  grpc::ByteBuffer Serialize() const;

  // `head` (a serialised Batch) with `next` (another) appended as one more
  // entry of its `following` field: the slices are shared, not copied.
  static grpc::ByteBuffer Follow(const grpc::ByteBuffer& head, const grpc::ByteBuffer& next);

  // The Batch with its payload copied in: for in-process callers and tests.
  v1::Batch ToMessage() const;

 private:
  struct Piece {
    std::string_view bytes;
    std::shared_ptr<const void> owner;  // null: the last piece's before it that has one
    bool gather;                        // copied into a gathered buffer, not referenced
  };
  std::unique_ptr<google::protobuf::Arena> arena_;
  v1::Batch* message_;  // in *arena_
  std::vector<Piece> pieces_;
  uint64_t payload_bytes_ = 0;
  const void* last_owner_ = nullptr;  // the owner the pieces appended last share
};

}  // namespace strata
