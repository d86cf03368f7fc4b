#include "server/ingest/stratum_key.h"

#include <gtest/gtest.h>

#include "server/ingest/time_bucket.h"

namespace strata {
namespace {

v1::Sample SampleWith(const std::string& label, std::map<std::string, std::string> attributes) {
  v1::Sample s;
  s.set_key("images/cat/001.jpg");
  s.set_label(label);
  for (auto& [k, v] : attributes) (*s.mutable_attributes())[k] = v;
  return s;
}

int64_t Ts(const std::string& text) {
  auto ts = ParseTimestampSeconds(text);
  EXPECT_TRUE(ts.ok()) << text << ": " << ts.status().ToString();
  return ts.ok() ? ts.value() : 0;
}

TEST(TimeBucketTest, UnixSeconds) {
  EXPECT_EQ(Ts("0"), 0);
  EXPECT_EQ(Ts("1704067200"), 1704067200);
  EXPECT_EQ(Ts("-86400"), -86400);
  EXPECT_EQ(Ts("1704067200.75"), 1704067200) << "fractions floor";
  EXPECT_EQ(Ts("-0.5"), -1);
  EXPECT_EQ(Ts("1.7e9"), 1700000000);
}

TEST(TimeBucketTest, IsoDatesAndTimes) {
  EXPECT_EQ(Ts("1970-01-01"), 0);
  EXPECT_EQ(Ts("2024-01-01"), 1704067200);
  EXPECT_EQ(Ts("2024-01-01T00:00:00Z"), 1704067200);
  EXPECT_EQ(Ts("2024-01-01T06:30"), 1704067200 + 6 * 3600 + 30 * 60);
  EXPECT_EQ(Ts("2024-01-01 06:30:15.999"), 1704067200 + 6 * 3600 + 30 * 60 + 15);
  EXPECT_EQ(Ts("2024-01-01T02:00:00+02:00"), 1704067200) << "offsets are subtracted";
  EXPECT_EQ(Ts("2023-12-31T22:00:00-0200"), 1704067200);
  EXPECT_EQ(Ts("2024-01-01T05:00:00+05"), 1704067200);
  EXPECT_EQ(Ts("2024-02-29"), 1709164800) << "leap day";
  EXPECT_EQ(Ts("1969-12-31T23:59:59Z"), -1);
  EXPECT_EQ(Ts("0000-01-01"), -62167219200);
}

TEST(TimeBucketTest, BadTimestamps) {
  for (const char* bad : {"", "yesterday", "2024-13-01", "2023-02-29", "2024-01-32", "2024-01-01T24:00",
                          "2024-01-01T12", "2024-01-01T12:00:00+25:00", "2024-01-01Z", "12abc", "nan", "inf", "1e300",
                          "2024/01/01", "2024-01-01T12:00:00ZZ", "99999999999999999999"}) {
    auto ts = ParseTimestampSeconds(bad);
    EXPECT_EQ(ts.status().code(), Code::kInvalidArgument) << "'" << bad << "'";
  }
}

TEST(TimeBucketTest, BucketsFloorAndRenderInUtc) {
  EXPECT_EQ(FormatTimeBucket(Ts("2024-01-31T18:45:00Z"), 86400), "2024-01-31");
  EXPECT_EQ(FormatTimeBucket(Ts("2024-01-31T18:45:00Z"), 3600), "2024-01-31T18:00:00Z");
  EXPECT_EQ(FormatTimeBucket(Ts("2024-01-31T18:45:00Z"), 6 * 3600), "2024-01-31T18:00:00Z");
  EXPECT_EQ(FormatTimeBucket(Ts("2024-01-31T17:59:59Z"), 6 * 3600), "2024-01-31T12:00:00Z");
  EXPECT_EQ(FormatTimeBucket(Ts("2024-01-31T01:00:00+02:00"), 86400), "2024-01-30") << "UTC day";
  EXPECT_EQ(FormatTimeBucket(-1, 86400), "1969-12-31") << "before the epoch floors down";
  EXPECT_EQ(FormatTimeBucket(Ts("2024-01-03"), 7 * 86400), "2023-12-28") << "weeks start on Thursdays";
  EXPECT_EQ(FormatTimeBucket(Ts("2024-01-01T00:00:59Z"), 60), "2024-01-01T00:00:00Z");
  // Year 0's first week starts in year -1: ISO 8601's expanded year ("-001" before).
  EXPECT_EQ(FormatTimeBucket(Ts("0000-01-01"), 7 * 86400), "-0001-12-30");
  EXPECT_EQ(FormatTimeBucket(Ts("0000-01-01T05:00:00Z"), 3600), "0000-01-01T05:00:00Z");
}

TEST(StratumKeyerTest, KeysFromLabelAttributesAndTimeBuckets) {
  const v1::Sample s = SampleWith("cat", {{"source", "web"}, {"ts", "1704103200"}});  // 2024-01-01T10:00Z
  auto key = [&](std::vector<std::string> by, std::string field, uint64_t width) {
    auto k = StratumKeyer::Create(std::move(by), std::move(field), width);
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    auto out = k->KeyOf(s);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? out.value() : std::string();
  };
  EXPECT_EQ(key({}, "", 0), "cat");
  EXPECT_EQ(key({"label", "source"}, "", 0), "label=cat|source=web");
  EXPECT_EQ(key({"source", "missing"}, "", 0), "source=web|missing=");
  EXPECT_EQ(key({}, "ts", 86400), "label=cat|ts=2024-01-01");
  EXPECT_EQ(key({"label", "source"}, "ts", 3600), "label=cat|source=web|ts=2024-01-01T10:00:00Z");
  EXPECT_EQ(key({"ts"}, "ts", 86400), "2024-01-01") << "the time bucket alone";
  EXPECT_EQ(key({"ts", "label"}, "ts", 86400), "ts=2024-01-01|label=cat");
}

TEST(StratumKeyerTest, MissingOrBadTimestampsNameTheSample) {
  auto keyer = StratumKeyer::Create({"label"}, "ts", 86400);
  ASSERT_TRUE(keyer.ok());
  auto missing = keyer->KeyOf(SampleWith("cat", {}));
  EXPECT_EQ(missing.status().code(), Code::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("images/cat/001.jpg"), std::string::npos) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find("'ts'"), std::string::npos);
  auto bad = keyer->KeyOf(SampleWith("cat", {{"ts", "last tuesday"}}));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("last tuesday"), std::string::npos) << bad.status().ToString();
}

TEST(StratumKeyerTest, RefusesBadOptions) {
  EXPECT_EQ(StratumKeyer::Create({"label", "label"}, "", 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(StratumKeyer::Create({""}, "", 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(StratumKeyer::Create({}, "ts", 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(StratumKeyer::Create({}, "", 3600).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace strata
