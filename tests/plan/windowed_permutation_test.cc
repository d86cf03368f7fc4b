#include "plan/windowed_permutation.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "plan/keyed_permutation.h"
#include "tests/plan/forward_many_check.h"

namespace strata {
namespace {

TEST(WindowedPermutationTest, IsABijection) {
  for (uint64_t n : {1, 2, 7, 64, 65, 1000, 4097}) {
    for (uint64_t window : {0, 1, 3, 64, 1000, 5000}) {
      const WindowedPermutation p(n, window, 31 + n);
      std::vector<bool> hit(n, false);
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t x = p.Forward(i);
        ASSERT_LT(x, n) << "n=" << n << " window=" << window;
        ASSERT_FALSE(hit[x]) << "n=" << n << " window=" << window << " collision at " << x;
        hit[x] = true;
      }
    }
  }
}

TEST(WindowedPermutationTest, WindowZeroOrAtLeastNIsTheKeyedPermutation) {
  for (uint64_t window : {0, 1000, 5000}) {
    const WindowedPermutation w(1000, window, 5);
    const KeyedPermutation k(1000, 5);
    for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(w.Forward(i), k.Forward(i)) << "window=" << window;
  }
}

TEST(WindowedPermutationTest, ForwardManyEqualsForward) {
  // Windows that divide n and that leave a short last block, of 1 position
  // and of most of a window; strides below, at and above the window.
  for (uint64_t n : {0, 1, 2, 3, 17, 64, 65, 127, 1000, 4096, 4097, 65535, 300'000}) {
    for (uint64_t window : {0, 1, 2, 7, 8, 64, 1000, 1024}) {
      for (uint64_t key : {3, 77}) {
        const WindowedPermutation p(n, window, key + n);
        ExpectManyEqualsForward(p, 0, 1, 0);
        if (n == 0) continue;
        if (n <= 4097) {
          for (uint64_t stride : {1, 2, 3, 8, 9, 100}) ExpectManyEqualsForward(p, 0, stride, (n - 1) / stride + 1);
        }
        for (size_t count : {1, 2, 3, 5, 8, 9, 100, 1001}) {
          for (uint64_t stride : {uint64_t{1}, uint64_t{5}, uint64_t{1024}, n / count}) {
            if (stride == 0 || (count - 1) * stride >= n) continue;
            const uint64_t last_first = n - 1 - (count - 1) * stride;
            for (uint64_t first : {uint64_t{0}, last_first / 3, last_first}) {
              ExpectManyEqualsForward(p, first, stride, count);
            }
          }
        }
      }
    }
  }
}

TEST(WindowedPermutationTest, ForwardManyOnALargeDomain) {
  const uint64_t n = (uint64_t{1} << 40) + 7;
  for (uint64_t window : {0, 1024, 1000003}) {
    const WindowedPermutation p(n, window, 9);
    for (uint64_t first : {uint64_t{0}, n / 2, n - 5000}) {
      ExpectManyEqualsForward(p, first, 1, 2000);
      ExpectManyEqualsForward(p, first, 2, 2000);
    }
    ExpectManyEqualsForward(p, 12345, n / 1000, 1000);
  }
}

}  // namespace
}  // namespace strata
