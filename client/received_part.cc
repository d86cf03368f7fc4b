// ParsePart and PartPayload (client/received_part.h): a top-level walk of the
// protobuf wire format that sets the payload (and the joined steps, walked
// the same way) aside and hands every other field to protobuf.
#include "client/received_part.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <limits>
#include <utility>

namespace strata::client_internal {

namespace {

constexpr uint64_t kPayloadField = 15;    // v1::Batch.payload
constexpr uint64_t kFollowingField = 19;  // v1::Batch.following
// What protobuf accepts in the tag and length of a field this walk cuts out
// (the payload, a joined step), which it never sees: a tag in at most 5
// bytes, a length in at most 5 bytes and at most 16 bytes (its parser's
// slop) short of 2 GiB.
constexpr uint64_t kMaxTagBytes = 5;
constexpr uint64_t kMaxLengthBytes = 5;
constexpr uint64_t kMaxLength = std::numeric_limits<int32_t>::max() - 16;

// Appends bytes [at, at + len) of `m`. REQUIRES: the range lies inside it.
void AppendRange(const ReceivedMessage& m, uint64_t at, uint64_t len, std::string* out) {
  if (len == 0) return;
  auto i = static_cast<size_t>(std::upper_bound(m.starts.begin(), m.starts.end(), at) - m.starts.begin()) - 1;
  while (len > 0) {
    const grpc::Slice& slice = m.slices[i];
    const uint64_t offset = at - m.starts[i];
    const uint64_t n = std::min<uint64_t>(len, slice.size() - offset);
    out->append(reinterpret_cast<const char*>(slice.begin()) + offset, n);
    at += n;
    len -= n;
    ++i;
  }
}

// Reads bytes [begin, end) of a message in order, across its slices.
class Cursor {
 public:
  Cursor(const ReceivedMessage& m, uint64_t begin, uint64_t end) : slices_(m.slices), position_(begin), limit_(end) {
    if (begin < end) {
      index_ = static_cast<size_t>(std::upper_bound(m.starts.begin(), m.starts.end(), begin) - m.starts.begin()) - 1;
      offset_ = begin - m.starts[index_];
    }
  }

  uint64_t position() const { return position_; }
  bool AtEnd() const { return position_ >= limit_; }
  // A base-128 varint of at most 64 bits (10 bytes).
  bool Varint(uint64_t* value) {
    // Most varints lie whole in one slice, well inside the message: read
    // them straight from it.
    if (index_ < slices_.size() && slices_[index_].size() - offset_ >= 10 && limit_ - position_ >= 10) {
      const uint8_t* at = slices_[index_].begin() + offset_;
      uint64_t result = 0;
      for (int i = 0; i < 10; ++i) {
        const uint64_t byte = at[i];
        if (i == 9 && byte > 1) return false;  // more than 64 bits
        result |= (byte & 0x7Fu) << (7 * i);
        if ((byte & 0x80u) == 0) {
          offset_ += static_cast<size_t>(i) + 1;
          position_ += static_cast<uint64_t>(i) + 1;
          *value = result;
          return true;
        }
      }
    }
    uint64_t result = 0;
    for (int shift = 0; shift <= 63; shift += 7) {
      uint8_t byte = 0;
      if (!Byte(&byte)) return false;
      if (shift == 63 && byte > 1) return false;  // more than 64 bits
      result |= uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80u) == 0) {
        *value = result;
        return true;
      }
    }
    return false;
  }
  bool Skip(uint64_t n) {
    if (n > limit_ - position_) return false;
    position_ += n;
    while (n > 0) {
      SkipEmpty();
      const uint64_t here = std::min<uint64_t>(n, slices_[index_].size() - offset_);
      offset_ += here;
      n -= here;
    }
    return true;
  }

