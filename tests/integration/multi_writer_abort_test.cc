// Ingest with several writers (issue 22, item 4), when a writer fails: its
// failure aborts the version for every writer; the writer hears of it only
// once the dataset's home has recorded the abort, so that no later commit is
// counted; and a writer's node that dies mid-part has the home abort the
// ingest (server/cluster/writer_watch.h); and an operator aborts one whose
// writer never came (`strata rm --abort`). The versions that seal are in
// multi_writer_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "common/placement.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/multi_writer_parts.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

// How a commit sent after another writer's abort is refused: the home refuses
// the part of an aborted ingest, or the writer's node has learnt of the abort
// first and says so (FailedPrecondition, "aborted"); or the holders of its
// last copies have, and refused them (Unavailable: too few copies).
bool RefusedAfterAbort(const Status& s) {
  return (s.code() == Code::kFailedPrecondition && s.message().find("aborted") != std::string::npos) ||
         s.code() == Code::kUnavailable;
}

// The files of `dataset` left on the cluster's nodes.
size_t FilesLeft(const LocalCluster& cluster, const std::string& dataset) {
  size_t n = 0;
  for (int i = 0; i < cluster.size(); ++i) {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(cluster.DataDir(i) + "/shards/" + dataset, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      n += it->is_regular_file();
    }
  }
  return n;
}

TEST(MultiWriterTest, AWriterThatFailsAbortsTheVersionForEveryWriter) {
  LocalCluster cluster({});
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  auto open_started = StartWriters(*client, "fails", 3, 3, 200);
  ASSERT_TRUE(open_started.ok()) << open_started.status().ToString();
  auto open = std::move(open_started).value();
  auto first = open[0]->Commit();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->writers_committed, 1u);
  open[1]->Abort();  // writer 1 gives up: the stream ends without a commit
  auto last = open[2]->Commit();
  ASSERT_FALSE(last.ok()) << "writer 2's commit was taken after writer 1 had aborted";
  EXPECT_TRUE(RefusedAfterAbort(last.status())) << last.status().ToString();

  // No node serves it, and every node drops what the writers wrote.
  EXPECT_EQ(client->Describe("parts").status().code(), Code::kNotFound);
  EXPECT_TRUE(Eventually([&] { return FilesLeft(cluster, "parts") == 0; }, 20s))
      << FilesLeft(cluster, "parts") << " files left";

  // A later ingest with the same id is refused; with a new id it works.
  auto again = client->StartIngest(PartOptions("fails", 3, 1));
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kFailedPrecondition) << again.status().ToString();
  auto retry_started = StartWriters(*client, "retry", 2, 2, 100);
  ASSERT_TRUE(retry_started.ok()) << retry_started.status().ToString();
  auto retry = std::move(retry_started).value();
  ASSERT_TRUE(retry[0]->Commit().ok());
  auto sealed = retry[1]->Commit();
  ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
  EXPECT_EQ(sealed->dataset.state, VersionState::kSealed);
  EXPECT_EQ(sealed->dataset.samples, 200u);
}

// Writers 0, 1 and 2 of a fresh ingest (writer 1 at a node that is not the
// home, the client connected to another still), writer 0 committed; then
// the home is stopped (SIGSTOP) while `fail` makes writer 1 fail, on a
// thread: it must not return until the home, resumed, has recorded the
// abort, and writer 2's commit is refused after. Returns what `fail` got.
Status ExpectWriter1HearsOfItsFailureOnlyOnceTheHomeKnows(const std::string& prefix,
                                                          const std::function<Status(IngestWriter&)>& fail) {
  LocalCluster::Options options;
  options.failure_timeout_ms = 10000;  // the stopped home stays in every map as it was: up
  LocalCluster cluster(options);
  EXPECT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  const NodesAndHome nodes = HomeOf(cluster, "parts");
  const std::string ingest_id = IngestIdAwayFromHome(nodes, prefix, 1);
  const int home_index = nodes.home;
  auto client = cluster.Connect(home_index == 0 ? 1 : 0, 30000);
  const auto setup_failed = [](const Status& s) {
    ADD_FAILURE() << "setting up: " << s.ToString();
    return s;
  };
  if (client == nullptr) return setup_failed(Status::Internal("no client"));
  auto started = StartWriters(*client, ingest_id, 3, 3, 100);
  if (!started.ok()) return setup_failed(started.status());
  auto open = std::move(started).value();
  if (auto first = open[0]->Commit(); !first.ok()) return setup_failed(first.status());

  cluster.Pause(home_index);
  std::atomic<bool> returned{false};
  Status failed;
  std::thread writer([&] {
    failed = fail(*open[1]);
    returned = true;
  });
  std::this_thread::sleep_for(1s);
  const bool early = returned.load();
  EXPECT_FALSE(early) << "writer 1 heard of its failure while the home, which must record the abort, was stopped";
  cluster.Resume(home_index);
  writer.join();
  if (early) {
    for (int i = 0; i < cluster.size(); ++i) ADD_FAILURE() << cluster.Id(i) << "'s log:\n" << cluster.Process(i).Log();
  }

  auto last = open[2]->Commit();
  EXPECT_FALSE(last.ok()) << "writer 2's commit was taken after writer 1 had failed";
  EXPECT_TRUE(RefusedAfterAbort(last.status())) << last.status().ToString();
  EXPECT_EQ(client->Describe("parts").status().code(), Code::kNotFound);
  return failed;
}

