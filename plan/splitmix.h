// splitmix64 (Steele, Lea and Flood): a 64-bit mixer with full avalanche. The
// plans hash keys with it, so its output is part of every epoch's order and
// must never change.
#pragma once

#include <cstdint>

namespace strata {

// The finaliser alone: a well-mixed hash of one 64-bit value.
inline uint64_t SplitMixFinalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The generator: advances *state and returns its next value.
inline uint64_t SplitMixNext(uint64_t* state) { return SplitMixFinalize(*state += 0x9E3779B97F4A7C15ULL); }

}  // namespace strata
