// Ingest with several writers while the dataset's home moves or stalls: a
// node that ranks first for the dataset comes up mid-ingest (the writers that
// joined before commit where they joined; a writer that joins after joins the
// same ingest there), or the home answers a join only after the client gave
// up waiting (the join is withdrawn and the writer joins again).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/placement.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/multi_writer_parts.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

// Four nodes listed and three up: node-4 is down, and leaves the map after
// the grace period, until the test starts it. (Under TSan the failure
// timeout is LocalCluster's scaled one: with 800 ms a running node flapped
// down there, and an ingest began at another home than the test expects, or
// a writer's node saw too few nodes for its copies; both seen in CI.)
LocalCluster::Options FourListedThreeUp() {
  LocalCluster::Options o;
  o.nodes = 4;
  o.start = 3;
  o.grace_period_s = 1;
  return o;
}

// Waits until each of the three running nodes has them all up and node-4
// out of its map.
bool ThreeUpEverywhere(LocalCluster& cluster) {
  return Eventually(
      [&] {
        for (int i = 0; i < 3; ++i) {
          if (cluster.UpIn(i) != 3 || cluster.Map(i).nodes.size() != 3) return false;
        }
        return true;
      },
      30s);
}

// A dataset name whose home is node-4 once it is up (and another node before).
std::string HomedAtNodeFour(const LocalCluster& cluster, const std::string& prefix) {
  std::vector<std::string> ids;
  for (int i = 0; i < cluster.size(); ++i) ids.push_back(cluster.Id(i));
  for (int k = 0;; ++k) {
    const std::string candidate = prefix + std::to_string(k);
    if (RankMembers(DatasetHomeKey(candidate), ids).front() == cluster.Id(3)) return candidate;
  }
}

// Starts node-4 and waits until every node's map has all four up.
bool StartNodeFour(LocalCluster& cluster) {
  cluster.Start(3);
  return Eventually(
      [&] {
        for (int i = 0; i < cluster.size(); ++i) {
          if (cluster.UpIn(i) != 4) return false;
        }
        return true;
      },
      30s);
}

// Commits every writer in turn; the last commit seals the version, with
// `samples` samples.
void CommitAllAndExpectSealed(std::vector<std::unique_ptr<IngestWriter>>& open, uint64_t samples) {
  for (size_t w = 0; w < open.size(); ++w) {
    auto committed = open[w]->Commit();
    ASSERT_TRUE(committed.ok()) << "writer " << w << ": " << committed.status().ToString();
    if (w + 1 == open.size()) {
      EXPECT_EQ(committed->dataset.state, VersionState::kSealed);
      EXPECT_EQ(committed->dataset.samples, samples);
    }
  }
}

