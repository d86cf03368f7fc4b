// Fuzzes ShardReader: a shard file received from a peer (PutFile) or read
// from a damaged disk. Input: one flags byte, then the file. With flag bit 0
// the harness first recomputes the trailer's footer and file checksums the
// way a writer would, so that mutations reach the footer's parser, the offset
// table and the records instead of stopping at a checksum.
// Properties: Open and every read either fail with a Status or return views
// inside the file (or, format 4, its decompressed block); a read record's
// fields add up to its payload.
#include <climits>
#include <string>

#include "common/checksum.h"
#include "common/little_endian.h"
#include "fuzz/fuzz_support.h"
#include "server/storage/shard_format.h"

namespace {

using namespace strata;

// Rewrites each record's checksum (formats 2 and 3, where the offset table
// gives a sane range) and the trailer's checksums to match the bytes, where
// its footer bounds are sane (as ShardReader::CheckLayout reads them).
void FixChecksums(std::string* file) {
  if (file->size() < kShardHeaderSize + kShardTrailerSize) return;
  const size_t t = file->size() - kShardTrailerSize;
  const char* trailer = file->data() + t;
  const uint64_t footer_offset = LoadU64(trailer);
  const uint32_t footer_len = LoadU32(trailer + 8);
  const uint32_t format = LoadU32(trailer + 12);
  if (footer_offset < kShardHeaderSize || footer_offset > t || t - footer_offset != footer_len) return;
  const char* footer = file->data() + footer_offset;
  if (format >= 2 && footer_len >= 8) {
    const uint64_t count = LoadU64(footer);
    for (uint64_t i = 0; count <= (footer_len - 8) / 8 && i < count; ++i) {
      const uint64_t begin = LoadU64(footer + 8 + 8 * i);
      const uint64_t end = i + 1 < count ? LoadU64(footer + 16 + 8 * i) : footer_offset;
      if (begin < kShardHeaderSize || end > footer_offset || begin > end || end - begin < 12) continue;
      StoreU64(file, end - 8, Checksum64(file->data() + begin, end - begin - 8));
      footer = file->data() + footer_offset;
    }
  }
  uint64_t footer_sum = Checksum64(footer, footer_len);
  if (format >= 3 && footer_len >= 8) {
    const uint64_t count = LoadU64(footer);
    if (count <= (footer_len - 8) / 8) {
      const uint64_t table = 8 + 8 * count;
      Checksum64Stream sum;
      sum.Update(footer, 8);
      sum.Update(footer + table, footer_len - table);
      footer_sum = sum.Digest();
    }
  }
  StoreU64(file, t + 16, footer_sum);
  StoreU64(file, t + 24, Checksum64(file->data(), footer_offset + footer_len));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string file(fuzz::AsView(data + 1, size - 1));
  if ((data[0] & 1) != 0) FixChecksums(&file);
  const std::string path = fuzz::WriteScratchFile("input.shard", file);
  auto reader = ShardReader::Open(path);
  if (!reader.ok()) return 0;
  const ShardReader& r = **reader;
  // Every record up to a bound (the count is the file's claim; the table
  // holds 8 bytes per record, so a small input cannot claim many).
  const uint64_t n = std::min<uint64_t>(r.num_records(), 256);
  RecordView view;
  std::string buffer;
  for (uint64_t i = 0; i < n; ++i) {
    const auto [begin, end] = r.RecordRange(i);
    if (end > r.file_size() || begin > end) fuzz::Fail("record range outside the file");
    // Format 4 serves records out of decompressed blocks, formats 1-3 out of the mapping.
    std::shared_ptr<const std::string> block;
    const Status read = r.compressed() ? r.ReadBlockRecord(i, &block, &view) : r.Read(i, &view);
    if (read.ok()) {
      uint64_t total = 0;
      for (uint64_t s : view.field_sizes) total += s;
      if (total != view.payload.size()) fuzz::Fail("field sizes do not add up to the payload");
      for (size_t f = 0; f < view.field_sizes.size() && f < 8; ++f) (void)view.field(static_cast<int>(f));
      v1::RecordHeader header;
      (void)view.ParseHeader(&header);
    }
    const Status copied = r.ReadCopy(i, &buffer, &view);
    if (copied.ok() != read.ok()) fuzz::Fail("Read and ReadCopy disagree");
    r.PrefetchOffset(i);
    r.PrefetchRecord(i);
  }
  (void)r.Read(r.num_records(), &view);  // past the end: OutOfRange
  (void)r.VerifyFile();
  return 0;
}
