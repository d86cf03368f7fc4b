// The receive window a client takes for a node at a measured round trip
// (client/round_trip.h); RoundTrip itself against a real stratad, near and
// behind a slow link, is in tests/integration/unread_streams_test.cc.
#include "client/round_trip.h"

#include <gtest/gtest.h>

namespace strata::client_internal {
namespace {

using std::chrono::microseconds;

TEST(WindowForTest, AFixedWindowStaysWhileItMovesAGigabyteASecond) {
  constexpr int kMiB = 1 << 20;
  EXPECT_EQ(WindowFor(kMiB, microseconds(50)), kMiB);              // loopback
  EXPECT_EQ(WindowFor(kMiB, microseconds(500)), kMiB);             // 2.1 GB/s
  EXPECT_EQ(WindowFor(kMiB, microseconds(1048)), kMiB);            // just over 1 GB/s
  EXPECT_EQ(WindowFor(kMiB, microseconds(1049)), 0);               // just under
  EXPECT_EQ(WindowFor(kMiB, microseconds(4000)), 0);               // 262 MB/s: gRPC's own
  EXPECT_EQ(WindowFor(16 * kMiB, microseconds(4000)), 16 * kMiB);  // 4.2 GB/s
}

TEST(WindowForTest, UnknownOrZeroRoundTripsAndGrpcsWindowAreLeftAlone) {
  EXPECT_EQ(WindowFor(1 << 20, std::nullopt), 1 << 20);  // no answer: the caller's choice stands
  EXPECT_EQ(WindowFor(1 << 20, microseconds(0)), 1 << 20);
  EXPECT_EQ(WindowFor(0, microseconds(4000)), 0);
  EXPECT_EQ(WindowFor(0, std::nullopt), 0);
}

}  // namespace
}  // namespace strata::client_internal