// The ingest lives in the memory of the home its writers joined at: when a
// node joins and becomes the dataset's home in placement order, the writers'
// commits still go to the home they joined at, and the version seals there.
TEST(MultiWriterTest, CommitsGoToTheHomeTheWritersJoinedAtWhenANodeJoins) {
  LocalCluster cluster(FourListedThreeUp());
  ASSERT_TRUE(ThreeUpEverywhere(cluster)) << "the three running nodes up in each other's maps, node-4 out";
  const std::string name = HomedAtNodeFour(cluster, "moving-");
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  std::vector<std::unique_ptr<IngestWriter>> open(2);
  for (uint32_t w = 0; w < 2; ++w) {
    IngestOptions options = PartOptions("moving", 2, w);
    options.dataset = name;
    auto started = client->StartIngest(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    open[w] = std::move(started).value();
    ASSERT_TRUE(WriteSamples(*open[w], w, 100).ok());
  }

  // node-4 joins, and is now first in the dataset's home order.
  ASSERT_TRUE(StartNodeFour(cluster)) << "node-4 did not come up in every node's map";
  ASSERT_NO_FATAL_FAILURE(CommitAllAndExpectSealed(open, 200));
  ASSERT_TRUE(Eventually([&] { return client->Describe(name).ok(); }, 20s));
  EXPECT_EQ(Samples(*client, name).size(), 200u);
}

TEST(MultiWriterTest, AWriterJoiningAfterTheHomeMovedJoinsTheIngestWhereItBegan) {
  LocalCluster cluster(FourListedThreeUp());
  ASSERT_TRUE(ThreeUpEverywhere(cluster)) << "the three running nodes up in each other's maps, node-4 out";
  const std::string name = HomedAtNodeFour(cluster, "moved-");
  std::vector<std::string> ids;
  for (int i = 0; i < cluster.size(); ++i) ids.push_back(cluster.Id(i));
  // An ingest id that sends writer 1 to another node than node-4 (which asks
  // node-4) and writer 2 to node-4 itself, once the four are up.
  std::string ingest_id;
  for (int k = 0; ingest_id.empty(); ++k) {
    const std::string candidate = "moved-ingest-" + std::to_string(k);
    const std::vector<std::string> order = RankMembers(candidate, ids);
    if (order[1] != cluster.Id(3) && order[2] == cluster.Id(3)) ingest_id = candidate;
  }
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  auto start = [&](Client& at, uint32_t w) -> std::unique_ptr<IngestWriter> {
    IngestOptions options = PartOptions(ingest_id, 3, w);
    options.dataset = name;
    auto started = at.StartIngest(options);
    EXPECT_TRUE(started.ok()) << "writer " << w << ": " << started.status().ToString();
    if (!started.ok()) return nullptr;
    EXPECT_TRUE(WriteSamples(*started.value(), w, 100).ok());
    return std::move(started).value();
  };
  std::vector<std::unique_ptr<IngestWriter>> open(3);
  open[0] = start(*client, 0);  // joins at the home of the moment
  ASSERT_NE(open[0], nullptr);

  // node-4 joins, and is now first in the dataset's home order.
  ASSERT_TRUE(StartNodeFour(cluster)) << "node-4 did not come up in every node's map";
  open[1] = start(*client, 1);  // its node asks node-4, which finds the ingest at the old home
  open[2] = start(*client, 2);  // node-4 takes the writer itself, and finds the ingest the same way
  ASSERT_NE(open[1], nullptr);
  ASSERT_NE(open[2], nullptr);
  ASSERT_NO_FATAL_FAILURE(CommitAllAndExpectSealed(open, 300));
  ASSERT_TRUE(Eventually([&] { return client->Describe(name).ok(); }, 20s));
  EXPECT_EQ(Samples(*client, name).size(), 300u);
  // One version, sealed: node-4 began none of its own.
  auto at_new_home = cluster.Connect(3, 30000);
  ASSERT_NE(at_new_home, nullptr);
  for (Client* c : {client.get(), at_new_home.get()}) {
    auto listed = c->ListDatasets(/*include_unsealed=*/true);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    for (const DatasetInfo& v : listed.value()) {
      if (v.name != name) continue;
      EXPECT_EQ(v.state, VersionState::kSealed) << name << "@" << v.version << " at " << c->address();
    }
  }
}

// A home slower than the client's patience: a home that does not know an
// ingest asks the other nodes whether it is open there before it creates it
// (JoinAsHome), and a node that is stopped (SIGSTOP) but not yet taken for
// dead keeps that question waiting for its 2 s timeout. So every join of
// writer 0 sent before the ingest exists is answered after its client, which
// waits 1 s, gave up: the first of them joins all the same. Its node finds
// the call cancelled and withdraws the join (instead of aborting the ingest
// for every writer), the client, which gave up on a join it may hold, asks
// again, and the ingest seals with every writer's samples.
TEST(MultiWriterTest, AJoinItsClientGaveUpOnIsWithdrawnAndTheWriterJoinsAgain) {
  LocalCluster::Options options;
  options.failure_timeout_ms = 30000;  // the stopped node stays up in every map, and is asked
  LocalCluster cluster(options);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  // Writer 0 goes first to a node that is not the home, which asks the home;
  // the third node is the one stopped.
  const NodesAndHome nodes = HomeOf(cluster, "parts");
  const std::string ingest_id = IngestIdAwayFromHome(nodes, "patience", 0);
  const int home_index = nodes.home;
  const int first_index = nodes.IndexOf(RankMembers(ingest_id, nodes.ids)[0]);
  const int stopped = 3 - home_index - first_index;
  ClientOptions impatient;
  impatient.connect_timeout_ms = 1000;  // an attempt waits 1 s for its node to take the ingest
  auto client = Client::Connect(cluster.Address(first_index), impatient);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  cluster.Pause(stopped);
  auto first = client.value()->StartIngest(PartOptions(ingest_id, 2, 0));
  cluster.Resume(stopped);
  ASSERT_TRUE(first.ok()) << "writer 0: " << first.status().ToString() << "\n" << cluster.Process(home_index).Log();
  EXPECT_NE(cluster.Process(home_index).Log().find("writer 0 withdrew its join"), std::string::npos)
      << "no join was withdrawn: the first join did not come after its client had gone\n"
      << cluster.Process(home_index).Log();
  std::vector<std::unique_ptr<IngestWriter>> open;
  open.push_back(std::move(first).value());
  ASSERT_TRUE(WriteSamples(*open[0], 0, 100).ok());
  auto second = client.value()->StartIngest(PartOptions(ingest_id, 2, 1));
  ASSERT_TRUE(second.ok()) << "writer 1: " << second.status().ToString();
  open.push_back(std::move(second).value());
  ASSERT_TRUE(WriteSamples(*open[1], 1, 100).ok());
  ASSERT_NO_FATAL_FAILURE(CommitAllAndExpectSealed(open, 200));
  ASSERT_TRUE(Eventually([&] { return client.value()->Describe("parts").ok(); }, 20s));
  EXPECT_EQ(Samples(*client.value(), "parts").size(), 200u);
}

// Two homes begin the same ingest: the old home is stopped (SIGSTOP) and
// taken for down while a node that ranks first for the dataset comes up, so
// the next writer's join creates the ingest again at the new home, which
// cannot ask the old one. Neither would ever see both writers' commits. A
// home asks the other nodes before it takes a part (FindIngest), finds the
// other, and aborts the ingest at both: the commits are refused, saying so,
// and no version is left half-begun.
TEST(MultiWriterTest, AnIngestBegunByTwoHomesIsAbortedAtBothAtTheFirstCommit) {
  LocalCluster::Options o = FourListedThreeUp();
  o.grace_period_s = 300;   // the stopped home stays listed, down, and comes back
  LocalCluster cluster(o);  // settled: the three running nodes up in each other's maps (node-4 listed, down)
  const std::string name = HomedAtNodeFour(cluster, "split-");
  std::vector<std::unique_ptr<Client>> clients;  // kept: each writer holds what its client gave it
  clients.push_back(cluster.Connect(0, 30000));
  ASSERT_NE(clients.back(), nullptr);
  Client* client = clients.back().get();
  auto start = [&](uint32_t w) -> std::unique_ptr<IngestWriter> {
    IngestOptions options = PartOptions("split", 2, w);
    options.dataset = name;
    auto started = client->StartIngest(options);
    EXPECT_TRUE(started.ok()) << "writer " << w << ": " << started.status().ToString();
    if (!started.ok()) return nullptr;
    EXPECT_TRUE(WriteSamples(*started.value(), w, 100).ok());
    return std::move(started).value();
  };
  std::vector<std::unique_ptr<IngestWriter>> open(2);
  open[0] = start(0);  // begins the ingest at the old home
  ASSERT_NE(open[0], nullptr);
  // The old home is the node the ingest began at, which its log names: the
  // home of the maps at that moment, whatever they said just before.
  int old_home = -1;
  for (int i = 0; i < 3; ++i) {
    if (cluster.Process(i).Log().find("2 writers (ingest split)") != std::string::npos) old_home = i;
  }
  ASSERT_GE(old_home, 0) << "no running node says it began ingest split";
  // The client, and writer 1, go through a node that keeps running.
  clients.push_back(cluster.Connect(old_home == 0 ? 1 : 0, 30000));
  ASSERT_NE(clients.back(), nullptr);
  client = clients.back().get();

  // The old home stops and is taken for down; node-4 comes up, and is the
  // home in the maps of the nodes that run.
  cluster.Pause(old_home);
  cluster.Start(3);
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < cluster.size(); ++i) {
          if (i != old_home && cluster.UpIn(i) != 3) return false;
        }
        return true;
      },
      30s))
      << "node-4 up and the old home down in every running node's map";
  open[1] = start(1);  // begins the ingest again, at node-4
  ASSERT_NE(open[1], nullptr);
  cluster.Resume(old_home);
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < cluster.size(); ++i) {
          if (cluster.UpIn(i) != 4) return false;
        }
        return true;
      },
      30s))
      << "every node up in every node's map";

  // The first commit finds the other home (a commit taken before the homes
  // saw each other would only be aborted later, as when another writer fails).
  auto second = open[1]->Commit();
  auto first = open[0]->Commit();
  EXPECT_FALSE(first.ok() && second.ok()) << "both commits were taken: two versions that never seal";
  bool said = false;
  for (const auto* r : {&second, &first}) {
    if (r->ok()) continue;
    EXPECT_EQ(r->status().code(), Code::kFailedPrecondition) << r->status().ToString();
    said = said || r->status().message().find("begun by two nodes") != std::string::npos;
  }
  EXPECT_TRUE(said) << "no commit said why: " << second.status().ToString() << " / " << first.status().ToString();
  // Neither version is served, and neither stays half-begun: both are aborted.
  EXPECT_EQ(client->Describe(name).status().code(), Code::kNotFound);
  for (int i : {old_home, 3}) {
    auto at = cluster.Connect(i, 30000);
    ASSERT_NE(at, nullptr);
    ASSERT_TRUE(Eventually(
        [&] {
          auto listed = at->ListDatasets(/*include_unsealed=*/true);
          if (!listed.ok()) return false;
          for (const DatasetInfo& v : listed.value()) {
            if (v.name == name && v.state != VersionState::kAborted) return false;
          }
          return true;
        },
        20s))
        << cluster.Id(i) << " still holds a version of " << name << " that is not aborted";
  }
}

}  // namespace
}  // namespace strata::testing
