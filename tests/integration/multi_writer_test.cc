// Ingest with several writers (issue 22, item 4): writers on different nodes
// write one version at once; it is sealed once, after the last commit, with
// dense ids in writer order. A writer that fails: multi_writer_abort_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/placement.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/multi_writer_parts.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

TEST(MultiWriterTest, FourWritersOnThreeNodesSealOneVersionWithDenseIdsInWriterOrder) {
  LocalCluster cluster({});
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  const std::vector<uint64_t> counts = {300, 500, 200, 400};  // writer w's samples
  const uint32_t writers = static_cast<uint32_t>(counts.size());

  // Every writer writes its samples, at once; they commit in the order 2, 0, 3, 1.
  std::vector<std::unique_ptr<IngestWriter>> open(writers);
  for (uint32_t w = 0; w < writers; ++w) {
    auto started = client->StartIngest(PartOptions("four", writers, w));
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    open[w] = std::move(started).value();
  }
  std::vector<std::thread> threads;
  std::vector<Status> written(writers);
  for (uint32_t w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] { written[w] = WriteSamples(*open[w], w, counts[w]); });
  }
  for (auto& t : threads) t.join();
  for (uint32_t w = 0; w < writers; ++w) ASSERT_TRUE(written[w].ok()) << written[w].ToString();

  const std::vector<uint32_t> order = {2, 0, 3, 1};
  IngestSummary sealed;
  for (size_t k = 0; k < order.size(); ++k) {
    auto committed = open[order[k]]->Commit();
    ASSERT_TRUE(committed.ok()) << "writer " << order[k] << ": " << committed.status().ToString();
    EXPECT_EQ(committed->writers, writers);
    EXPECT_EQ(committed->writers_committed, k + 1);
    if (k + 1 < order.size()) {
      EXPECT_EQ(committed->dataset.state, VersionState::kIngesting) << "sealed before the last writer";
      EXPECT_FALSE(client->Describe("parts").ok()) << "a version is served before its last writer commits";
    } else {
      sealed = committed.value();
    }
  }
  uint64_t total = 0;
  std::vector<uint64_t> base;
  for (uint64_t n : counts) {
    base.push_back(total);
    total += n;
  }
  ASSERT_EQ(sealed.dataset.state, VersionState::kSealed);
  EXPECT_EQ(sealed.dataset.samples, total);
  uint64_t labelled = 0;
  for (const auto& c : sealed.dataset.label_counts) labelled += c.count;
  EXPECT_EQ(labelled, total);

  // Every node learns the one sealed version; the shards came from every writer.
  for (int i = 0; i < 3; ++i) {
    auto node = Client::Connect(cluster.Address(i));
    ASSERT_TRUE(node.ok());
    ASSERT_TRUE(Eventually([&] { return node.value()->Describe("parts").ok(); }, 20s)) << cluster.Id(i);
    auto list = node.value()->ListDatasets();
    ASSERT_TRUE(list.ok());
    int versions = 0;
    for (const auto& d : list.value()) versions += d.name == "parts";
    EXPECT_EQ(versions, 1) << cluster.Id(i);
  }
  auto described = client->Describe("parts");
  ASSERT_TRUE(described.ok());
  uint64_t next_id = 0;
  for (const auto& shard : described->shards) {
    EXPECT_EQ(shard.first_id, next_id) << "shard " << shard.seq;
    next_id += shard.samples;
  }
  EXPECT_EQ(next_id, total);

  // Dense ids in writer order: id base[w] + j is writer w's sample j. Both
  // samplers (the stratified one reads the stratum index the home built from
  // the parts), two ranks: every id exactly once, with its writer's bytes.
  for (const SamplerSpec::Kind kind : {SamplerSpec::Kind::kShuffle, SamplerSpec::Kind::kStratified}) {
    std::map<uint64_t, int> seen;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      StreamOptions o;
      o.dataset = "parts";
      o.batch_size = 50;
      o.world = 2;
      o.rank = rank;
      o.sampler.kind = kind;
      const RankRun run = StreamAll(*client, o);
      ASSERT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
      for (const Batch& b : run.batches) {
        for (size_t i = 0; i < b.size(); ++i) {
          const uint64_t id = b.ids()[i];
          ++seen[id];
          uint32_t w = writers - 1;
          while (id < base[w]) --w;
          EXPECT_EQ(b.sample(i), PartPayload(w, id - base[w])) << "id " << id;
          EXPECT_EQ(b.labels()[i], PartLabel(w, id - base[w])) << "id " << id;
        }
      }
    }
    EXPECT_EQ(seen.size(), total);
    for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << "id " << id;
  }
}

