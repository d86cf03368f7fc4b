// The stratum member index of a dataset version: for each stratum, in the
// canonical order of DatasetInfo.stratum_counts (sorted by key, byte order),
// the ids of its samples, ascending. A stratified epoch plan maps (stratum s,
// position j) to a sample id through it.
//
// File format, "strata.idx" beside the version's shards (integers little-endian):
//   header  := magic "STRIDX01" (8) | u32 format_version (=2) | u32 flags (=0)
//              | u64 num_strata | u64 num_samples                              = 32 bytes
//   offsets := u64 x (num_strata + 1): stratum s holds ids[offsets[s], offsets[s+1]);
//              offsets[0] = 0 and offsets[num_strata] = num_samples
//   ids     := u64 x num_samples, ascending within each stratum
//   sums    := u64 x ceil(num_samples / 512): XXH3-64 of each block of 512 ids
//              (4 KiB; the last block may be shorter)
//   trailer := u64 checksum (XXH3-64 of header, offsets and sums) | magic "STRIDXTR" = 16 bytes
// Format 1 (still read) has no sums, and its checksum covers header, offsets
// and ids. The per-block sums let a stream verify only the ids it reads: the
// first batch of a stratified stream reads a few ids of every stratum, and
// reading and hashing all of a 10M-sample index (80 MB) first made it 1.6x
// slower than that of a 10k-sample one.
//
// The file is self-contained (a node can verify a copy without the catalog)
// and, like a shard, written to a temporary name, fsynced and renamed into
// place (server/ingest/stratum_index_writer.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"

namespace strata {

inline constexpr uint32_t kStratumIndexFormatVersion = 2;
inline constexpr std::string_view kStratumIndexHeaderMagic = "STRIDX01";
inline constexpr std::string_view kStratumIndexTrailerMagic = "STRIDXTR";
inline constexpr size_t kStratumIndexHeaderSize = 32;
inline constexpr uint64_t kStratumIndexBlockIds = 512;  // ids per checksummed block
inline constexpr size_t kStratumIndexTrailerSize = 16;
inline constexpr const char* kStratumIndexFileName = "strata.idx";

// Which samples belong to each stratum.
//
// Thread-safety: implementations are immutable after construction; every
// method is safe to call concurrently.
class StratumMembers {
 public:
  virtual ~StratumMembers() = default;

  virtual uint32_t num_strata() const = 0;
  // Samples in `stratum`. REQUIRES: stratum < num_strata().
  virtual uint64_t count(uint32_t stratum) const = 0;
  // The j-th smallest id in `stratum`. REQUIRES: stratum < num_strata(), j < count(stratum).
  // An index that verifies its ids as they are read returns 0 for an id it
  // found damaged, and Damage() reports it from then on.
  virtual uint64_t Member(uint32_t stratum, uint64_t j) const = 0;
  // A hint that Member(stratum, j) will be called soon: an index read from
  // storage starts reading that part without waiting. Changes no result.
  virtual void WillRead(uint32_t /*stratum*/, uint64_t /*j*/) const {}
  // OK, unless a Member call has read a part of the index that failed its
  // check (Corruption naming the file and the part): ids returned since then
  // are not to be trusted.
  virtual Status Damage() const { return Status::OK(); }
};

// Members held in memory: for unit tests and small tools.
class InMemoryStratumMembers final : public StratumMembers {
 public:
  // members[s] lists stratum s's ids; they are sorted here.
  explicit InMemoryStratumMembers(std::vector<std::vector<uint64_t>> members);
  // Sample i belongs to stratum stratum_of[i]. REQUIRES: every value < num_strata.
  static std::unique_ptr<InMemoryStratumMembers> FromAssignment(std::span<const uint32_t> stratum_of,
                                                                uint32_t num_strata);

  uint32_t num_strata() const override { return static_cast<uint32_t>(members_.size()); }
  uint64_t count(uint32_t stratum) const override { return members_[stratum].size(); }
  uint64_t Member(uint32_t stratum, uint64_t j) const override { return members_[stratum][j]; }

