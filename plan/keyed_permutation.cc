#include "plan/keyed_permutation.h"

#include <algorithm>
#include <bit>
#include <cstddef>

#include "plan/splitmix.h"

namespace strata {

namespace {

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
  for (auto& k : keys_) k = SplitMixNext(&state);
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

// The rounds outside, the lanes inside: each round's L multiply chains are
// independent, so they run in parallel. Unrolled, the lanes live in registers
// (and the stack) rather than in arrays indexed at run time.
template <int L>
inline void KeyedPermutation::EncryptLanes(uint64_t* x) const {
  uint64_t left[L], right[L];
#pragma GCC unroll 8
  for (int l = 0; l < L; ++l) {
    left[l] = x[l] >> half_bits_;
    right[l] = x[l] & half_mask_;
  }
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t key = keys_[static_cast<size_t>(r)];
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) {
      const uint64_t next = left[l] ^ (Mix(right[l] ^ key) & half_mask_);  // Round(r, right[l])
      left[l] = right[l];
      right[l] = next;
    }
  }
#pragma GCC unroll 8
  for (int l = 0; l < L; ++l) x[l] = (left[l] << half_bits_) | right[l];
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

// Each lane walks one position's cycle (Forward's loop) and writes its result
// to out; a lane that lands below n takes the next position, so the lanes stay
// busy however long each walk is. Encrypt is a bijection, so a walk's values
// never depend on what the other lanes hold: the results are Forward's.
void KeyedPermutation::ForwardMany(uint64_t first, uint64_t stride, size_t count, uint64_t* out) const {
  if (n_ <= 1 || count == 1) {
    for (size_t k = 0; k < count; ++k) out[k] = Forward(first + k * stride);
    return;
  }
  // Lane l's next step is x[l] = Encrypt(x[l]); its result goes to dst[l].
  uint64_t x[kLanes] = {};
  uint64_t* dst[kLanes] = {};
  size_t next = 0;  // the next position to hand to a lane
  while (next < count && next < kLanes) {
    x[next] = first + next * stride;
    dst[next] = out + next;
    ++next;
  }
  // While every lane can take a fresh position, without branches (whether a
  // walk ends is a coin toss the branch predictor would lose): each pass
  // stores every lane's value to its slot, and the store that ends a walk is
  // the result, since the lane then moves to a fresh slot.
  while (count - next >= kLanes) {
    EncryptLanes<kLanes>(x);
#pragma GCC unroll 8
    for (int l = 0; l < kLanes; ++l) {
      *dst[l] = x[l];
      const bool done = x[l] < n_;
      const uint64_t fresh = first + next * stride;
      x[l] = done ? fresh : x[l];
      dst[l] = done ? out + next : dst[l];
      next += done;
    }
  }
  // The last positions. The busy lanes are [0, busy): a lane whose walk ends
  // with nothing left to take is dropped and the others close up, and the
  // passes narrow to 4 and 2 lanes, then one walk alone, since an idle lane
  // would cost as much as a busy one (counts below kLanes start here).
  static_assert(kLanes == 8, "the passes below narrow from 8 lanes");
  size_t busy = std::min<size_t>(count, kLanes);
  const auto settle = [&] {
    size_t kept = 0;
    for (size_t l = 0; l < busy; ++l) {
      uint64_t v = x[l];
      uint64_t* d = dst[l];
      if (v < n_) {
        *d = v;
        if (next == count) continue;
        v = first + next * stride;
        d = out + next++;
      }
      x[kept] = v;
      dst[kept++] = d;
    }
    busy = kept;
  };
  while (busy > 1) {
    if (busy > 4) {
      EncryptLanes<kLanes>(x);
    } else if (busy > 2) {
      EncryptLanes<4>(x);
    } else {
      EncryptLanes<2>(x);
    }
    settle();
  }
  if (busy == 1) {
    uint64_t v = x[0];
    do v = Encrypt(v);
    while (v >= n_);
    *dst[0] = v;
  }
}

uint64_t KeyedPermutation::Inverse(uint64_t x) const {
  if (n_ <= 1) return x;
  uint64_t i = Decrypt(x);
  while (i >= n_) i = Decrypt(i);
  return i;
}

}  // namespace strata