// A node whose copies of another writer's shards are damaged reads those
// samples from the other holders: they find a shard by its seq (writer w's
// from w * PartSeqSpan), not by its place in the version's list.
TEST(MultiWriterTest, SamplesOfADamagedCopyComeFromThePeersWhateverTheWriter) {
  LocalCluster::Options options;
  options.failure_timeout_ms = 10000;  // no node seems down on a slow host
  LocalCluster cluster(options);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  const uint64_t each = 300;
  for (uint32_t w = 0; w < 2; ++w) {
    IngestOptions o = PartOptions("peers", 2, w);
    o.replication = 3;  // every node holds every shard, and none releases one
    auto started = client->StartIngest(o);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    ASSERT_TRUE(WriteSamples(*started.value(), w, each).ok());
    auto committed = started.value()->Commit();
    ASSERT_TRUE(committed.ok()) << "writer " << w << ": " << committed.status().ToString();
  }
  // Every copy on node-1 cut in half: node-1 reads none of its own.
  const std::string dir = cluster.DataDir(0) + "/shards/parts/v1";
  size_t cut = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".shard") continue;
    std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) / 2);
    ++cut;
  }
  ASSERT_GE(cut, 4u);
  // Node-1 owes a share of every step and fetches each of its samples from
  // the other holders; none of its parts fails (no failover).
  const RankRun run = StreamDataset(*client, "parts");
  ASSERT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
  EXPECT_EQ(run.stats.failovers, 0u);
  std::map<uint64_t, int> seen;
  for (const Batch& b : run.batches) {
    for (size_t i = 0; i < b.size(); ++i) {
      const uint64_t id = b.ids()[i];
      ++seen[id];
      const uint32_t w = id < each ? 0 : 1;
      EXPECT_EQ(b.sample(i), PartPayload(w, id - w * each)) << "id " << id;
    }
  }
  EXPECT_EQ(seen.size(), 2 * each);
  for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << "id " << id;
  EXPECT_GE(Metric(cluster.Process(0).metrics_address(), "strata_proxied_records_total"), 1);
}

TEST(MultiWriterTest, AWriterThatStartsLateKeepsTheCopiesOfThoseThatCommitted) {
  // Writers need not overlap: one may commit before the next has started.
  // The copies the first one's shards left on every node must survive the
  // next one's start on its node.
  LocalCluster::Options o;
  o.failure_timeout_ms = 10000;  // no node seems down on a slow host: every copy is needed
  LocalCluster cluster(o);
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  for (uint32_t w = 0; w < 2; ++w) {
    IngestOptions options = PartOptions("late", 2, w);
    options.dataset = "late";
    options.replication = 3;  // a copy of every shard on every node
    auto started = client->StartIngest(options);
    ASSERT_TRUE(started.ok()) << "writer " << w << ": " << started.status().ToString();
    ASSERT_TRUE(WriteSamples(*started.value(), w, 100).ok());
    auto committed = started.value()->Commit();
    ASSERT_TRUE(committed.ok()) << "writer " << w << ": " << committed.status().ToString();
    EXPECT_EQ(committed->dataset.state, w == 1 ? VersionState::kSealed : VersionState::kIngesting);
  }
  auto described = client->Describe("late");
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  std::set<uint32_t> shards;
  for (const auto& shard : described->shards) shards.insert(shard.seq);
  ASSERT_GE(shards.size(), 2u);
  for (int i = 0; i < cluster.size(); ++i) {
    auto files = client->ListNodeFiles(cluster.Address(i));
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    std::set<uint32_t> listed, on_disk;
    for (const FileRef& f : files.value()) {
      if (f.dataset == "late" && f.kind == FileRef::Kind::kShard) listed.insert(f.seq);
    }
    EXPECT_EQ(listed, shards) << cluster.Id(i) << "'s inventory";
    const std::string dir = cluster.DataDir(i) + "/shards/late/v" + std::to_string(described->dataset.version);
    for (uint32_t seq : shards) {
      char name[32];
      std::snprintf(name, sizeof(name), "/%06u.shard", seq);
      if (std::filesystem::exists(dir + name)) on_disk.insert(seq);
    }
    EXPECT_EQ(on_disk, shards) << cluster.Id(i) << " lost copies";
  }
  EXPECT_EQ(Samples(*client, "late").size(), 200u);
}

