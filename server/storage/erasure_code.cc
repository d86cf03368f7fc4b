#include "server/storage/erasure_code.h"

#include <isa-l/erasure_code.h>

#include <string>

namespace strata {

Result<ErasureCode> ErasureCode::Create(uint32_t k, uint32_t m) {
  if (k < 1 || m < 1 || k + m > kMaxEcChunks) {
    return Status::InvalidArgument("erasure code " + std::to_string(k) + "+" + std::to_string(m) +
                                   ": needs K >= 1, M >= 1 and K + M <= " + std::to_string(kMaxEcChunks));
  }
  return ErasureCode(k, m);
}

ErasureCode::ErasureCode(uint32_t k, uint32_t m) : k_(k), m_(m), matrix_((k + m) * k), tables_(32 * k * m) {
  gf_gen_cauchy1_matrix(matrix_.data(), static_cast<int>(k + m), static_cast<int>(k));
  ec_init_tables(static_cast<int>(k), static_cast<int>(m), matrix_.data() + k * k, tables_.data());
}

Status ErasureCode::Encode(std::span<const uint8_t* const> data, size_t len, std::span<uint8_t* const> parity) const {
  if (data.size() != k_ || parity.size() != m_) {
    return Status::InvalidArgument("encode: expected " + std::to_string(k_) + " data and " + std::to_string(m_) +
                                   " parity chunks");
  }
  if (len == 0) return Status::OK();
  if (len > (size_t{1} << 31)) return Status::InvalidArgument("encode: chunk too large");
  // ISA-L takes non-const pointers for its sources; it does not write them.
  std::vector<uint8_t*> sources(k_);
  for (uint32_t i = 0; i < k_; ++i) sources[i] = const_cast<uint8_t*>(data[i]);
  std::vector<uint8_t*> outputs(parity.begin(), parity.end());
  ec_encode_data(static_cast<int>(len), static_cast<int>(k_), static_cast<int>(m_),
                 const_cast<uint8_t*>(tables_.data()), sources.data(), outputs.data());
  return Status::OK();
}

Status ErasureCode::Reconstruct(std::span<uint8_t* const> chunks, size_t len, std::span<const uint32_t> present,
                                std::span<const uint32_t> wanted) const {
  const uint32_t n = k_ + m_;
  if (chunks.size() != n) return Status::InvalidArgument("reconstruct: expected " + std::to_string(n) + " chunks");
  if (len > (size_t{1} << 31)) return Status::InvalidArgument("reconstruct: chunk too large");
  std::vector<bool> have(n, false);
  std::vector<uint32_t> sources;  // the first K distinct present positions
  for (uint32_t p : present) {
    if (p >= n) return Status::InvalidArgument("reconstruct: no chunk " + std::to_string(p));
    if (have[p]) continue;
    have[p] = true;
    if (sources.size() < k_) sources.push_back(p);
  }
  for (uint32_t w : wanted) {
    if (w >= n) return Status::InvalidArgument("reconstruct: no chunk " + std::to_string(w));
    if (have[w]) return Status::InvalidArgument("reconstruct: chunk " + std::to_string(w) + " is present");
  }
  if (sources.size() < k_) {
    return Status::Unavailable("reconstruct: " + std::to_string(sources.size()) + " of " + std::to_string(n) +
                               " chunks present, " + std::to_string(k_) + " needed");
  }
  if (wanted.empty() || len == 0) return Status::OK();
  // The rows of the sources, inverted, map the sources back to the data.
  std::vector<uint8_t> sub(k_ * k_), inverse(k_ * k_);
  for (uint32_t r = 0; r < k_; ++r) {
    for (uint32_t c = 0; c < k_; ++c) sub[r * k_ + c] = matrix_[sources[r] * k_ + c];
  }
  if (gf_invert_matrix(sub.data(), inverse.data(), static_cast<int>(k_)) != 0) {
    return Status::Internal("reconstruct: singular matrix");  // cannot happen with a Cauchy matrix
  }
  // Each wanted chunk's row, expressed over the sources: a data chunk's row
  // of the inverse, a parity chunk's generator row times the inverse.
  std::vector<uint8_t> rows(wanted.size() * k_);
  for (size_t w = 0; w < wanted.size(); ++w) {
    const uint32_t target = wanted[w];
    for (uint32_t c = 0; c < k_; ++c) {
      if (target < k_) {
        rows[w * k_ + c] = inverse[target * k_ + c];
      } else {
        uint8_t s = 0;
        for (uint32_t j = 0; j < k_; ++j) s ^= gf_mul(matrix_[target * k_ + j], inverse[j * k_ + c]);
        rows[w * k_ + c] = s;
      }
    }
  }
  std::vector<uint8_t> tables(32 * k_ * wanted.size());
  ec_init_tables(static_cast<int>(k_), static_cast<int>(wanted.size()), rows.data(), tables.data());
  std::vector<uint8_t*> in(k_), out(wanted.size());
  for (uint32_t r = 0; r < k_; ++r) in[r] = chunks[sources[r]];
  for (size_t w = 0; w < wanted.size(); ++w) out[w] = chunks[wanted[w]];
  ec_encode_data(static_cast<int>(len), static_cast<int>(k_), static_cast<int>(wanted.size()), tables.data(), in.data(),
                 out.data());
  return Status::OK();
}

}  // namespace strata
