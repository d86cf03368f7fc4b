// Fuzzes ParseRecord: one raw record as a peer sends it (ReadRecords) or a
// shard holds it. Input: a flags byte, the expected id (u64), then the
// record. With flag bit 0 the harness appends the record's checksum, so that
// mutations reach the header's wire-format parser.
// Properties: a parsed record's views lie inside the input, its fields add
// up to its payload, and its id is the one expected.
#include <string>

#include "common/checksum.h"
#include "common/little_endian.h"
#include "fuzz/fuzz_support.h"
#include "server/storage/shard_format.h"

namespace {

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  if (size < 9) return 0;
  const uint64_t expected_id = LoadU64(reinterpret_cast<const char*>(data + 1));
  std::string raw(fuzz::AsView(data + 9, size - 9));
  if ((data[0] & 1) != 0) PutU64(&raw, Checksum64(raw.data(), raw.size()));
  RecordView view;
  const Status parsed = ParseRecord(raw, expected_id, &view);
  if (!parsed.ok()) {
    if (!view.payload.empty() || !view.field_sizes.empty()) fuzz::Fail("a failed parse left views behind");
    return 0;
  }
  if (view.id != expected_id) fuzz::Fail("wrong id accepted");
  if (!Inside(view.payload, raw) || !Inside(view.header_bytes, raw) || !Inside(view.label, raw) ||
      !Inside(view.stratum, raw)) {
    fuzz::Fail("a view points outside the record");
  }
  uint64_t total = 0;
  for (uint64_t s : view.field_sizes) total += s;
  if (total != view.payload.size()) fuzz::Fail("field sizes do not add up to the payload");
  for (const std::string_view name : view.field_names) {
    if (!Inside(name, raw)) fuzz::Fail("a field name points outside the record");
    if (!Inside(view.field(name), view.payload)) fuzz::Fail("a field points outside the payload");
  }
  for (size_t f = 0; f < view.field_sizes.size() && f < 64; ++f) {
    if (!Inside(view.field(static_cast<int>(f)), view.payload)) fuzz::Fail("a field points outside the payload");
  }
  v1::RecordHeader header;
  (void)view.ParseHeader(&header);
  return 0;
}
