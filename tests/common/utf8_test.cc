#include "common/utf8.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(Utf8Test, AcceptsWellFormedText) {
  for (const char* ok : {"", "plain", "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x90\x88", "\x7f"}) {
    EXPECT_TRUE(IsValidUtf8(ok)) << ok;
  }
}

TEST(Utf8Test, RefusesMalformedText) {
  for (const char* bad : {"\xff", "\xc3", "caf\xe9", "\xc0\xaf" /* overlong */, "\xed\xa0\x80" /* surrogate */,
                          "\xf4\x90\x80\x80" /* above U+10FFFF */, "\xe6\x97", "\x80"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
  }
}

}  // namespace
}  // namespace strata
