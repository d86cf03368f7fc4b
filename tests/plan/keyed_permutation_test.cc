#include "plan/keyed_permutation.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/plan/forward_many_check.h"

namespace strata {
namespace {

TEST(KeyedPermutationTest, IsABijectionWithAnInverse) {
  for (uint64_t n : {0, 1, 2, 3, 4, 5, 15, 16, 17, 255, 256, 1000, 4097, 65537}) {
    KeyedPermutation p(n, 12345 + n);
    std::vector<bool> hit(n, false);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t x = p.Forward(i);
      ASSERT_LT(x, n) << "n=" << n;
      ASSERT_FALSE(hit[x]) << "n=" << n << " collision at " << x;
      hit[x] = true;
      ASSERT_EQ(p.Inverse(x), i);
    }
  }
}

TEST(KeyedPermutationTest, KeyChoosesThePermutation) {
  KeyedPermutation a(1000, 1), b(1000, 2), a2(1000, 1);
  int same = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    same += a.Forward(i) == b.Forward(i);
    EXPECT_EQ(a.Forward(i), a2.Forward(i));
  }
  EXPECT_LT(same, 20);  // about 1 expected for independent permutations
}

TEST(KeyedPermutationTest, ImagesOfOnePositionSpreadOverKeys) {
  // Over many keys, position 0 of a 10-element permutation lands on every
  // value about equally often (a loose chi-square bound; keys are fixed, so the
  // result is deterministic).
  constexpr int kKeys = 20000;
  std::vector<int> counts(10, 0);
  for (int k = 0; k < kKeys; ++k) ++counts[KeyedPermutation(10, static_cast<uint64_t>(k)).Forward(0)];
  double chi2 = 0;
  for (int c : counts) chi2 += (c - kKeys / 10.0) * (c - kKeys / 10.0) / (kKeys / 10.0);
  EXPECT_LT(chi2, 40.0) << "9 degrees of freedom; 40 is far in the tail";
}

TEST(KeyedPermutationTest, LargeDomains) {
  KeyedPermutation p(uint64_t{1} << 40, 99);
  for (uint64_t i : {uint64_t{0}, uint64_t{1}, (uint64_t{1} << 40) - 1, uint64_t{123456789}}) {
    const uint64_t x = p.Forward(i);
    EXPECT_LT(x, uint64_t{1} << 40);
    EXPECT_EQ(p.Inverse(x), i);
  }
}

// Sizes around every edge of the Feistel domain (the smallest even-bit power
// of two >= n, so powers of 2 and of 4 and their neighbours), small primes,
// a dataset-sized n and a large one.
std::vector<uint64_t> ManySizes() {
  std::vector<uint64_t> sizes = {0, 1, 2, 3, 5, 7, 11, 13, 31, 97, 251, 300'000, 10'000'019, (uint64_t{1} << 40) + 7};
  for (int bits = 2; bits <= 24; ++bits) {
    const uint64_t p = uint64_t{1} << bits;  // every power of 4 is one of these
    sizes.insert(sizes.end(), {p - 1, p, p + 1});
  }
  return sizes;
}

TEST(KeyedPermutationTest, ForwardManyEqualsForward) {
  static_assert(KeyedPermutation::kLanes == 8, "the counts below straddle 8 lanes");
  for (uint64_t n : ManySizes()) {
    for (uint64_t key : {uint64_t{0}, uint64_t{12345} + n, uint64_t{0xFFFFFFFFFFFFFFFF}}) {
      const KeyedPermutation p(n, key);
      ExpectManyEqualsForward(p, 0, 1, 0);
      if (n == 0) continue;
      // All of a small domain, in one call and with every stride up to 9.
      if (n <= 4096) {
        for (uint64_t stride = 1; stride <= 9; ++stride) ExpectManyEqualsForward(p, 0, stride, (n - 1) / stride + 1);
      }
      // Counts below, at and around the lane count, and not a multiple of it,
      // from the start, the middle and the end of the domain.
      for (size_t count : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100, 1001}) {
        for (uint64_t stride : {uint64_t{1}, uint64_t{2}, uint64_t{8}, uint64_t{1000}, n / count}) {
          if (stride == 0 || (count - 1) * stride >= n) continue;
          const uint64_t last_first = n - 1 - (count - 1) * stride;  // the furthest start that fits
          for (uint64_t first : {uint64_t{0}, last_first / 2, last_first})
            ExpectManyEqualsForward(p, first, stride, count);
        }
      }
    }
  }
}

TEST(KeyedPermutationTest, ForwardManyWithStrideZeroRepeatsOnePosition) {
  const KeyedPermutation p(1000, 7);
  ExpectManyEqualsForward(p, 999, 0, 20);
}

TEST(KeyedPermutationTest, ImagesArePinned) {
  // Plans, plan hashes and resume tokens depend on these values: a change to
  // the permutation is a change of every stored plan.
  const KeyedPermutation small(300'000, 42), large((uint64_t{1} << 40) + 7, 42);
  EXPECT_EQ(small.Forward(0), uint64_t{107294});
  EXPECT_EQ(small.Forward(299'999), uint64_t{34492});
  EXPECT_EQ(large.Forward(0), uint64_t{958931476198});
  EXPECT_EQ(large.Forward(uint64_t{1} << 40), uint64_t{928222019639});
  uint64_t hash = 0xCBF29CE484222325;  // FNV-1a over the first 4096 images
  for (uint64_t i = 0; i < 4096; ++i) hash = (hash ^ small.Forward(i)) * 0x100000001B3;
  EXPECT_EQ(hash, uint64_t{0x4C51F2B46A7AB6DF});
}

}  // namespace
}  // namespace strata
