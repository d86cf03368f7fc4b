// Replicator::Copies::WhenConfirmed, the seal's wait for copies without a
// blocked thread: answered at once when the outcome is known, else from the
// replicator's pool when the last push ends.
#include "server/cluster/replicator.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "tests/support/temp_dir.h"

namespace strata {
namespace {

class ReplicatorTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.Init().ok()); }

  static v1::NodeInfo Node(const std::string& id, const std::string& address) {
    v1::NodeInfo n;
    n.set_id(id);
    n.set_address(address);
    n.set_state(v1::NODE_UP);
    return n;
  }

  static v1::FileRef File() {
    v1::FileRef f;
    f.set_kind(v1::FileRef::SHARD);
    f.set_dataset("d");
    f.set_version(1);
    f.set_seq(0);
    return f;
  }

  testing::TempDir tmp_;
  DataDir dir_{tmp_.path()};
  Metrics metrics_{"node-1"};
  PeerClients peers_;
  Replicator replicator_{"node-1", &dir_, &peers_, &metrics_};
};

TEST_F(ReplicatorTest, AnOutcomeKnownNowIsAnsweredAtOnceOnTheCallingThread) {
  auto copies = replicator_.Replicate(File(), 10, {Node("node-1", "127.0.0.1:1")}, 1);
  std::thread::id answered_on;
  Status got = Status::Internal("not called");
  copies->WhenConfirmed(1, std::chrono::steady_clock::now() + std::chrono::minutes(1), [&](Status s) {
    answered_on = std::this_thread::get_id();
    got = std::move(s);
  });
  EXPECT_TRUE(got.ok()) << got.ToString();
  EXPECT_EQ(answered_on, std::this_thread::get_id());
}

TEST_F(ReplicatorTest, ACopyThatCannotBeWrittenIsAnsweredFromThePoolWhenItsPushEnds) {
  // node-2 listens nowhere (and the file is not here): its push fails, and
  // no other candidate is left.
  auto copies = replicator_.Replicate(File(), 10, {Node("node-1", "127.0.0.1:1"), Node("node-2", "127.0.0.1:1")}, 2);
  std::promise<std::pair<Status, std::thread::id>> answer;
  copies->WhenConfirmed(2, std::chrono::steady_clock::now() + std::chrono::minutes(5), [&](Status s) {
    answer.set_value({std::move(s), std::this_thread::get_id()});
  });
  auto [status, thread] = answer.get_future().get();
  EXPECT_EQ(status.code(), Code::kUnavailable) << status.ToString();
  EXPECT_NE(status.message().find("only 1 of 2 copies"), std::string::npos) << status.ToString();
  EXPECT_NE(thread, std::this_thread::get_id());
  EXPECT_EQ(copies->confirmed(), 1u);
}

TEST_F(ReplicatorTest, ACopyHandedOnToThisNodeIsItsOwnFile) {
  // node-2 listens nowhere: its copy goes to the next candidate, this node,
  // whose file is durable here already. Before, this node was passed over and
  // the copy was reported unwritable (an ingest whose coordinator was not a
  // holder failed when a holder died mid-ingest).
  auto copies = replicator_.Replicate(File(), 10, {Node("node-2", "127.0.0.1:1"), Node("node-1", "127.0.0.1:1")}, 1);
  const Status got = copies->WaitFor(1, std::chrono::steady_clock::now() + std::chrono::minutes(5));
  EXPECT_TRUE(got.ok()) << got.ToString();
  EXPECT_EQ(copies->holders(), std::vector<std::string>{"node-1"});
}

// Too few candidates (placement left out nodes down or full) and no push
// failed: the error says which nodes were left out and why, where it used to
// end in "last error: ".
TEST_F(ReplicatorTest, TooFewCandidatesSayWhy) {
  auto copies = replicator_.Replicate(File(), 10, {Node("node-1", "127.0.0.1:1")}, 2,
                                      "node-2 is down; node-3 is full (free space below its disk_high_watermark)");
  const Status got = copies->WaitFor(2, std::chrono::steady_clock::now() + std::chrono::minutes(1));
  EXPECT_EQ(got.code(), Code::kUnavailable) << got.ToString();
  EXPECT_NE(got.message().find("only 1 of 2 copies"), std::string::npos) << got.ToString();
  EXPECT_NE(got.message().find("no other node could take one: node-2 is down; node-3 is full"), std::string::npos)
      << got.ToString();

  auto alone = replicator_.Replicate(File(), 10, {Node("node-1", "127.0.0.1:1")}, 2);
  const Status lone = alone->WaitFor(2, std::chrono::steady_clock::now() + std::chrono::minutes(1));
  EXPECT_NE(lone.message().find("no other node could take one (the cluster has no other node up)"), std::string::npos)
      << lone.ToString();
}

}  // namespace
}  // namespace strata
