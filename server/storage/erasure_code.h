// Reed-Solomon erasure coding over GF(2^8) (ISA-L), systematic: the K data
// chunks are stored as they are and M parity chunks are computed from them,
// so that any K of the K+M chunks give back all of them. The generator is a
// Cauchy matrix (ISA-L's gf_gen_cauchy1_matrix), whose every K x K submatrix
// of the K+M rows is invertible, for any K + M <= kMaxEcChunks.
//
// Chunks of one stripe share one length; a caller with shorter data chunks
// pads them with zeros (docs/design.md, "Erasure coding").
//
// Thread-safety: an ErasureCode is immutable after Create; Encode and
// Reconstruct may run concurrently.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"

namespace strata {

// The most chunks (K + M) a stripe may have.
inline constexpr uint32_t kMaxEcChunks = 32;

class ErasureCode {
 public:
  // InvalidArgument unless 1 <= k, 1 <= m and k + m <= kMaxEcChunks.
  static Result<ErasureCode> Create(uint32_t k, uint32_t m);

  uint32_t k() const { return k_; }
  uint32_t m() const { return m_; }

  // Computes the M parity chunks of `data` (K pointers) into `parity` (M
  // pointers), each chunk `len` bytes. InvalidArgument for wrong counts.
  Status Encode(std::span<const uint8_t* const> data, size_t len, std::span<uint8_t* const> parity) const;

  // Rebuilds chunks from any K others. `chunks` has K + M entries (data
  // first, then parity), each `len` bytes: those listed in `present` (at
  // least K distinct positions, in any order) are read; those in `wanted`
  // are written; the others are not touched (they may be null).
  // InvalidArgument for bad positions or a wanted one that is also present;
  // Unavailable (naming the count) with fewer than K present.
  Status Reconstruct(std::span<uint8_t* const> chunks, size_t len, std::span<const uint32_t> present,
                     std::span<const uint32_t> wanted) const;

 private:
  ErasureCode(uint32_t k, uint32_t m);

  uint32_t k_ = 0;
  uint32_t m_ = 0;
  std::vector<uint8_t> matrix_;  // (K + M) x K: identity over the Cauchy rows
  std::vector<uint8_t> tables_;  // ec_init_tables of the parity rows
};

}  // namespace strata
