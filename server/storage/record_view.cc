// RecordView: a record's fields as views of its bytes. The header is read
// with protobuf's wire-format reader, field by field, so that the fields a
// stream serves become views instead of strings in a parsed message (the
// parse was the largest single cost of serving small records).
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <climits>

#include "common/checksum.h"
#include "common/little_endian.h"
#include "server/storage/shard_format.h"

namespace strata {
namespace {

using google::protobuf::internal::WireFormatLite;

// u32 header_len before a record, u64 checksum after it.
constexpr uint64_t kRecordOverhead = 4 + 8;

// Reads the length-delimited field at the stream's position as a view of `bytes`.
bool ReadView(google::protobuf::io::CodedInputStream& in, std::string_view bytes, std::string_view* out) {
  uint32_t len = 0;
  if (!in.ReadVarint32(&len)) return false;
  const auto at = static_cast<size_t>(in.CurrentPosition());
  if (len > bytes.size() - at) return false;
  *out = bytes.substr(at, len);
  return in.Skip(static_cast<int>(len));
}

// Fills the serving fields of *out from an encoded v1::RecordHeader, skipping
// the others. Accepts what protobuf's parser accepts: fields in any order,
// the last of a singular field winning, field_sizes packed or not, and
// unknown fields. False if the bytes are not a well-formed message.
bool ParseServingFields(std::string_view bytes, RecordView* out) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  constexpr auto kVarint = WireFormatLite::WIRETYPE_VARINT;
  constexpr auto kDelimited = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage();
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    const auto type = WireFormatLite::GetTagWireType(tag);
    bool ok = true;
    if (number == v1::RecordHeader::kIdFieldNumber && type == kVarint) {
      ok = in.ReadVarint64(&out->id);
    } else if (number == v1::RecordHeader::kLabelFieldNumber && type == kDelimited) {
      ok = ReadView(in, bytes, &out->label);
    } else if (number == v1::RecordHeader::kStratumFieldNumber && type == kDelimited) {
      ok = ReadView(in, bytes, &out->stratum);
    } else if (number == v1::RecordHeader::kFieldNamesFieldNumber && type == kDelimited) {
      ok = ReadView(in, bytes, &out->field_names.emplace_back());
    } else if (number == v1::RecordHeader::kFieldSizesFieldNumber && type == kVarint) {
      ok = in.ReadVarint64(&out->field_sizes.emplace_back());
    } else if (number == v1::RecordHeader::kFieldSizesFieldNumber && type == kDelimited) {
      uint32_t len = 0;
      ok = in.ReadVarint32(&len) && len <= bytes.size() - static_cast<size_t>(in.CurrentPosition());
      if (ok) {
        const auto limit = in.PushLimit(static_cast<int>(len));
        while (ok && in.BytesUntilLimit() > 0) ok = in.ReadVarint64(&out->field_sizes.emplace_back());
        in.PopLimit(limit);
      }
    } else {
      ok = WireFormatLite::SkipField(&in, tag);
    }
    if (!ok) return false;
  }
}

}  // namespace

void RecordView::Clear() {
  id = 0;
  label = {};
  stratum = {};
  field_names.clear();
  field_sizes.clear();
  header_bytes = {};
  payload = {};
}

std::string_view RecordView::field(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= field_sizes.size()) return {};
  // ParseRecord guarantees the sizes add up to the payload; a hand-built view may not.
  uint64_t begin = 0;
  for (int k = 0; k < i; ++k) {
    if (field_sizes[k] > payload.size() - begin) return {};
    begin += field_sizes[k];
  }
  const uint64_t size = field_sizes[i];
  if (size > payload.size() - begin) return {};
  return payload.substr(begin, size);
}

std::string_view RecordView::field(std::string_view name) const {
  const size_t n = std::min(field_names.size(), field_sizes.size());
  for (size_t i = 0; i < n; ++i) {
    if (field_names[i] == name) return field(static_cast<int>(i));
  }
  return {};
}

Status RecordView::ParseHeader(v1::RecordHeader* out) const {
  if (!out->ParseFromArray(header_bytes.data(), static_cast<int>(header_bytes.size()))) {
    out->Clear();
    return Status::Corruption("record header does not parse");
  }
  return Status::OK();
}

Status ParseRecord(std::string_view raw, uint64_t expected_id, RecordView* out, bool checksum_verified) {
  // Emptied first so that no error leaves views behind.
  out->Clear();
  if (raw.size() < kRecordOverhead) return Status::Corruption("shorter than its framing");
  const uint32_t header_len = LoadU32(raw.data());
  if (header_len > raw.size() - kRecordOverhead || header_len > INT_MAX) {
    return Status::Corruption("header length out of range");
  }
  const size_t checked = raw.size() - 8;
  if (!checksum_verified && Checksum64(raw.data(), checked) != LoadU64(raw.data() + checked)) {
    return Status::Corruption("checksum mismatch");
  }

  const std::string_view header = raw.substr(4, header_len);
  if (!ParseServingFields(header, out)) {
    out->Clear();
    return Status::Corruption("header does not parse");
  }
  const std::string_view payload = raw.substr(4 + header_len, checked - 4 - header_len);
  // Every size must fit what is left: stopping at the first that does not
  // and comparing the sum so far accepted [payload, 5] (a peer's record whose
  // fields claim more bytes than it holds). Found by fuzz/record_view.
  uint64_t total = 0;
  bool fits = true;
  for (uint64_t size : out->field_sizes) {
    if (size > payload.size() - total) {
      fits = false;
      break;
    }
    total += size;
  }
  if (out->id != expected_id || !fits || total != payload.size()) {
    out->Clear();
    return Status::Corruption("id or field sizes do not match the record");
  }
  out->header_bytes = header;
  out->payload = payload;
  return Status::OK();
}

}  // namespace strata
