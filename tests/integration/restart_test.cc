// Stopping and restarting stratad: SIGTERM drains and exits 0, and a restart on
// the same data directory serves the same batches again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <regex>
#include <thread>

#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

StreamOptions Options(uint32_t rank, uint32_t world, uint32_t batch) {
  StreamOptions o;
  o.dataset = "persist";
  o.rank = rank;
  o.world = world;
  o.batch_size = batch;
  o.seed = 77;
  return o;
}

TEST(RestartTest, RestartOnTheSameDataDirectoryServesTheSameBatches) {
  SingleNode node;
  IngestSynthetic(node.client(), "persist", 1500, 5);
  RankRun before = StreamAll(node.client(), Options(1, 2, 32));
  ASSERT_EQ(before.end.code(), Code::kOutOfRange);
  ASSERT_EQ(node.Stop(), 0) << node.process().Log();
  EXPECT_NE(node.process().Log().find("stopped: storage closed"), std::string::npos);

  node.Start();  // same data directory
  auto listed = node.client().ListDatasets();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->at(0).samples, 1500u);
  RankRun after = StreamAll(node.client(), Options(1, 2, 32));
  ASSERT_EQ(after.end.code(), Code::kOutOfRange);
  ASSERT_EQ(after.batches.size(), before.batches.size());
  for (size_t i = 0; i < before.batches.size(); ++i) {
    EXPECT_EQ(after.batches[i].ids(), before.batches[i].ids());
    EXPECT_EQ(after.batches[i].payload(), before.batches[i].payload());
  }
  EXPECT_EQ(node.Stop(), 0);
}

TEST(RestartTest, SecondStratadOnTheSameDataDirectoryIsRefused) {
  SingleNode node;
  CommandResult second = RunCommand(
      {StratadBinary(), "--data-dir", node.dir().Join("data"), "--listen", "127.0.0.1:0", "--metrics-listen", ""}, 30);
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("in use by another stratad"), std::string::npos) << second.err;
  EXPECT_TRUE(node.process().Running());
}

TEST(RestartTest, AnIngestWhoseCommitGetsNoAnswerSaysItsVersionMayBeSealed) {
  // The node may seal the version and go before its answer reaches the
  // client: a plain "Socket closed" made a retry ingest the data twice.
  SingleNode node;
  IngestOptions o;
  o.dataset = "unanswered";
  auto writer = node.client().StartIngest(o);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (int i = 0; i < 20; ++i) {
    Sample s;
    s.key = "k" + std::to_string(i);
    s.fields = {{"bin", std::string(100, 'x')}};
    ASSERT_TRUE((*writer)->Write(s).ok());
  }
  node.process().Signal(SIGSTOP);  // the commit goes out; no answer comes back
  std::thread kill([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    node.process().Kill();
  });
  auto committed = (*writer)->Commit();
  kill.join();
  ASSERT_FALSE(committed.ok());
  EXPECT_EQ(committed.status().code(), Code::kUnavailable) << committed.status().ToString();
  EXPECT_THAT(committed.status().message(),
              ::testing::AllOf(::testing::HasSubstr("no answer to the commit"), ::testing::HasSubstr("'unanswered'"),
                               ::testing::HasSubstr("may have been sealed"), ::testing::HasSubstr("strata ls")));
}

TEST(RestartTest, SigtermDrainsAnOpenStreamWhichCanResume) {
  SingleNode node;
  IngestSynthetic(node.client(), "persist", 3000, 3);
  StreamOptions o = Options(0, 1, 1);  // 3000 steps: the stream is open when the signal comes
  auto stream = node.client().OpenStream(o);
  ASSERT_TRUE(stream.ok());
  Batch b;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(stream.value()->Next(&b).ok());
  kill(node.process().pid(), SIGTERM);
  uint64_t received = 5;
  Status end;
  for (;;) {
    end = stream.value()->Next(&b);
    if (!end.ok()) break;
    ++received;
  }
  EXPECT_EQ(end.code(), Code::kUnavailable) << end.ToString();
  std::smatch m;
  const std::string message = end.message();
  ASSERT_TRUE(std::regex_search(message, m, std::regex("resume this stream at step (\\d+)"))) << message;
  EXPECT_EQ(std::stoull(m[1]), received) << "every step before the resume point was delivered";
  EXPECT_EQ(stream.value()->resume_token().step, received);
  EXPECT_LT(received, 3000u);
  EXPECT_EQ(node.process().Terminate(), 0) << node.process().Log();
}

}  // namespace
}  // namespace strata::testing