TEST(MultiWriterTest, WritersMustAgreeAndEachJoinsOnce) {
  LocalCluster cluster({});
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  auto first = client->StartIngest(PartOptions("agree", 2, 0));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(WriteSamples(*first.value(), 0, 10).ok());

  IngestOptions other = PartOptions("agree", 2, 1);
  other.replication = 3;
  auto refused = client->StartIngest(other);
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find(": replication ("), std::string::npos)
      << "names what differs: " << refused.status().ToString();
  auto twice = client->StartIngest(PartOptions("agree", 2, 0));
  EXPECT_EQ(twice.status().code(), Code::kAlreadyExists) << twice.status().ToString();
  IngestOptions out_of_range = PartOptions("agree", 2, 2);
  EXPECT_EQ(client->StartIngest(out_of_range).status().code(), Code::kInvalidArgument);
  IngestOptions bad_id = PartOptions("no spaces", 2, 1);
  EXPECT_EQ(client->StartIngest(bad_id).status().code(), Code::kInvalidArgument);
  IngestOptions ec = PartOptions("ec", 2, 0);
  ec.replication = 0;
  ec.ec_data = 1;
  ec.ec_parity = 1;
  EXPECT_EQ(client->StartIngest(ec).status().code(), Code::kInvalidArgument);
  first.value()->Abort();
}