 private:
  std::vector<std::vector<uint64_t>> members_;
};

// What the catalog records about an index file, checked when it is opened.
struct StratumIndexExpect {
  uint64_t file_bytes = 0;
  uint64_t checksum = 0;
  std::vector<uint64_t> counts;  // per stratum, canonical order
};

// How much of an index Open verifies before it returns.
enum class IndexCheck {
  kWhole,  // all of it: for scrubbing and for copies received from peers
  kOnUse,  // header, offsets and block sums; each block of ids when Member
           // first reads it (format 1 files, which have no block sums: all)
};

// A read-only mapping of a strata.idx file.
class StratumIndexFile final : public StratumMembers {
 public:
  // Maps `path` and verifies, with kWhole, all of it: header, sizes, the
  // trailer checksum, offsets, each block of ids against its sum, and ids
  // ascending within each stratum and below num_samples. With `expect`, also
  // the size, checksum and per-stratum counts the catalog recorded. NotFound if
  // the file is missing, Corruption for any mismatch, IOError if it cannot be
  // read. kWhole costs O(file size) once; kOnUse O(strata + blocks) at Open and
  // O(512) the first time each block is read (blocks_checked() counts them).
  static Result<std::unique_ptr<StratumIndexFile>> Open(const std::string& path,
                                                        const StratumIndexExpect* expect = nullptr,
                                                        IndexCheck check = IndexCheck::kWhole);
  ~StratumIndexFile() override;
  StratumIndexFile(const StratumIndexFile&) = delete;
  StratumIndexFile& operator=(const StratumIndexFile&) = delete;

  uint32_t format_version() const { return format_; }
  uint32_t num_strata() const override { return num_strata_; }
  uint64_t num_samples() const { return num_samples_; }
  uint64_t count(uint32_t stratum) const override;
  uint64_t Member(uint32_t stratum, uint64_t j) const override;
  // With kOnUse, for a block not checked yet: madvise(MADV_WILLNEED) of it.
  void WillRead(uint32_t stratum, uint64_t j) const override;
  Status Damage() const override;
  // Blocks of ids verified since Open (with kOnUse: those Member has read).
  uint64_t blocks_checked() const { return blocks_checked_.load(std::memory_order_relaxed); }

 private:
  enum : uint8_t { kUnchecked = 0, kSound = 1, kDamaged = 2 };

  StratumIndexFile() = default;
  Status Corrupt(const std::string& why) const;
  // Open's checks of the mapped file (format 1 and 2), reading ids through `fd`.
  Status VerifyV1(int fd, const StratumIndexExpect* expect);
  Status VerifyV2(int fd, const StratumIndexExpect* expect, IndexCheck check);
  // Header counts against the file size, with `blocks` block sums; sets num_strata_.
  Status CheckSizes(uint64_t blocks);
  // The catalog's size, checksum and per-stratum counts, if given.
  Status CheckExpect(const StratumIndexExpect* expect, uint64_t checksum) const;
  Status CheckOffsets() const;
  // Checks block `b` of the ids, whose bytes are at `ids`: its sum, and its ids
  // below num_samples and ascending within each stratum, starting from
  // `before` (the id before the block, if that is in the same stratum).
  // REQUIRES: the offsets are sound.
  Status CheckBlock(uint64_t b, const char* ids, uint64_t before) const;
  // kOnUse: verifies block `b` unless done; true if it is sound.
  bool CheckOnUse(uint64_t b) const;
  uint64_t Offset(uint32_t s) const;
  // The stratum holding position `at` of the ids. REQUIRES: at < num_samples.
  uint32_t StratumAt(uint64_t at) const;

  std::string path_;
  const char* base_ = nullptr;
  size_t size_ = 0;
  uint32_t format_ = 0;
  uint32_t num_strata_ = 0;
  uint64_t num_samples_ = 0;
  const char* offsets_ = nullptr;
  const char* ids_ = nullptr;
  const char* sums_ = nullptr;  // format 2
  std::string located_;         // format 2: header, offsets and sums, read at Open
  uint64_t num_blocks_ = 0;
  // kOnUse on format 2: per block kUnchecked, kSound or kDamaged.
  std::unique_ptr<std::atomic<uint8_t>[]> blocks_;
  mutable std::atomic<uint64_t> blocks_checked_{0};
  mutable std::atomic<bool> damaged_{false};
  mutable Mutex damage_mu_;
  mutable Status damage_ GUARDED_BY(damage_mu_);  // the first damage found
};

}  // namespace strata
