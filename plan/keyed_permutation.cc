#include "plan/keyed_permutation.h"

#include <bit>
#include <cstddef>

namespace strata {

namespace {

// splitmix64: derives independent round keys from one key.
uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A 64-bit finaliser with full avalanche: the Feistel round function.
inline uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

KeyedPermutation::KeyedPermutation(uint64_t n, uint64_t key) : n_(n) {
  // Bits needed for values < n, rounded up to an even count (at least 2).
  const int bits = n <= 1 ? 0 : std::bit_width(n - 1);
  half_bits_ = bits <= 2 ? 1 : (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  uint64_t state = key;
  for (auto& k : keys_) k = SplitMix(&state);
}

// Inlined into Encrypt and Decrypt: they are the inner loop of every sampler.
inline uint64_t KeyedPermutation::Round(int r, uint64_t half) const {
  return Mix(half ^ keys_[static_cast<size_t>(r)]) & half_mask_;
}

uint64_t KeyedPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t next = left ^ Round(r, right);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t KeyedPermutation::Decrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (int r = kRounds - 1; r >= 0; --r) {
    const uint64_t prev = right ^ Round(r, left);
    right = left;
    left = prev;
  }
  return (left << half_bits_) | right;
}

// Cycle-walking: the Feistel network permutes [0, 2^(2*half_bits)); applying
// it until the value lands below n restricts it to a permutation of [0, n).
uint64_t KeyedPermutation::Forward(uint64_t i) const {
  if (n_ <= 1) return i;
  uint64_t x = Encrypt(i);
  while (x >= n_) x = Encrypt(x);
  return x;
}

uint64_t KeyedPermutation::Inverse(uint64_t x) const {
  if (n_ <= 1) return x;
  uint64_t i = Decrypt(x);
  while (i >= n_) i = Decrypt(i);
  return i;
}

}  // namespace strata
