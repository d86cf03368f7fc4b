// The stratum member index of a dataset version: for each stratum, in the
// canonical order of DatasetInfo.stratum_counts (sorted by key, byte order),
// the ids of its samples, ascending. A stratified epoch plan maps (stratum s,
// position j) to a sample id through it.
//
// File format, "strata.idx" beside the version's shards (integers little-endian):
//   header  := magic "STRIDX01" (8) | u32 format_version (=1) | u32 flags (=0)
//              | u64 num_strata | u64 num_samples                              = 32 bytes
//   offsets := u64 x (num_strata + 1): stratum s holds ids[offsets[s], offsets[s+1]);
//              offsets[0] = 0 and offsets[num_strata] = num_samples
//   ids     := u64 x num_samples, ascending within each stratum
//   trailer := u64 checksum (XXH3-64 of header, offsets and ids) | magic "STRIDXTR" = 16 bytes
//
// The file is self-contained (a node can verify a copy without the catalog)
// and, like a shard, written to a temporary name, fsynced and renamed into place.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace strata {

inline constexpr uint32_t kStratumIndexFormatVersion = 1;
inline constexpr size_t kStratumIndexHeaderSize = 32;
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
  virtual uint64_t Member(uint32_t stratum, uint64_t j) const = 0;
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

// A read-only mapping of a strata.idx file.
class StratumIndexFile final : public StratumMembers {
 public:
  // Maps `path` and verifies all of it: header, sizes, the trailer checksum
  // over the whole body, offsets, and ids ascending within each stratum and
  // below num_samples. With `expect`, also the size, checksum and per-stratum
  // counts the catalog recorded. NotFound if the file is missing, Corruption
  // for any mismatch, IOError if it cannot be read. O(file size) once.
  static Result<std::unique_ptr<StratumIndexFile>> Open(const std::string& path,
                                                        const StratumIndexExpect* expect = nullptr);
  ~StratumIndexFile() override;
  StratumIndexFile(const StratumIndexFile&) = delete;
  StratumIndexFile& operator=(const StratumIndexFile&) = delete;

  uint32_t num_strata() const override { return num_strata_; }
  uint64_t num_samples() const { return num_samples_; }
  uint64_t count(uint32_t stratum) const override;
  uint64_t Member(uint32_t stratum, uint64_t j) const override;

 private:
  StratumIndexFile() = default;
  // Open's checks of the mapped file, reading its body through `fd`.
  Status Verify(int fd, const std::string& path, const StratumIndexExpect* expect);
  uint64_t Offset(uint32_t s) const;

  const char* base_ = nullptr;
  size_t size_ = 0;
  uint32_t num_strata_ = 0;
  uint64_t num_samples_ = 0;
  const char* offsets_ = nullptr;
  const char* ids_ = nullptr;
};

struct StratumIndexSummary {
  std::string path;
  uint64_t file_bytes = 0;
  uint64_t checksum = 0;
  uint64_t num_samples = 0;
  std::vector<std::string> keys;  // canonical order
  std::vector<uint64_t> counts;   // per key
};

// Builds a strata.idx during an ingest without holding per-stratum id lists in
// memory: each sample's stratum ordinal (first-seen order, 4 bytes) goes to a
// temporary file; Finish() maps ordinals to the canonical order and writes the
// index with one counting-sort pass through bounded per-stratum buffers.
//
// Thread-safety: not thread-safe; one writer per ingest session.
class StratumIndexWriter {
 public:
  // The index will be published at `path`; temporary files go beside it
  // (".tmp.*", removed by the destructor unless Finish succeeded).
  static Result<std::unique_ptr<StratumIndexWriter>> Create(std::string path);
  ~StratumIndexWriter();
  StratumIndexWriter(const StratumIndexWriter&) = delete;
  StratumIndexWriter& operator=(const StratumIndexWriter&) = delete;

  // Records that the next sample (id = samples so far) is in `stratum_key`.
  Status Add(std::string_view stratum_key);
  uint64_t samples() const { return samples_; }

  // Writes, fsyncs and publishes the index. AlreadyExists if `path` exists.
  // After an error the temporary files are removed.
  Result<StratumIndexSummary> Finish();

 private:
  StratumIndexWriter(std::string path, std::string ord_path, int ord_fd);
  Status FlushOrdinals();
  Status WriteIndex(const std::string& tmp, int fd, const std::vector<uint32_t>& canonical_of,
                    const std::vector<uint64_t>& counts, StratumIndexSummary* summary);
  void RemoveTemps();

  std::string path_;
  std::string ord_path_;
  int ord_fd_ = -1;
  std::string tmp_index_path_;
  std::unordered_map<std::string, uint32_t> ordinal_of_;
  std::vector<std::string> keys_;  // by ordinal
  std::vector<uint64_t> counts_;   // by ordinal
  std::vector<uint32_t> pending_;  // ordinals not yet written
  uint64_t samples_ = 0;
  bool finished_ = false;
};

}  // namespace strata
