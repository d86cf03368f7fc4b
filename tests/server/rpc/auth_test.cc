#include "server/rpc/auth.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(AuthTest, MethodsNeedTheirRoles) {
  EXPECT_EQ(RuleFor("/strata.v1.DataService/Ingest").role, Role::kWriter);
  EXPECT_EQ(RuleFor("/strata.v1.DataService/StreamBatches").role, Role::kReader);
  EXPECT_EQ(RuleFor("/strata.v1.DataService/ServeWork").role, Role::kReader);
  EXPECT_EQ(RuleFor("/strata.v1.AdminService/GetStatus").role, Role::kReader);
  EXPECT_EQ(RuleFor("/strata.v1.AdminService/DeleteVersion").role, Role::kAdmin);  // strata rm
  // A client measures its node's round trip with health checks (client/round_trip.h).
  EXPECT_EQ(RuleFor("/grpc.health.v1.Health/Check").role, Role::kReader);
  EXPECT_EQ(RuleFor("/grpc.health.v1.Health/Watch").role, Role::kAdmin);
  EXPECT_TRUE(RuleFor("/strata.v1.PeerService/PutVersion").peer);
  EXPECT_EQ(RuleFor("/something.Else/Delete").role, Role::kAdmin);
  EXPECT_EQ(RuleFor("").role, Role::kAdmin);
}

TEST(AuthTest, TokenFilesParse) {
  auto t = TokenTable::Parse("# comment\n\nreader aaaaaaaaaaaaaaaa trainers\nadmin bbbbbbbbbbbbbbbb\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->size(), 2u);
  EXPECT_EQ(t->Find("aaaaaaaaaaaaaaaa"), Role::kReader);
  EXPECT_EQ(t->Find("bbbbbbbbbbbbbbbb"), Role::kAdmin);
  EXPECT_FALSE(t->Find("cccccccccccccccc").has_value());
  EXPECT_FALSE(t->Find("").has_value());
}

TEST(AuthTest, BadTokenFilesNameTheLineNotTheToken) {
  // A file of comments alone (one being rewritten) would lock everyone out.
  for (const char* empty : {"", "# soon\n\n"}) {
    auto t = TokenTable::Parse(empty);
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << empty;
    EXPECT_NE(t.status().message().find("no tokens"), std::string::npos) << t.status().message();
  }
  for (const char* bad : {"owner aaaaaaaaaaaaaaaa\n", "reader\n", "reader short\n"}) {
    auto t = TokenTable::Parse(bad);
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(t.status().message().find("line 1"), std::string::npos) << t.status().message();
    EXPECT_EQ(t.status().message().find("aaaaaaaaaaaaaaaa"), std::string::npos) << t.status().message();
  }
}

}  // namespace
}  // namespace strata
