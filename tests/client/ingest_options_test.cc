// SetRedundancy: "ec:K+M" into IngestOptions, what `strata ingest
// --redundancy` and the Python client's redundancy= take.
#include <gtest/gtest.h>

#include "strata/dataset.h"

namespace strata {
namespace {

TEST(SetRedundancyTest, ParsesKAndM) {
  IngestOptions o;
  ASSERT_TRUE(SetRedundancy("ec:4+2", &o).ok());
  EXPECT_EQ(o.ec_data, 4u);
  EXPECT_EQ(o.ec_parity, 2u);
  ASSERT_TRUE(SetRedundancy("ec:16+16", &o).ok());
  EXPECT_EQ(o.ec_data, 16u);
  EXPECT_EQ(o.ec_parity, 16u);
}

TEST(SetRedundancyTest, RefusesMalformedTextAndLeavesTheOptions) {
  for (const char* text : {"", "ec:", "ec:4", "ec:4+", "ec:+2", "ec:0+2", "ec:4+0", "ec:30+3", "ec:4+2x", "ec:-4+2",
                           "ec:004+2", "rs:4+2", "EC:4+2", "ec:4 +2", "4+2"}) {
    IngestOptions o;
    o.ec_data = 7;
    o.ec_parity = 1;
    const Status s = SetRedundancy(text, &o);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << "'" << text << "'";
    EXPECT_NE(s.message().find("invalid redundancy"), std::string::npos) << s.message();
    EXPECT_EQ(o.ec_data, 7u) << text;
    EXPECT_EQ(o.ec_parity, 1u) << text;
  }
}

}  // namespace
}  // namespace strata
