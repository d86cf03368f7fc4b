#include "strata/resume_token.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ResumeTokenTest, RoundTrips) {
  ResumeToken token;
  token.dataset = "imagenet-1k.train";
  token.version = 12;
  token.plan_hash = 0x00ab'cdef'0123'4567;
  token.seed = 42;
  token.epoch = 3;
  token.step = 1234;
  const std::string text = token.Encode();
  EXPECT_EQ(text, "strata1:imagenet-1k.train@12:00abcdef01234567:42:3:1234");
  auto decoded = ResumeToken::Decode(text);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, token);
}

TEST(ResumeTokenTest, RoundTripsExtremeValues) {
  ResumeToken token;
  token.dataset = "a";
  token.version = ~uint64_t{0};
  token.plan_hash = ~uint64_t{0};
  token.seed = ~uint64_t{0};
  token.epoch = 0;
  token.step = 0;
  auto decoded = ResumeToken::Decode(token.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, token);
}

TEST(ResumeTokenTest, RefusesMalformedTokens) {
  for (const char* bad : {
           "", "strata1:",
           "strata2:cats@1:00000000000000ab:1:2:3",                     // unknown format
           "cats@1:00000000000000ab:1:2:3",                             // no prefix
           "strata1:cats:00000000000000ab:1:2:3",                       // no version
           "strata1:cats@0:00000000000000ab:1:2:3",                     // version 0
           "strata1:ca/ts@1:00000000000000ab:1:2:3",                    // bad name
           "strata1:cats@1:ab:1:2:3",                                   // short hash
           "strata1:cats@1:00000000000000ag:1:2:3",                     // not hex
           "strata1:cats@1:000000000000000ab:1:2:3",                    // long hash
           "strata1:cats@1:00000000000000ab:1:2",                       // missing step
           "strata1:cats@1:00000000000000ab:1:2:3:4",                   // extra field
           "strata1:cats@1:00000000000000ab:-1:2:3",                    // signed
           "strata1:cats@1:00000000000000ab:1:2:",                      // empty step
           "strata1:cats@1:00000000000000ab:1:2:3x",                    // trailing junk
           "strata1:cats@1:00000000000000ab:1:2:99999999999999999999",  // overflow
       }) {
    auto r = ResumeToken::Decode(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace strata