// A writer's Abort() returns once the dataset's home has recorded the abort,
// so that a commit another writer sends after it has returned is refused.
// (Writer 1's node used to answer its client at once and tell the home on the
// side: writer 2's commit could reach the home first and be taken, 2 of 3,
// which TSan's slower processes once showed in CI.)
TEST(MultiWriterTest, AnAbortIsRecordedAtTheHomeBeforeTheWriterHearsOfIt) {
  const Status aborted = ExpectWriter1HearsOfItsFailureOnlyOnceTheHomeKnows("hold", [](IngestWriter& w) {
    w.Abort();
    return Status::OK();
  });
  EXPECT_TRUE(aborted.ok()) << aborted.ToString();
}

// The same when the writer's node refuses one of its samples: the node
// aborts the part at once and tells the home on the side, and the call that
// ends with the refusal waits for the home's answer too (it used to end at
// once, the part being aborted already).
TEST(MultiWriterTest, AWriterWhoseSampleIsRefusedHearsOnlyOnceTheHomeRecordedTheAbort) {
  const Status failed = ExpectWriter1HearsOfItsFailureOnlyOnceTheHomeKnows("refused", [](IngestWriter& w) {
    Sample bad;
    bad.key = "bad";
    bad.fields.push_back({"j@g", "x"});  // a field name the node refuses
    Status s = w.Write(bad);
    return s.ok() ? w.Commit().status() : s;
  });
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("j@g"), std::string::npos) << failed.ToString();
}

// A writer's node that dies mid-part (kill -9) never commits or aborts, and,
// restarted, knows nothing of the part: the version used to stay ingesting
// for ever, neither sealable nor deletable. The home watches each writer's
// node until its part is committed (server/cluster/writer_watch.h) and aborts
// the ingest: within a round when the node, back, says the part does not run
// there; after 30 s of silence when it stays down.
TEST(MultiWriterTest, AWritersNodeThatDiesMidPartHasTheIngestAbortedByTheHome) {
  LocalCluster cluster({});
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  const NodesAndHome nodes = HomeOf(cluster, "parts");
  auto home = cluster.Connect(nodes.home, 30000);
  ASSERT_NE(home, nullptr);
  const auto ingesting = [&] {  // on the home, the only node that lists it so
    auto listed = home->ListDatasets(/*include_unsealed=*/true);
    if (!listed.ok()) return true;
    return std::any_of(listed->begin(), listed->end(),
                       [](const DatasetInfo& d) { return d.name == "parts" && d.state == VersionState::kIngesting; });
  };
  for (const bool restarted : {true, false}) {
    SCOPED_TRACE(restarted ? "the node restarted" : "the node stays down");
    // The node restarted by the first round is back in the home's map before
    // writer 1 starts: StartIngest skips a node the map says is down, and
    // writer 1's part would then run on a node this round does not kill.
    ASSERT_TRUE(Eventually([&] { return cluster.UpIn(nodes.home) == 3; }, 30s));
    const std::string id = IngestIdAwayFromHome(nodes, restarted ? "restarted" : "down", 1);
    const int victim = nodes.IndexOf(RankMembers(id, nodes.ids)[1]);
    auto open_started = StartWriters(*home, id, 2, 2, 100);
    ASSERT_TRUE(open_started.ok()) << open_started.status().ToString();
    auto open = std::move(open_started).value();
    auto first = open[0]->Commit();
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->writers_committed, 1u);
    ASSERT_TRUE(ingesting());
    cluster.Kill(victim);
    if (restarted) cluster.Start(victim);
    EXPECT_TRUE(Eventually([&] { return !ingesting(); }, restarted ? 30s : 60s))
        << "the version waits for writer 1 still\n"
        << cluster.Process(nodes.home).Log();
    auto again = home->StartIngest(PartOptions(id, 2, 1));
    EXPECT_EQ(again.status().code(), Code::kFailedPrecondition) << again.status().ToString();
    EXPECT_NE(again.status().message().find("is gone"), std::string::npos) << again.status().ToString();
    open[1].reset();  // its call died with its node
  }
}