TEST(MultiWriterTest, TheCliRunsAllWritersOrOneOfThem) {
  LocalCluster cluster({});
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 20s));
  auto client = cluster.Connect(0, 30000);
  ASSERT_NE(client, nullptr);
  TempDir dir;
  const std::string tars = dir.Join("tars");
  CommandResult gen = RunCommand({STRATA_MAKE_DATASET_BINARY, "--out", tars, "--format", "tar", "--samples", "400",
                                  "--size", "300", "--samples-per-tar", "100"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::vector<std::string> files;
  for (int i = 0; i < 4; ++i) files.push_back(tars + "/shard-00000" + std::to_string(i) + ".tar");
  auto cli = [&](std::vector<std::string> args, const std::vector<std::string>& sources) {
    std::vector<std::string> argv = {StrataCliBinary(), "ingest", "--server", cluster.Address(0), "-q"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), sources.begin(), sources.end());
    return RunCommand(argv);
  };

  CommandResult one = cli({"--dataset", "single"}, files);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  // This process runs all three writers, the four tars dealt out among them.
  CommandResult three = cli({"--dataset", "three", "--writers", "3"}, files);
  ASSERT_EQ(three.exit_code, 0) << three.out << three.err;
  EXPECT_NE(three.out.find("ingested three@1: 400 samples"), std::string::npos) << three.out;
  // Two processes, as on two machines: one writer each.
  CommandResult first =
      cli({"--dataset", "two", "--writers", "2", "--ingest-id", "cli-two", "--writer", "0"}, {files[0], files[1]});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("1 of 2 writers"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("strata rm --abort two@1"), std::string::npos) << "says what to do if one never comes";
  CommandResult second =
      cli({"--dataset", "two", "--writers", "2", "--ingest-id", "cli-two", "--writer", "1"}, {files[2], files[3]});
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_NE(second.out.find("ingested two@1: 400 samples"), std::string::npos) << second.out;

  const auto expected = Samples(*client, "single");
  ASSERT_EQ(expected.size(), 400u);
  EXPECT_EQ(Samples(*client, "three"), expected);
  EXPECT_EQ(Samples(*client, "two"), expected);
  // Every copy is in place: status counts each writer's shards (their seqs
  // start at each writer's own base), none missing.
  CommandResult status = RunCommand({StrataCliBinary(), "status", "--json", "--server", cluster.Address(0)});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto health = nlohmann::json::parse(status.out)["datasets"];
  ASSERT_EQ(health.size(), 3u) << health.dump(2);
  for (const auto& h : health) {
    EXPECT_EQ(h["missing"], 0) << h.dump();
    EXPECT_EQ(h["healthy"], h["shards"]) << h.dump();
  }

  CommandResult no_id = cli({"--dataset", "bad", "--writers", "2", "--writer", "1"}, files);
  EXPECT_NE(no_id.exit_code, 0);
  EXPECT_NE(no_id.err.find("--ingest-id"), std::string::npos) << no_id.err;
  CommandResult too_few = cli({"--dataset", "bad", "--writers", "5"}, files);
  EXPECT_NE(too_few.exit_code, 0);
  EXPECT_NE(too_few.err.find("at least as many"), std::string::npos) << too_few.err;
  EXPECT_EQ(client->Describe("bad").status().code(), Code::kNotFound);

  // A writer that fails before its first sample (its source holds none)
  // still aborts the version for every writer: it used to never join, and
  // the version waited for it for ever, neither sealable nor deletable. The
  // error shown is its own, not the other writer's "was aborted".
  const std::string empty = dir.Join("empty");
  std::filesystem::create_directories(empty);
  CommandResult half = cli({"--dataset", "half", "--writers", "2"}, {files[0], empty});
  EXPECT_NE(half.exit_code, 0);
  EXPECT_NE(half.err.find("writer 1: "), std::string::npos) << half.err;
  EXPECT_NE(half.err.find("no samples found"), std::string::npos) << half.err;
  // On any node: the version is ingesting on its home only.
  std::vector<std::unique_ptr<Client>> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(cluster.Connect(i, 30000));
  const auto ingesting = [&](const std::string& name) {
    for (const auto& node : nodes) {
      auto listed = node->ListDatasets(/*include_unsealed=*/true);
      if (!listed.ok()) return true;
      for (const DatasetInfo& d : *listed) {
        if (d.name == name && d.state == VersionState::kIngesting) return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(Eventually([&] { return !ingesting("half"); }, 20s)) << "the version is left ingesting";
  // The same from a writer run on its own, as on another machine.
  CommandResult alone =
      cli({"--dataset", "alone", "--writers", "2", "--ingest-id", "cli-alone", "--writer", "1"}, {empty});
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("no samples found"), std::string::npos) << alone.err;
  EXPECT_TRUE(Eventually([&] { return !ingesting("alone"); }, 20s)) << "the version is left ingesting";
  // A writer whose source cannot be opened never joins: the version waits
  // for it, and it says so; run again with its source, it seals the version.
  CommandResult lost =
      cli({"--dataset", "typo", "--writers", "2", "--ingest-id", "cli-typo", "--writer", "1"}, {dir.Join("nope.tar")});
  EXPECT_EQ(lost.exit_code, 1);
  EXPECT_NE(lost.err.find("run it again"), std::string::npos) << lost.err;
  ASSERT_EQ(
      cli({"--dataset", "typo", "--writers", "2", "--ingest-id", "cli-typo", "--writer", "0"}, {files[0]}).exit_code,
      0);
  CommandResult fixed =
      cli({"--dataset", "typo", "--writers", "2", "--ingest-id", "cli-typo", "--writer", "1"}, {files[1]});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_NE(fixed.out.find("ingested typo@1: 200 samples"), std::string::npos) << fixed.out;
  CommandResult late =
      cli({"--dataset", "alone", "--writers", "2", "--ingest-id", "cli-alone", "--writer", "0"}, {files[0]});
  EXPECT_NE(late.exit_code, 0) << "the ingest was aborted";
  EXPECT_NE(late.err.find("was aborted"), std::string::npos) << late.err;
}

}  // namespace
}  // namespace strata::testing
