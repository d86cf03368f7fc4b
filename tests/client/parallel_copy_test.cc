// ParallelCopy: one copy split over threads lands every byte, touches nothing
// past the end, and uses no more threads than pieces of kMinPiece allow.
#include "client/staging/parallel_copy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace strata::staging_internal {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::vector<unsigned char> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

TEST(ParallelCopyTest, EverySizeArrivesWholeAndNothingPastTheEnd) {
  // Sizes around the piece boundaries: none, under one piece, exactly one,
  // just over several, and not a multiple of the page alignment.
  const std::vector<size_t> sizes = {
      0, 1, 4095, kMiB - 1, kMiB, kMiB + 1, 2 * kMiB, 2 * kMiB + 1, 3 * kMiB + 4097, 5 * kMiB + 123, 7 * kMiB};
  for (int threads : {1, 2, 3, 5}) {
    ParallelCopy copy(threads);
    EXPECT_EQ(copy.threads(), threads);
    uint32_t seed = 1;
    for (size_t n : sizes) {
      const auto from = RandomBytes(n, seed++);
      std::vector<unsigned char> to(n + 64, 0xEE);
      copy.Copy(to.data(), from.data(), n);
      ASSERT_TRUE(std::equal(from.begin(), from.end(), to.begin())) << n << " bytes, " << threads << " threads";
      for (size_t i = n; i < to.size(); ++i) ASSERT_EQ(to[i], 0xEE) << "byte " << i << " past " << n;
    }
  }
}

TEST(ParallelCopyTest, ManyJobsInARowReuseTheSameWorkers) {
  // Jobs alternate between one piece (workers idle) and all of them, so a
  // worker that skipped a job must still take its piece of the next.
  ParallelCopy copy(4);
  const auto from = RandomBytes(6 * kMiB + 7, 99);
  std::vector<unsigned char> to(from.size());
  for (int round = 0; round < 200; ++round) {
    const size_t n = round % 3 == 0 ? kMiB / 2 : from.size() - static_cast<size_t>(round);
    std::memset(to.data(), 0, to.size());
    copy.Copy(to.data(), from.data(), n);
    ASSERT_EQ(0, std::memcmp(to.data(), from.data(), n)) << "round " << round;
  }
}

TEST(ParallelCopyTest, WorkersStartOnlyWhenAPayloadNeedsThem) {
  ParallelCopy copy(4);
  const auto from = RandomBytes(3 * kMiB, 5);
  std::vector<unsigned char> to(from.size());
  for (int i = 0; i < 10; ++i) copy.Copy(to.data(), from.data(), kMiB + 100);  // one piece
  EXPECT_EQ(copy.workers_started(), 0u);
  copy.Copy(to.data(), from.data(), from.size());
  EXPECT_EQ(copy.workers_started(), 3u);
  EXPECT_EQ(0, std::memcmp(to.data(), from.data(), from.size()));
}

TEST(ParallelCopyTest, AutomaticCountIsAQuarterOfTheCoresFromOneToFour) {
  const int n = ParallelCopy::AutoThreads();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, 4);
  ParallelCopy copy(n);
  EXPECT_EQ(copy.threads(), n);
}

}  // namespace
}  // namespace strata::staging_internal
