// Parity files of erasure-coded versions (docs/design.md, "Erasure coding").
//
// A parity file holds one parity chunk of one stripe: its body is the chunk
// (as long as the stripe's longest data shard) and a 56-byte trailer says
// what it is and lets it be verified on its own, like a shard file:
//
//   "STRAPAR1"  u64 Hash64(dataset, version)  u64 version  u32 seq
//   u16 K  u16 M  u64 body bytes  u64 XXH3-64 of the body
//   u64 XXH3-64 of the 48 trailer bytes before it
//
// Parity chunk p of stripe g has seq g * M + p.
//
// Thread-safety: pure functions over files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

inline constexpr size_t kParityTrailerBytes = 56;

struct ParityTrailer {
  uint64_t dataset_hash = 0;  // ParityDatasetHash(dataset, version)
  uint64_t version = 0;
  uint32_t seq = 0;
  uint32_t k = 0;
  uint32_t m = 0;
  uint64_t body_bytes = 0;
  uint64_t body_checksum = 0;
};

uint64_t ParityDatasetHash(std::string_view dataset, uint64_t version);

std::string EncodeParityTrailer(const ParityTrailer& trailer);
// Corruption unless `bytes` is a well-formed trailer of a file `file_bytes` long.
Result<ParityTrailer> DecodeParityTrailer(std::string_view bytes, uint64_t file_bytes);

// Writes body + trailer to `path` through a temporary file (fsynced, then
// renamed into place).
Status WriteParityFile(const std::string& path, std::string_view body, ParityTrailer trailer);

// Reads and verifies a whole parity file: its trailer, and the body against
// its checksum. `before_piece` (may be empty) is called with each piece's size
// before it is read; false stops with Cancelled. Corruption if damaged.
Result<ParityTrailer> VerifyParityFile(const std::string& path,
                                       const std::function<bool(size_t)>& before_piece = nullptr,
                                       std::string* body = nullptr);

}  // namespace strata