// Writers 0 and 1 of three joined, writer 0 committed, and writer 2 never
// comes (its machine never started): the version waits for it for ever, and
// `strata rm` refuses a version being ingested. `strata rm --abort`, sent to
// a node that is not the home, aborts the ingest for every writer (writer
// 1's commit is refused, every node drops the files) and deletes the
// version. One writer's ingest is never aborted so: it ends with its call.
TEST(MultiWriterTest, AnOperatorAbortsAnIngestWhoseWriterNeverCame) {
  LocalCluster cluster({});
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  const NodesAndHome nodes = HomeOf(cluster, "parts");
  const int away = nodes.home == 0 ? 1 : 0;
  auto home = cluster.Connect(nodes.home, 30000);
  ASSERT_NE(home, nullptr);
  auto open_started = StartWriters(*home, "stuck", 3, 2, 200);
  ASSERT_TRUE(open_started.ok()) << open_started.status().ToString();
  auto open = std::move(open_started).value();
  auto first = open[0]->Commit();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->writers_committed, 1u);
  const std::string version = "parts@" + std::to_string(first->dataset.version);
  ASSERT_GT(FilesLeft(cluster, "parts"), 0u);

  const auto rm = [&](int node, std::vector<std::string> args) {
    std::vector<std::string> argv = {StrataCliBinary(), "rm", "--server", cluster.Address(node)};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  };
  CommandResult refused = rm(nodes.home, {version});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("being ingested"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--abort"), std::string::npos) << refused.err;

  // Elsewhere the version is unknown until it seals: the error says where to ask.
  CommandResult elsewhere = rm(away, {version});
  EXPECT_EQ(elsewhere.exit_code, 1);
  EXPECT_NE(elsewhere.err.find("home only, " + cluster.Id(nodes.home)), std::string::npos) << elsewhere.err;

  CommandResult aborted = rm(away, {"--abort", version});
  ASSERT_EQ(aborted.exit_code, 0) << aborted.out << aborted.err << cluster.Process(nodes.home).Log();
  EXPECT_NE(aborted.out.find("deleted " + version), std::string::npos) << aborted.out;
  auto last = open[1]->Commit();
  ASSERT_FALSE(last.ok()) << "writer 1's commit was taken after the operator's abort";
  EXPECT_TRUE(RefusedAfterAbort(last.status())) << last.status().ToString();
  for (int i = 0; i < cluster.size(); ++i) {
    auto listed = cluster.Connect(i)->ListDatasets(/*include_unsealed=*/true);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    for (const DatasetInfo& d : *listed) {
      EXPECT_FALSE(d.name == "parts" && d.state != VersionState::kDeleted)
          << cluster.Id(i) << " lists " << version << " in state " << static_cast<int>(d.state);
    }
  }
  EXPECT_TRUE(Eventually([&] { return FilesLeft(cluster, "parts") == 0; }, 20s))
      << FilesLeft(cluster, "parts") << " files left";
  auto late = home->StartIngest(PartOptions("stuck", 3, 2));
  EXPECT_EQ(late.status().code(), Code::kFailedPrecondition) << late.status().ToString();
  EXPECT_NE(late.status().message().find("strata rm --abort"), std::string::npos) << late.status().ToString();

  // One writer: refused at its home, and its ingest goes on.
  IngestOptions single;
  single.dataset = "single";
  auto single_home = cluster.Connect(HomeOf(cluster, "single").home, 30000);
  ASSERT_NE(single_home, nullptr);
  auto started = single_home->StartIngest(single);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  ASSERT_TRUE(WriteSamples(**started, 0, 50).ok());
  auto busy = single_home->DeleteVersion("single@1", /*abort_ingest=*/true);
  EXPECT_EQ(busy.status().code(), Code::kFailedPrecondition) << busy.status().ToString();
  EXPECT_NE(busy.status().message().find("one writer"), std::string::npos) << busy.status().ToString();
  auto sealed = (*started)->Commit();
  ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
  EXPECT_EQ(sealed->dataset.samples, 50u);
  // On a sealed version --abort is a plain delete (asked of its home, which
  // sealed it: another node may learn of the seal a moment later).
  auto deleted = single_home->DeleteVersion("single@1", /*abort_ingest=*/true);
  EXPECT_TRUE(deleted.ok()) << deleted.status().ToString();
}

}  // namespace
}  // namespace strata::testing
