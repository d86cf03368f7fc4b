// The stratum member index: the in-memory implementation and the verified
// read-only mapping of strata.idx files (formats 1 and 2).
#include "plan/stratum_index.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/checksum.h"
#include "common/file_util.h"
#include "common/int128.h"
#include "common/little_endian.h"
#include "common/mutex.h"
#include "common/unique_fd.h"

namespace strata {
namespace {

// Open's whole-file check reads the file in chunks of this size (a multiple of
// 8 and of a block's 4 KiB).
constexpr size_t kVerifyChunk = size_t{1} << 20;

}  // namespace

// ---- InMemoryStratumMembers

InMemoryStratumMembers::InMemoryStratumMembers(std::vector<std::vector<uint64_t>> members)
    : members_(std::move(members)) {
  for (auto& m : members_) std::sort(m.begin(), m.end());
}

std::unique_ptr<InMemoryStratumMembers> InMemoryStratumMembers::FromAssignment(std::span<const uint32_t> stratum_of,
                                                                               uint32_t num_strata) {
  std::vector<std::vector<uint64_t>> members(num_strata);
  for (uint64_t i = 0; i < stratum_of.size(); ++i) members[stratum_of[i]].push_back(i);
  return std::make_unique<InMemoryStratumMembers>(std::move(members));
}

// ---- StratumIndexFile

Result<std::unique_ptr<StratumIndexFile>> StratumIndexFile::Open(const std::string& path,
                                                                 const StratumIndexExpect* expect, IndexCheck check) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound("stratum index " + path + " does not exist");
    return ErrnoStatus("open " + path, errno);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoStatus("stat " + path, errno);
  auto file = std::unique_ptr<StratumIndexFile>(new StratumIndexFile());
  file->path_ = path;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (!S_ISREG(st.st_mode)) return Status::IOError(path + " is not a regular file");
  if (size < kStratumIndexHeaderSize + 8 + kStratumIndexTrailerSize) {
    return file->Corrupt("file of " + std::to_string(size) + " bytes is too short");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return ErrnoStatus("mmap " + path, errno);
  // Samplers read a block of ids here and there: a fault reads the page it
  // needs. (With MADV_HUGEPAGE each read 2 MiB or more, and the first
  // stratified batch of a 10M-sample version that had left the page cache
  // read the whole 80 MB index.)
  madvise(map, size, MADV_RANDOM);
  file->base_ = static_cast<const char*>(map);
  file->size_ = size;
  const char* p = file->base_;
  Status verified;
  if (std::string_view(p, 8) != kStratumIndexHeaderMagic) {
    verified = file->Corrupt("bad header magic");
  } else if (std::string_view(p + size - 8, 8) != kStratumIndexTrailerMagic) {
    verified = file->Corrupt("bad trailer magic");
  } else {
    file->format_ = LoadU32(p + 8);
    file->num_samples_ = LoadU64(p + 24);
    file->offsets_ = p + kStratumIndexHeaderSize;
    if (file->format_ == 1) {
      verified = file->VerifyV1(fd.get(), expect);
    } else if (file->format_ == 2) {
      verified = file->VerifyV2(fd.get(), expect, check);
    } else {
      verified = file->Corrupt("unknown format version " + std::to_string(file->format_));
    }
  }
  fd.reset();
  if (!verified.ok()) return verified;
  return file;
}

Status StratumIndexFile::Corrupt(const std::string& why) const {
  return Status::Corruption("stratum index " + path_ + ": " + why);
}

Status StratumIndexFile::CheckExpect(const StratumIndexExpect* expect, uint64_t checksum) const {
  if (expect == nullptr) return Status::OK();
  if (expect->file_bytes != size_ || expect->checksum != checksum) {
    return Corrupt("size or checksum differs from the catalog's record");
  }
  if (expect->counts.size() != num_strata_) {
    return Corrupt(std::to_string(num_strata_) + " strata, the catalog has " + std::to_string(expect->counts.size()));
  }
  for (uint32_t k = 0; k < num_strata_; ++k) {
    if (count(k) != expect->counts[k]) {
      return Corrupt("stratum " + std::to_string(k) + " holds " + std::to_string(count(k)) + " samples, the catalog " +
                     std::to_string(expect->counts[k]));
    }
  }
  return Status::OK();
}

Status StratumIndexFile::CheckSizes(uint64_t blocks) {
  const uint64_t strata = LoadU64(base_ + 16);
  // In 128 bits: a corrupt header must not wrap the sum around.
  const u128 want = static_cast<u128>(kStratumIndexHeaderSize) + (static_cast<u128>(strata) + 1) * 8 +
                    static_cast<u128>(num_samples_) * 8 + static_cast<u128>(blocks) * 8 + kStratumIndexTrailerSize;
  if (strata > UINT32_MAX || want != size_) {
    return Corrupt("header says " + std::to_string(strata) + " strata and " + std::to_string(num_samples_) +
                   " samples, which does not match the file size " + std::to_string(size_));
  }
  num_strata_ = static_cast<uint32_t>(strata);
  return Status::OK();
}

Status StratumIndexFile::CheckOffsets() const {
  if (Offset(0) != 0 || Offset(num_strata_) != num_samples_) return Corrupt("offsets do not span the ids");
  for (uint32_t s = 0; s < num_strata_; ++s) {
    const uint64_t begin = Offset(s), end = Offset(s + 1);
    if (end < begin || end > num_samples_) {
      return Corrupt("offsets of stratum " + std::to_string(s) + " are out of order");
    }
  }
  return Status::OK();
}

Status StratumIndexFile::VerifyV2(int fd, const StratumIndexExpect* expect, IndexCheck check) {
  num_blocks_ = (num_samples_ + kStratumIndexBlockIds - 1) / kStratumIndexBlockIds;
  STRATA_RETURN_IF_ERROR(CheckSizes(num_blocks_));
  // What locates and verifies the ids (header, offsets, block sums: 8 bytes
  // per 512 samples) is read into memory with two reads, not a page fault
  // after another through the mapping.
  const uint64_t head_bytes = kStratumIndexHeaderSize + (uint64_t{num_strata_} + 1) * 8;
  located_.resize(head_bytes + num_blocks_ * 8);
  STRATA_RETURN_IF_ERROR(PReadExactFd(fd, located_.data(), head_bytes, 0, path_));
  STRATA_RETURN_IF_ERROR(
      PReadExactFd(fd, located_.data() + head_bytes, num_blocks_ * 8, head_bytes + num_samples_ * 8, path_));
  offsets_ = located_.data() + kStratumIndexHeaderSize;
  ids_ = base_ + head_bytes;
  sums_ = located_.data() + head_bytes;
  // The trailer covers what locates and verifies the ids; each block of ids
  // is covered by its sum.
  const uint64_t stored = LoadU64(base_ + size_ - kStratumIndexTrailerSize);
  Checksum64Stream sum;
  sum.Update(located_.data(), head_bytes);
  sum.Update(sums_, num_blocks_ * 8);
  if (sum.Digest() != stored) return Corrupt("checksum mismatch");
  STRATA_RETURN_IF_ERROR(CheckExpect(expect, stored));
  STRATA_RETURN_IF_ERROR(CheckOffsets());
  if (check == IndexCheck::kOnUse) {
    blocks_ = std::make_unique<std::atomic<uint8_t>[]>(num_blocks_);  // kUnchecked
    return Status::OK();
  }
  // Every block, read rather than touched through the mapping (first touches
  // of pages are what costs most on a large index).
  const uint64_t ids_at = static_cast<uint64_t>(ids_ - base_);
  constexpr uint64_t kChunkIds = kVerifyChunk / 8;
  std::string chunk(kVerifyChunk, '\0');
  uint64_t before = 0;  // the last id of the previous block
  for (uint64_t first = 0; first < num_samples_; first += kChunkIds) {
    const uint64_t n = std::min(kChunkIds, num_samples_ - first);
    STRATA_RETURN_IF_ERROR(PReadExactFd(fd, chunk.data(), n * 8, ids_at + first * 8, path_));
    for (uint64_t at = 0; at < n; at += kStratumIndexBlockIds) {
      STRATA_RETURN_IF_ERROR(CheckBlock((first + at) / kStratumIndexBlockIds, chunk.data() + at * 8, before));
      before = LoadU64(chunk.data() + (std::min(n, at + kStratumIndexBlockIds) - 1) * 8);
    }
  }
  return Status::OK();
}

Status StratumIndexFile::CheckBlock(uint64_t b, const char* ids, uint64_t before) const {
  blocks_checked_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t lo = b * kStratumIndexBlockIds;
  const uint64_t hi = std::min(num_samples_, lo + kStratumIndexBlockIds);
  if (Checksum64(ids, (hi - lo) * 8) != LoadU64(sums_ + b * 8)) {
    return Corrupt("ids " + std::to_string(lo) + " to " + std::to_string(hi - 1) + " (block " + std::to_string(b) +
                   ") do not match their checksum");
  }
  // Each stratum's run of ids in the block, without a branch per id.
  uint32_t s = StratumAt(lo);
  uint64_t prev = before;
  for (uint64_t at = lo; at < hi;) {
    while (Offset(s + 1) <= at) ++s;  // past an empty stratum
    const uint64_t run_end = std::min(hi, Offset(s + 1));
    const char* id_at = ids + (at - lo) * 8;
    bool wrong = false;
    if (at == Offset(s)) {  // the stratum's first id
      prev = LoadU64(id_at);
      wrong = prev >= num_samples_;
      id_at += 8;
      ++at;
    }
    for (; at < run_end; ++at, id_at += 8) {
      const uint64_t id = LoadU64(id_at);
      wrong |= (id >= num_samples_) | (id <= prev);
      prev = id;
    }
    if (wrong) {
      return Corrupt("ids of stratum " + std::to_string(s) + " are not ascending ids below " +
                     std::to_string(num_samples_));
    }
  }
  return Status::OK();
}

bool StratumIndexFile::CheckOnUse(uint64_t b) const {
  std::atomic<uint8_t>& state = blocks_[b];
  const uint8_t now = state.load(std::memory_order_acquire);
  if (now != kUnchecked) return now == kSound;
  // Streams that read the same block at once may both check it; the result is the same.
  const uint64_t lo = b * kStratumIndexBlockIds;
  const uint64_t before = lo > 0 ? LoadU64(ids_ + (lo - 1) * 8) : 0;
  Status s = CheckBlock(b, ids_ + lo * 8, before);
  if (s.ok()) {
    state.store(kSound, std::memory_order_release);
    return true;
  }
  MutexLock lock(&damage_mu_);
  state.store(kDamaged, std::memory_order_release);
  if (!damaged_.load(std::memory_order_relaxed)) {
    damage_ = std::move(s);
    damaged_.store(true, std::memory_order_release);
  }
  return false;
}

Status StratumIndexFile::Damage() const {
  if (!damaged_.load(std::memory_order_acquire)) return Status::OK();
  MutexLock lock(&damage_mu_);
  return damage_;
}

Status StratumIndexFile::VerifyV1(int fd, const StratumIndexExpect* expect) {
  const uint64_t samples = num_samples_;
  STRATA_RETURN_IF_ERROR(CheckSizes(0));
  const uint64_t body = size_ - kStratumIndexTrailerSize;
  const uint64_t stored = LoadU64(base_ + body);
  ids_ = offsets_ + (uint64_t{num_strata_} + 1) * 8;
  // The offsets first (the walk over the ids below relies on them); their
  // error, like that of the ids, is reported after a checksum mismatch.
  Status structure = CheckOffsets();
  // One pass over the body, read rather than touched through the mapping:
  // the checksum, and each stratum's ids ascending and below num_samples.
  const uint64_t ids_at = static_cast<uint64_t>(ids_ - base_);
  Checksum64Stream sum;
  std::string chunk(kVerifyChunk, '\0');
  uint32_t s = 0;
  uint64_t stratum_end = num_strata_ > 0 ? Offset(1) : 0;
  uint64_t prev = 0;
  bool first = true;  // the next id is its stratum's first
  uint64_t j = 0;     // index of the next id
  for (uint64_t at = 0; at < body; at += kVerifyChunk) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kVerifyChunk, body - at));
    STRATA_RETURN_IF_ERROR(PReadExactFd(fd, chunk.data(), n, at, path_));
    sum.Update(chunk.data(), n);
    if (!structure.ok()) continue;
    // Chunks and the ids both start at multiples of 8, so no id straddles two chunks.
    if (at + n <= ids_at) continue;
    const char* ids = chunk.data() + (std::max(at, ids_at) - at);
    const uint64_t chunk_end = j + (at + n - std::max(at, ids_at)) / 8;  // index past this chunk's last id
    while (j < chunk_end && structure.ok()) {
      while (j == stratum_end) {  // past this stratum's last id (or an empty stratum)
        ++s;
        stratum_end = Offset(s + 1);
        first = true;
      }
      // The ids of stratum s in this chunk, without a branch per id.
      const uint64_t run_end = std::min(chunk_end, stratum_end);
      bool wrong = false;
      if (first) {
        prev = LoadU64(ids);
        wrong = prev >= samples;
        ids += 8;
        ++j;
        first = false;
      }
      for (; j < run_end; ++j, ids += 8) {
        const uint64_t id = LoadU64(ids);
        wrong |= (id >= samples) | (id <= prev);
        prev = id;
      }
      if (wrong) {
        structure =
            Corrupt("ids of stratum " + std::to_string(s) + " are not ascending ids below " + std::to_string(samples));
      }
    }
  }
  if (sum.Digest() != stored) return Corrupt("checksum mismatch");
  STRATA_RETURN_IF_ERROR(CheckExpect(expect, stored));
  return structure;
}

