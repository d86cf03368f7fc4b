// Writes a dataset version's stratum member index (format in
// plan/stratum_index.h) during an ingest.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace strata {

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
