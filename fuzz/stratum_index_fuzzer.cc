// Fuzzes StratumIndexFile: a strata.idx received from a peer or read from a
// damaged disk. Input: a flags byte, then the file. Flag bit 0 recomputes the
// checksums a writer would (format 2: each block's sum and the trailer;
// format 1: the trailer), so mutations reach the offsets and ids; bit 1 opens
// with IndexCheck::kOnUse instead of kWhole.
// Properties: Open fails with a Status or gives an index whose strata counts
// add up to num_samples and whose members (with kWhole) ascend within each
// stratum below num_samples.
#include <string>

#include "common/checksum.h"
#include "common/int128.h"
#include "common/little_endian.h"
#include "fuzz/fuzz_support.h"
#include "plan/stratum_index.h"

namespace {

using namespace strata;

void FixChecksums(std::string* file) {
  const size_t size = file->size();
  if (size < kStratumIndexHeaderSize + 8 + kStratumIndexTrailerSize) return;
  const char* p = file->data();
  const uint32_t format = LoadU32(p + 8);
  const uint64_t strata = LoadU64(p + 16);
  const uint64_t samples = LoadU64(p + 24);
  const uint64_t blocks = format == 2 ? (samples + kStratumIndexBlockIds - 1) / kStratumIndexBlockIds : 0;
  const u128 want = static_cast<u128>(kStratumIndexHeaderSize) + (static_cast<u128>(strata) + 1) * 8 +
                    static_cast<u128>(samples) * 8 + static_cast<u128>(blocks) * 8 + kStratumIndexTrailerSize;
  if (want != size) return;
  const uint64_t head = kStratumIndexHeaderSize + (strata + 1) * 8;
  const uint64_t trailer = size - kStratumIndexTrailerSize;
  if (format == 1) {
    StoreU64(file, trailer, Checksum64(p, trailer));
    return;
  }
  const uint64_t sums = head + samples * 8;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t lo = b * kStratumIndexBlockIds;
    const uint64_t hi = std::min(samples, lo + kStratumIndexBlockIds);
    StoreU64(file, sums + b * 8, Checksum64(file->data() + head + lo * 8, (hi - lo) * 8));
  }
  Checksum64Stream sum;
  sum.Update(file->data(), head);
  sum.Update(file->data() + sums, blocks * 8);
  StoreU64(file, trailer, sum.Digest());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string file(fuzz::AsView(data + 1, size - 1));
  if ((data[0] & 1) != 0) FixChecksums(&file);
  const IndexCheck check = (data[0] & 2) != 0 ? IndexCheck::kOnUse : IndexCheck::kWhole;
  const std::string path = fuzz::WriteScratchFile(kStratumIndexFileName, file);
  auto opened = StratumIndexFile::Open(path, nullptr, check);
  if (!opened.ok()) return 0;
  const StratumIndexFile& index = **opened;
  uint64_t total = 0;
  for (uint32_t s = 0; s < index.num_strata(); ++s) {
    const uint64_t count = index.count(s);
    if (count > index.num_samples() - total) fuzz::Fail("strata counts exceed num_samples");
    total += count;
    uint64_t prev = 0;
    for (uint64_t j = 0; j < count && j < 64; ++j) {
      index.WillRead(s, j);
      const uint64_t id = index.Member(s, j);
      if (check == IndexCheck::kWhole && (id >= index.num_samples() || (j > 0 && id <= prev))) {
        fuzz::Fail("a verified index holds ids out of order or range");
      }
      prev = id;
    }
  }
  if (total != index.num_samples()) fuzz::Fail("strata counts do not add up to num_samples");
  if (check == IndexCheck::kWhole && !index.Damage().ok()) fuzz::Fail("a wholly verified index reports damage");
  return 0;
}
