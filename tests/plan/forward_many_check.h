// Shared by the permutation tests: ForwardMany checked against Forward.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace strata {

// ForwardMany(first, stride, count) against Forward, position by position,
// and nothing written past `count`. P: KeyedPermutation or WindowedPermutation.
template <typename P>
void ExpectManyEqualsForward(const P& p, uint64_t first, uint64_t stride, size_t count) {
  constexpr uint64_t kUnset = 0xDEADBEEFDEADBEEF;
  std::vector<uint64_t> out(count + 1, kUnset);
  p.ForwardMany(first, stride, count, out.data());
  for (size_t k = 0; k < count; ++k) {
    ASSERT_EQ(out[k], p.Forward(first + k * stride))
        << "n=" << p.size() << " first=" << first << " stride=" << stride << " count=" << count << " k=" << k;
  }
  EXPECT_EQ(out[count], kUnset) << "wrote past count: n=" << p.size() << " count=" << count;
}

}  // namespace strata
