#include "client/cli/format.h"

#include <gtest/gtest.h>

#include <sstream>

namespace strata::cli {
namespace {

TEST(FormatTest, ParsesSizes) {
  const std::pair<const char*, uint64_t> cases[] = {
      {"4096", 4096},         {"0", 0},
      {"512B", 512},          {"64MiB", 64ull << 20},
      {"64mib", 64ull << 20}, {"64M", 64ull << 20},
      {"1G", 1ull << 30},     {"1g", 1ull << 30},
      {"2KiB", 2048},         {"2k", 2048},
      {"2KB", 2000},          {"1.5GB", 1500000000},
      {"1.5G", 3ull << 29},   {"1T", 1ull << 40},
      {"3TB", 3000000000000}, {" 8 MiB ", 8ull << 20},
  };
  for (const auto& [text, bytes] : cases) {
    auto r = ParseSize(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    EXPECT_EQ(*r, bytes) << text;
  }
}

TEST(FormatTest, RefusesBadSizes) {
  for (const char* bad :
       {"", "MiB", "-1", "1.2.3", "12XB", "1 G B", "16EiB", "99999999999999999999", "20000000T", "1e3"}) {
    auto r = ParseSize(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(FormatTest, ParsesDurations) {
  const std::pair<const char*, uint64_t> cases[] = {
      {"3600", 3600}, {"30s", 30}, {"15m", 900}, {"1h", 3600}, {"1d", 86400}, {"1w", 604800}, {"2H", 7200},
  };
  for (const auto& [text, seconds] : cases) {
    auto r = ParseDurationSeconds(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    EXPECT_EQ(*r, seconds) << text;
  }
}

TEST(FormatTest, RefusesBadDurations) {
  for (const char* bad : {"", "0", "0h", "h", "1.5h", "1y", "-5", "1hh", "99999999999999999999w"}) {
    auto r = ParseDurationSeconds(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(FormatTest, FormatsBytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(64ull << 20), "64.0 MiB");
  EXPECT_EQ(FormatBytes(300ull << 30), "300 GiB");
  EXPECT_EQ(FormatBytes((1ull << 20) - 1), "1.00 MiB");  // not "1024 KiB"
  EXPECT_EQ(FormatBytes(~uint64_t{0}), "16.0 EiB");
}

TEST(FormatTest, FormatsCountsAndDurations) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(1000), "1,000");
  EXPECT_EQ(FormatCount(1234567), "1,234,567");
  EXPECT_EQ(FormatDuration(0.25), "250ms");
  EXPECT_EQ(FormatDuration(12.34), "12.3s");
  EXPECT_EQ(FormatDuration(245), "4m05s");
  EXPECT_EQ(FormatDuration(2 * 3600 + 3 * 60 + 9), "2h03m");
  EXPECT_EQ(FormatDuration(3 * 86400 + 4 * 3600), "3d04h");
  EXPECT_EQ(FormatDuration(-1), "0ms");
  EXPECT_EQ(FormatPercent(0.4201), "42.0%");
  EXPECT_EQ(FormatTimeUtc(0), "-");
  EXPECT_EQ(FormatTimeUtc(1700000000000), "2023-11-14 22:13:20 UTC");
}

TEST(FormatTest, TablesAlignColumns) {
  Table table({{"LABEL"}, {"SAMPLES", Table::Align::kRight}});
  table.AddRow({"cat", "1,000"});
  table.AddRow({"hippopotamus", "7"});
  std::ostringstream out;
  table.Print(out, "  ");
  EXPECT_EQ(out.str(),
            "  LABEL         SAMPLES\n"
            "  cat             1,000\n"
            "  hippopotamus        7\n");
}

TEST(FormatTest, CountsSortByCountThenKeyAndAreCapped) {
  std::ostringstream out;
  PrintCounts(out, "LABEL", {{"b", 5}, {"a", 5}, {"c", 10}, {"d", 0}}, 3);
  EXPECT_EQ(out.str(),
            "LABEL  SAMPLES  SHARE\n"
            "c           10  50.0%\n"
            "a            5  25.0%\n"
            "b            5  25.0%\n"
            "... and 1 more\n");
  std::ostringstream empty;
  PrintCounts(empty, "LABEL", {}, 3, "  ");
  EXPECT_EQ(empty.str(), "  (none)\n");
}

}  // namespace
}  // namespace strata::cli
