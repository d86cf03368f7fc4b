#include "plan/windowed_permutation.h"

#include <algorithm>

namespace strata {

namespace {

// Derives the key of block b's inner permutation.
uint64_t BlockKey(uint64_t key, uint64_t block) {
  uint64_t z = key ^ (block + 0x9E3779B97F4A7C15ULL) * 0xD6E8FEB86659FD93ULL;
  z = (z ^ (z >> 32)) * 0xD6E8FEB86659FD93ULL;
  return z ^ (z >> 32);
}

}  // namespace

WindowedPermutation::WindowedPermutation(uint64_t n, uint64_t window, uint64_t key)
    : n_(n), window_(window >= n ? 0 : window), key_(key), order_(window_ == 0 ? n : (n + window_ - 1) / window_, key) {
  if (window_ == 0) return;
  blocks_ = (n + window_ - 1) / window_;
  last_size_ = n - (blocks_ - 1) * window_;
  last_slot_ = order_.Inverse(blocks_ - 1);
}

void WindowedPermutation::Locate(uint64_t i, uint64_t* slot, uint64_t* offset) const {
  // Output slots before last_slot_ hold full blocks, then the (maybe short)
  // last block, then full blocks again.
  const uint64_t short_start = last_slot_ * window_;
  if (i < short_start) {
    *slot = i / window_;
    *offset = i % window_;
  } else if (i < short_start + last_size_) {
    *slot = last_slot_;
    *offset = i - short_start;
  } else {
    const uint64_t j = i - short_start - last_size_;
    *slot = last_slot_ + 1 + j / window_;
    *offset = j % window_;
  }
}

uint64_t WindowedPermutation::Forward(uint64_t i) const {
  if (window_ == 0) return order_.Forward(i);
  uint64_t slot, offset;
  Locate(i, &slot, &offset);
  const uint64_t block = order_.Forward(slot);
  const uint64_t size = block == blocks_ - 1 ? last_size_ : window_;
  return block * window_ + KeyedPermutation(size, BlockKey(key_, block)).Forward(offset);
}

void WindowedPermutation::ForwardMany(uint64_t first, uint64_t stride, size_t count, uint64_t* out) const {
  if (window_ == 0) return order_.ForwardMany(first, stride, count, out);
  // One block at a time: the run of positions whose offsets stay inside it.
  for (size_t k = 0; k < count;) {
    uint64_t slot, offset;
    Locate(first + k * stride, &slot, &offset);
    const uint64_t block = order_.Forward(slot);
    const uint64_t size = block == blocks_ - 1 ? last_size_ : window_;  // slot last_slot_ holds the last block
    const size_t run = stride == 0 ? count - k : std::min<uint64_t>(count - k, (size - offset - 1) / stride + 1);
    KeyedPermutation(size, BlockKey(key_, block)).ForwardMany(offset, stride, run, out + k);
    for (size_t e = k; e < k + run; ++e) out[e] += block * window_;
    k += run;
  }
}

}  // namespace strata
