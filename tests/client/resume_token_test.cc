#include "strata/resume_token.h"

#include <gtest/gtest.h>

#include "client/resume_plan.h"
#include "common/dataset_ref.h"

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
  token.version = kMaxDatasetVersion;  // the highest a version may be
  token.plan_hash = ~uint64_t{0};
  token.seed = ~uint64_t{0};
  token.epoch = 0;
  token.step = 0;
  auto decoded = ResumeToken::Decode(token.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, token);
  token.version = kMaxDatasetVersion + 1;
  EXPECT_FALSE(ResumeToken::Decode(token.Encode()).ok());
}

TEST(ResumeTokenTest, CompleteTokensCarryThePlan) {
  ResumeToken token;
  token.dataset = "cats";
  token.version = 3;
  token.plan_hash = 0x1234;
  token.seed = 5;
  token.epoch = 1;
  token.step = 17;
  token.global_batch = 256;
  token.drop_last = true;
  token.sampler = std::string("\x08\x01\x00\xff", 4);  // opaque bytes, any value
  ASSERT_TRUE(token.complete());
  const std::string text = token.Encode();
  EXPECT_EQ(text, "strata2:cats@3:0000000000001234:256:drop:080100ff:5:1:17");
  auto decoded = ResumeToken::Decode(text);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, token);

  token.drop_last = false;
  token.sampler.clear();  // the default spec
  EXPECT_EQ(token.Encode(), "strata2:cats@3:0000000000001234:256:short:-:5:1:17");
  decoded = ResumeToken::Decode(token.Encode());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, token);
}

TEST(ResumeTokenTest, OldFormatTokensStillDecodeAsIncomplete) {
  auto decoded = ResumeToken::Decode("strata1:cats@2:00000000000000ab:1:2:3");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_FALSE(decoded->complete());
  EXPECT_EQ(decoded->step, 3u);
  EXPECT_EQ(decoded->Encode(), "strata1:cats@2:00000000000000ab:1:2:3");
}

TEST(ResumeTokenTest, RefusesMalformedCompleteTokens) {
  for (const char* bad : {
           "strata2:cats@1:00000000000000ab:0:short:-:1:2:3",    // global batch 0
           "strata2:cats@1:00000000000000ab:-4:short:-:1:2:3",   // signed
           "strata2:cats@1:00000000000000ab:4:keep:-:1:2:3",     // remainder
           "strata2:cats@1:00000000000000ab:4:short::1:2:3",     // empty sampler
           "strata2:cats@1:00000000000000ab:4:short:0:1:2:3",    // odd hex
           "strata2:cats@1:00000000000000ab:4:short:0G:1:2:3",   // not hex
           "strata2:cats@1:00000000000000ab:4:short:0A:1:2:3",   // upper case
           "strata2:cats@1:00000000000000ab:4:short:-:1:2:3:4",  // extra field
           "strata1:cats@1:00000000000000ab:4:short:-:1:2:3",    // format 1 with a plan
       }) {
    auto r = ResumeToken::Decode(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
  const std::string huge = "strata2:cats@1:00000000000000ab:4:short:" + std::string(200000, 'a') + ":1:2:3";
  auto r = ResumeToken::Decode(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("longer than"), std::string::npos) << r.status().message();
  EXPECT_LT(r.status().message().size(), 1000u);  // the message quotes a bounded prefix
}

// A token taken before the first part has no plan hash; format 2 carries
// the plan it resumes, so it needs none.
TEST(ResumeTokenTest, CompleteTokensMayPrecedeThePlanHash) {
  auto decoded = ResumeToken::Decode("strata2:cats@1:0000000000000000:4:short:-:1:2:0");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->plan_hash, 0u);
  EXPECT_TRUE(decoded->complete());
}

TEST(ResumeTokenTest, RefusesMalformedTokens) {
  for (const char* bad : {
           "", "strata1:",
           "strata3:cats@1:00000000000000ab:1:2:3",                     // unknown format
           "strata2:cats@1:00000000000000ab:1:2:3",                     // format 2 without its plan
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
           "strata1:cats@1:0000000000000000:1:2:3",                     // no plan to check
       }) {
    auto r = ResumeToken::Decode(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
}

// A token's global batch that divides among the ranks but gives each more
// than a batch holds is refused for that, not as one that does not divide.
TEST(ResumeTokenTest, APlanTooLargeForTheRanksSaysSo) {
  auto token = ResumeToken::Decode("strata2:cats@1:00000000000000ab:18446744073709551615:short:-:1:2:3");
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  StreamOptions options;
  options.world = 1;
  Status s = client_internal::ApplyPlan(*token, &options);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("more than a batch may hold"), std::string::npos) << s.message();
  options.world = 2;
  s = client_internal::ApplyPlan(*token, &options);
  EXPECT_NE(s.message().find("does not divide among 2 ranks"), std::string::npos) << s.message();
  token->global_batch = 12;
  options.world = 4;
  ASSERT_TRUE(client_internal::ApplyPlan(*token, &options).ok());
  EXPECT_EQ(options.batch_size, 3u);
}

}  // namespace
}  // namespace strata
