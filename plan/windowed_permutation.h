// A keyed permutation of [0, n) with locality, for storage where random reads
// are slow: [0, n) is cut into blocks of `window` consecutive values; the
// blocks come in a keyed pseudorandom order and the values inside each block
// in a keyed pseudorandom order of their own. Consecutive positions therefore
// read within one block of `window` neighbouring samples (one region of a
// shard) before moving on. window 0, or window >= n with n a single block,
// gives exactly KeyedPermutation(n, key).
//
// The price is quality: positions that are close draw from the same block,
// so whatever neighbouring samples share (a source file, a time, a label when
// the data was ingested sorted) shows up together. bench/sampler_bench.cc
// measures it.
//
// Thread-safety: immutable after construction; safe to share.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plan/keyed_permutation.h"

namespace strata {

class WindowedPermutation {
 public:
  WindowedPermutation(uint64_t n, uint64_t window, uint64_t key);

  uint64_t size() const { return n_; }
  // The image of i. REQUIRES: i < size(). O(1).
  uint64_t Forward(uint64_t i) const;
  // out[k] = Forward(first + k * stride) for every k < count, bit for bit.
  // Window 0 is KeyedPermutation::ForwardMany; with blocks, the positions that
  // fall in one block share its lookup and go to its inner permutation's
  // ForwardMany together. REQUIRES: count == 0, or first + (count - 1) *
  // stride < size() (computed without overflow); out has room for count values.
  void ForwardMany(uint64_t first, uint64_t stride, size_t count, uint64_t* out) const;

 private:
  // Output slot of position i (which block, in order_'s order) and i's offset
  // in it. REQUIRES: window_ != 0, i < size().
  void Locate(uint64_t i, uint64_t* slot, uint64_t* offset) const;

  uint64_t n_;
  uint64_t window_;         // 0: no blocks
  uint64_t blocks_ = 0;     // ceil(n / window)
  uint64_t last_size_ = 0;  // size of the last block (window if n divides evenly)
  uint64_t last_slot_ = 0;  // output slot that holds the last block
  uint64_t key_;
  KeyedPermutation order_;  // of values (window 0) or of blocks
};

}  // namespace strata
