// A keyed pseudorandom permutation of [0, n): a balanced Feistel network over
// the smallest even-bit power of two >= n, with cycle-walking to stay inside
// [0, n). It maps a position to a sample in O(1) time and O(1) memory, so no
// n-element array is ever built and the time to the first batch does not grow
// with the dataset.
//
// Thread-safety: immutable after construction; safe to share.
#pragma once

#include <array>
#include <cstdint>

namespace strata {

class KeyedPermutation {
 public:
  static constexpr int kRounds = 6;

  // A bijection on [0, n) chosen by `key`. n may be 0 (empty) or 1 (identity).
  KeyedPermutation(uint64_t n, uint64_t key);

  uint64_t size() const { return n_; }

  // The image of i. REQUIRES: i < size(). Expected < 4 Feistel evaluations.
  uint64_t Forward(uint64_t i) const;
  // The preimage of x: Forward(Inverse(x)) == x. REQUIRES: x < size().
  uint64_t Inverse(uint64_t x) const;

 private:
  uint64_t Encrypt(uint64_t x) const;
  uint64_t Decrypt(uint64_t x) const;
  uint64_t Round(int r, uint64_t half) const;

  uint64_t n_;
  int half_bits_;
  uint64_t half_mask_;
  std::array<uint64_t, kRounds> keys_{};
};

}  // namespace strata