 private:
  void SkipEmpty() {
    while (offset_ == slices_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }
  bool Byte(uint8_t* byte) {
    if (AtEnd()) return false;
    SkipEmpty();  // a byte lies ahead: the loop stops inside the message
    *byte = slices_[index_].begin()[offset_];
    ++offset_;
    ++position_;
    return true;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t index_ = 0;
  size_t offset_ = 0;
  uint64_t position_;
  const uint64_t limit_;
};

Status Malformed(const std::string& why) {
  return Status::InvalidArgument("the part is not a well-formed Batch: " + why);
}

}  // namespace

// Walks the top-level fields of one message (or of one joined step inside
// it), copying all but the payload, and `following` where asked for, to be
// parsed by protobuf. `nesting` is how deep protobuf would let messages nest
// inside these fields: one less inside a joined step than at the top, as
// protobuf parsing the whole message would count.
class PartSplitter {
 public:
  static Status Split(const std::shared_ptr<const ReceivedMessage>& message, uint64_t begin, uint64_t end, int nesting,
                      v1::Batch* fields, PartPayload* payload,
                      std::vector<std::pair<uint64_t, uint64_t>>* joined,  // null: leave `following` in *fields
                      std::string* scratch) {
    const ReceivedMessage& m = *message;
    PartPayload p;
    p.message_ = message;
    p.begin_ = begin;
    scratch->clear();
    Cursor cursor(m, begin, end);
    uint64_t copied_to = begin;  // the other fields' bytes before here are in *scratch
    while (!cursor.AtEnd()) {
      const uint64_t field_start = cursor.position();
      uint64_t tag = 0;
      if (!cursor.Varint(&tag) || tag > std::numeric_limits<uint32_t>::max() ||
          cursor.position() - field_start > kMaxTagBytes) {
        return Malformed("a bad tag");
      }
      const uint64_t field = tag >> 3;
      if (field == 0) return Malformed("field number 0");
      switch (tag & 7) {
        case 0: {  // varint
          uint64_t ignored = 0;
          if (!cursor.Varint(&ignored)) return Malformed("a truncated varint");
          break;
        }
        case 1:  // 64-bit
          if (!cursor.Skip(8)) return Malformed("a truncated fixed64");
          break;
        case 5:  // 32-bit
          if (!cursor.Skip(4)) return Malformed("a truncated fixed32");
          break;
        case 2: {  // length-delimited
          uint64_t length = 0;
          const uint64_t length_start = cursor.position();
          if (!cursor.Varint(&length) || length > kMaxLength || cursor.position() - length_start > kMaxLengthBytes) {
            return Malformed("a bad length");
          }
          const uint64_t data = cursor.position();
          if (!cursor.Skip(length)) return Malformed("a field past the end of the message");
          const bool is_payload = field == kPayloadField;
          const bool is_joined = field == kFollowingField && joined != nullptr;
          if (is_payload || is_joined) {
            AppendRange(m, copied_to, field_start - copied_to, scratch);
            copied_to = cursor.position();
          }
          if (is_payload) {
            p.begin_ = data;
            p.size_ = length;
          }
          if (is_joined) joined->emplace_back(data, data + length);
          break;
        }
        default: return Malformed("wire type " + std::to_string(tag & 7));
      }
    }
    AppendRange(m, copied_to, cursor.position() - copied_to, scratch);
    google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(scratch->data()),
                                                 static_cast<int>(scratch->size()));
    input.SetRecursionLimit(nesting);
    if (!fields->ParseFromCodedStream(&input) || !input.ConsumedEntireMessage()) {
      return Malformed("protobuf refuses its fields");
    }
    *payload = std::move(p);
    return Status::OK();
  }
};

PartPayload PartPayload::Owning(std::string bytes) {
  PartPayload p;
  p.size_ = bytes.size();
  p.owned_ = std::move(bytes);
  return p;
}

void PartPayload::AppendTo(uint64_t offset, uint64_t len, std::string* out) const {
  if (message_ == nullptr) {
    out->append(owned_, offset, len);
  } else {
    AppendRange(*message_, begin_ + offset, len, out);
  }
}

void PartPayload::Own(std::string buffer) {
  buffer.clear();
  buffer.reserve(size_);
  AppendTo(0, size_, &buffer);
  owned_ = std::move(buffer);
  message_.reset();
  begin_ = 0;
}

std::string PartPayload::TakeOwned() {
  std::string bytes = std::move(owned_);
  owned_.clear();
  size_ = 0;
  return bytes;
}

Status ParsePart(grpc::ByteBuffer* buffer, v1::Batch* header, PartPayload* payload, std::vector<ReceivedPart>* joined,
                 std::string* scratch) {
  auto message = std::make_shared<ReceivedMessage>();
  if (!buffer->Dump(&message->slices).ok()) return Malformed("its buffer cannot be read");
  message->starts.reserve(message->slices.size());
  uint64_t total = 0;
  for (const grpc::Slice& slice : message->slices) {
    message->starts.push_back(total);
    total += slice.size();
  }
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  PartPayload own;
  const int nesting = google::protobuf::io::CodedInputStream::GetDefaultRecursionLimit();
  STRATA_RETURN_IF_ERROR(PartSplitter::Split(message, 0, total, nesting, header, &own, &ranges, scratch));
  joined->resize(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    ReceivedPart& step = (*joined)[i];
    STRATA_RETURN_IF_ERROR(PartSplitter::Split(message, ranges[i].first, ranges[i].second, nesting - 1, &step.fields,
                                               &step.payload, nullptr, scratch));
  }
  *payload = std::move(own);
  return Status::OK();
}

}  // namespace strata::client_internal
