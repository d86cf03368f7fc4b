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
#include <set>

#include "common/status.h"

#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

// Starts a single stratad with the legacy behaviour, or the binary given.
std::unique_ptr<StratadProcess> StartLegacy(TempDir& dir, const std::string& binary = "") {
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  o.extra_args = {"--log-level", "info"};
  o.binary = binary;
  if (binary.empty()) setenv("STRATA_TEST_LEGACY_INGEST", "1", 1);
  auto p = StratadProcess::Start(o);
  unsetenv("STRATA_TEST_LEGACY_INGEST");
  return p;
}

Status IngestN(Client& client, const std::string& dataset, uint64_t n) {
  IngestOptions o;
  o.dataset = dataset;
  auto writer = client.StartIngest(o);
  if (!writer.ok()) return writer.status();
  for (uint64_t i = 0; i < n; ++i) {
    Sample s;
    s.key = "k" + std::to_string(i);
    s.label = SyntheticLabel(i, 3);
    s.fields.push_back(Field{"bin", SyntheticPayload(i)});
    STRATA_RETURN_IF_ERROR(writer.value()->Write(s));
  }
  return writer.value()->Commit().status();
}

uint64_t Streamed(Client& client, const std::string& dataset) {
  StreamOptions o;
  o.dataset = dataset;
  o.batch_size = 50;
  RankRun run = StreamAll(client, o);
  EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  std::set<uint64_t> ids;
  for (const auto& b : run.batches) ids.insert(b.ids().begin(), b.ids().end());
  return ids.size();
}

TEST(IngestCompatTest, NewClientIngestsIntoALegacyServer) {
  TempDir dir;
  auto server = StartLegacy(dir);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(server->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // Twice: the second ingest is version 2, after a server that took the first.
  for (int round = 0; round < 2; ++round) {
    Status s = IngestN(*client.value(), "legacy", 1500);
    ASSERT_TRUE(s.ok()) << "round " << round << ": " << s.ToString();
  }
  EXPECT_EQ(Streamed(*client.value(), "legacy@1"), 1500u);
  EXPECT_EQ(Streamed(*client.value(), "legacy@2"), 1500u);
}

// A legacy server's refusal cannot come before the samples: it ends the call,
// and the write or commit reports the server's own status.
TEST(IngestCompatTest, LegacyServersRefusalIsReported) {
  TempDir dir;
  auto server = StartLegacy(dir);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(server->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE(IngestN(*client.value(), "sealed", 100).ok());
  Status s = IngestN(*client.value(), "sealed@1", 100);  // version 1 is sealed: immutable
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("already sealed"), std::string::npos) << s.ToString();
}

// The old build itself, when one is named: the new CLI ingests a folder.
TEST(IngestCompatTest, NewCliIngestsIntoAnOldStratadBinary) {
  const char* old = std::getenv("STRATA_OLD_STRATAD");
  if (old == nullptr || *old == '\0') GTEST_SKIP() << "STRATA_OLD_STRATAD names no old stratad binary";
  TempDir dir;
  auto server = StartLegacy(dir, old);
  ASSERT_NE(server, nullptr);
  const std::string folder = dir.Join("folder");
  CommandResult gen = RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", folder, "--format", "folder", "--samples",
                                  "300", "--size", "300", "--classes", "3"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  CommandResult r = RunCommand({StrataCliBinary(), "ingest", "--dataset", "old", folder, "--server", server->address()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto client = Client::Connect(server->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ(Streamed(*client.value(), "old@1"), 300u);
}

}  // namespace
}  // namespace strata::testing
