#include "common/dataset_ref.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(DatasetRefTest, ParsesNamesAndVersions) {
  auto a = ParseDatasetRef("imagenet-1k_v2.train");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->name, "imagenet-1k_v2.train");
  EXPECT_FALSE(a->version.has_value());
  auto b = ParseDatasetRef("cats@12");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->name, "cats");
  EXPECT_EQ(b->version.value(), 12u);
  EXPECT_EQ(b->ToString(), "cats@12");
}

TEST(DatasetRefTest, RefusesNamesThatCouldEscapeTheDataDirectory) {
  for (const char* bad :
       {"", "a/b", "../x", "..", "x..y", ".hidden", "-flag", "a\\b", "sp ace", "tab\t", "caf\xc3\xa9"}) {
    auto r = ParseDatasetRef(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(ParseDatasetRef(std::string(129, 'a')).ok());
  EXPECT_TRUE(ParseDatasetRef(std::string(128, 'a')).ok());
}

TEST(DatasetRefTest, RefusesBadVersions) {
  for (const char* bad : {"cats@", "cats@0", "cats@-1", "cats@1x", "cats@99999999999999999999999"}) {
    auto r = ParseDatasetRef(bad);
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(DatasetRefTest, SimpleNamesAreLettersDigitsDotsUnderscoresAndDashes) {
  for (const char* good : {"a", "cli-0123abcd", "My_Field.v2", "..", "-x"}) EXPECT_TRUE(IsSimpleName(good, 16)) << good;
  for (const char* bad : {"", "a b", "a/b", "../x", "caf\xc3\xa9", "tab\t"}) EXPECT_FALSE(IsSimpleName(bad, 16)) << bad;
  EXPECT_TRUE(IsSimpleName(std::string(16, 'a'), 16));
  EXPECT_FALSE(IsSimpleName(std::string(17, 'a'), 16));
}

}  // namespace
}  // namespace strata