StratumIndexFile::~StratumIndexFile() {
  if (base_ != nullptr) munmap(const_cast<char*>(base_), size_);
}

uint64_t StratumIndexFile::Offset(uint32_t s) const { return LoadU64(offsets_ + uint64_t{s} * 8); }

uint32_t StratumIndexFile::StratumAt(uint64_t at) const {
  uint32_t lo = 0, hi = num_strata_;  // Offset(lo) <= at < Offset(hi)
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    (Offset(mid) <= at ? lo : hi) = mid;
  }
  return lo;
}

uint64_t StratumIndexFile::count(uint32_t stratum) const { return Offset(stratum + 1) - Offset(stratum); }

void StratumIndexFile::WillRead(uint32_t stratum, uint64_t j) const {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  if (!blocks_ || stratum >= num_strata_) return;
  const uint64_t at = Offset(stratum) + j;
  if (at >= num_samples_) return;
  const uint64_t b = at / kStratumIndexBlockIds;
  if (blocks_[b].load(std::memory_order_relaxed) != kUnchecked) return;
  // CheckOnUse reads the id before the block too.
  const uint64_t lo = b * kStratumIndexBlockIds, hi = std::min(num_samples_, lo + kStratumIndexBlockIds);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ids_ + (lo > 0 ? lo - 1 : 0) * 8);
  const uintptr_t end = reinterpret_cast<uintptr_t>(ids_ + hi * 8);
  const uintptr_t first = begin / page * page;
  madvise(reinterpret_cast<void*>(first), end - first, MADV_WILLNEED);
}

uint64_t StratumIndexFile::Member(uint32_t stratum, uint64_t j) const {
  const uint64_t at = Offset(stratum) + j;
  if (blocks_ != nullptr) {
    const uint64_t b = at / kStratumIndexBlockIds;
    if (blocks_[b].load(std::memory_order_acquire) != kSound && !CheckOnUse(b)) return 0;  // Damage() says why
  }
  return LoadU64(ids_ + at * 8);
}

}  // namespace strata
