#include "common/units.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ByteThresholdTest, ParsesSharesAndSizes) {
  auto share = ParseByteThreshold("5%");
  ASSERT_TRUE(share.ok()) << share.status().ToString();
  EXPECT_EQ(share->percent, 5u);
  EXPECT_EQ(share->Of(1000), 50u);
  EXPECT_EQ(share->Of(0), 0u);
  auto size = ParseByteThreshold("1GiB");
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->percent, 0u);
  EXPECT_EQ(size->Of(12345), 1ull << 30);
  EXPECT_EQ(FormatByteThreshold(*share), "5%");
  EXPECT_EQ(FormatByteThreshold(*size), "1.0 GiB");
}

TEST(ByteThresholdTest, ShareOfAHugeWholeDoesNotOverflow) {
  const uint64_t total = ~uint64_t{0};
  auto all = ParseByteThreshold("100%");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->Of(total), total);
  EXPECT_EQ(ParseByteThreshold("10%")->Of(total), total / 10);
}

TEST(ByteThresholdTest, RejectsWhatIsNeitherAShareNorASize) {
  for (const char* bad : {"", "%", "0%", "101%", "5.5%", "-1%", "5 %x", "lots", "1Q"}) {
    EXPECT_FALSE(ParseByteThreshold(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace strata
