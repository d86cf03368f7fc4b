// A new client ingesting into a stratad built before the Ingest call's
// acceptance signal (initial metadata "strata-ingest-accepted"), as in a
// rolling upgrade where clients are upgraded first. Such a server sends no
// initial metadata until the call ends; a client that waited for it timed out
// and cancelled an ingest the server had taken.
//
// The behaviour is checked against this build's stratad with
// STRATA_TEST_LEGACY_INGEST=1 (it then behaves as the old build), and, when
// STRATA_OLD_STRATAD names an old stratad binary, against that binary with
// the new CLI (skipped otherwise: CI has no old build).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "common/status.h"
#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

// A single stratad with the legacy behaviour, or the binary given, and a client of it.
std::unique_ptr<SingleNode> StartLegacy(const std::string& binary = "") {
  if (binary.empty()) setenv("STRATA_TEST_LEGACY_INGEST", "1", 1);
  auto node = std::make_unique<SingleNode>(binary);
  unsetenv("STRATA_TEST_LEGACY_INGEST");
  return node;
}

uint64_t Streamed(Client& client, const std::string& dataset) { return DistinctIdsStreamed(client, dataset).size(); }

TEST(IngestCompatTest, NewClientIngestsIntoALegacyServer) {
  auto server = StartLegacy();
  ASSERT_FALSE(HasFatalFailure());
  Client& client = server->client();
  // Twice: the second ingest is version 2, after a server that took the first.
  for (int round = 0; round < 2; ++round) {
    Status s = TryIngestSynthetic(client, "legacy", 1500).status();
    ASSERT_TRUE(s.ok()) << "round " << round << ": " << s.ToString();
  }
  EXPECT_EQ(Streamed(client, "legacy@1"), 1500u);
  EXPECT_EQ(Streamed(client, "legacy@2"), 1500u);
}

// A legacy server's refusal cannot come before the samples: it ends the call,
// and the write or commit reports the server's own status.
TEST(IngestCompatTest, LegacyServersRefusalIsReported) {
  auto server = StartLegacy();
  ASSERT_FALSE(HasFatalFailure());
  Client& client = server->client();
  ASSERT_TRUE(TryIngestSynthetic(client, "sealed", 100).ok());
  Status s = TryIngestSynthetic(client, "sealed@1", 100).status();  // version 1 is sealed: immutable
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("already sealed"), std::string::npos) << s.ToString();
}

// The old build itself, when one is named: the new CLI ingests a folder.
TEST(IngestCompatTest, NewCliIngestsIntoAnOldStratadBinary) {
  const char* old = std::getenv("STRATA_OLD_STRATAD");
  if (old == nullptr || *old == '\0') GTEST_SKIP() << "STRATA_OLD_STRATAD names no old stratad binary";
  auto server = StartLegacy(old);
  ASSERT_FALSE(HasFatalFailure());
  const std::string folder = server->dir().Join("folder");
  CommandResult gen = RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", folder, "--format", "folder", "--samples", "300",
                                  "--size", "300", "--classes", "3"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  CommandResult r =
      RunCommand({StrataCliBinary(), "ingest", "--dataset", "old", folder, "--server", server->address()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Streamed(server->client(), "old@1"), 300u);
}

}  // namespace
}  // namespace strata::testing
