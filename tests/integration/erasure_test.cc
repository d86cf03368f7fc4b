// Erasure-coded versions on a real cluster (issue 23): 6 stratad processes,
// ec:4+2. Each stripe's chunks sit on the nodes placement gives them; an
// epoch on 4 ranks delivers every sample exactly once, byte-identical, also
// after kill -9 of 2 nodes mid-epoch (degraded reads rebuild the lost shards
// from K chunks); with 3 nodes down a stream fails with Unavailable naming
// the shard; a damaged shard is never served and is rebuilt; a damaged parity
// file is found by the scrubber and rebuilt by repair; so is a parity file
// whose checksums are right but whose content is not its stripe's parity.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/checksum.h"
#include "common/placement.h"
#include "server/storage/parity_file.h"
#include "server/storage/shard_format.h"
#include "strata/v1/cluster.grpc.pb.h"
#include "tests/integration/cluster_epochs.h"

namespace strata::testing {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kSamples = 3000;

Status IngestEc(Client& client, const std::string& dataset, uint32_t k, uint32_t m, uint32_t replication = 0) {
  IngestOptions o;
  o.dataset = dataset;
  o.ec_data = k;
  o.ec_parity = m;
  o.replication = replication;
  o.shard_target_bytes = 16 << 10;  // many shards: several stripes
  auto writer = client.StartIngest(o);
  if (!writer.ok()) return writer.status();
  for (uint64_t i = 0; i < kSamples; ++i) {
    Sample s;
    s.key = "k" + std::to_string(i);
    s.label = SyntheticLabel(i, 5);
    s.fields.push_back({"bin", SyntheticPayload(i)});
    STRATA_RETURN_IF_ERROR(writer.value()->Write(s));
  }
  return writer.value()->Commit().status();
}

LocalCluster::Options SixNodes() {
  LocalCluster::Options o;
  o.nodes = 6;
  return o;
}

struct Version {
  std::string name;
  uint64_t version = 0;
};

// The node index that placement gives chunk `chunk` of `stripe`.
int HolderOf(const LocalCluster& cluster, const Version& v, uint32_t stripe, uint32_t chunk) {
  std::vector<std::string> ids;
  for (int i = 0; i < cluster.size(); ++i) ids.push_back(cluster.Id(i));
  const std::string id = RankMembers(EcStripeKey(v.name, v.version, stripe), ids)[chunk];
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.Id(i) == id) return i;
  }
  return -1;
}

std::string ChunkPath(const LocalCluster& cluster, int node, const Version& v, uint32_t seq, bool parity) {
  char name[32];
  std::snprintf(name, sizeof name, parity ? "%06u.parity" : "%06u.shard", seq);
  return cluster.DataDir(node) + "/shards/" + v.name + "/v" + std::to_string(v.version) + "/" + name;
}

// The node index that placement over `members` (node indexes) gives chunk
// `chunk` of `stripe` (the list turned at the chunk when members are fewer
// than K+M).
int HolderAmong(const LocalCluster& cluster, const std::vector<int>& members, const Version& v, uint32_t stripe,
                uint32_t chunk) {
  std::vector<std::string> ids;
  for (int i : members) ids.push_back(cluster.Id(i));
  const auto ranked = RankMembers(EcStripeKey(v.name, v.version, stripe), ids);
  const std::string& id = ranked[chunk % ranked.size()];
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.Id(i) == id) return i;
  }
  return -1;
}

// Whether node `node` lists the chunk among the files it holds: what it
// serves to peers and streams. A rebuilt or copied chunk is on disk (linked
// into place) before the node lists it (after the directory is synced):
// until then it answers NotFound, so a file on disk with the right bytes is
// not yet a chunk a degraded read elsewhere can use.
bool Lists(const LocalCluster& cluster, int node, const Version& v, uint32_t seq, bool parity) {
  auto peer = v1::PeerService::NewStub(grpc::CreateChannel(cluster.Address(node), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  v1::ListLocalFilesRequest request;
  request.set_dataset(v.name);
  request.set_version(v.version);
  v1::ListLocalFilesReply reply;
  if (!peer->ListLocalFiles(&context, request, &reply).ok()) return false;
  const auto kind = parity ? v1::FileRef::PARITY : v1::FileRef::SHARD;
  return std::any_of(reply.files().begin(), reply.files().end(),
                     [&](const v1::LocalFile& f) { return f.file().kind() == kind && f.file().seq() == seq; });
}

// Files of version `v` with `extension` over the data directories of `nodes`.
int CountFiles(const LocalCluster& cluster, const Version& v, const std::string& extension,
               const std::vector<int>& nodes) {
  int n = 0;
  for (int i : nodes) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(
             cluster.DataDir(i) + "/shards/" + v.name + "/v" + std::to_string(v.version), ec)) {
      n += e.path().extension() == extension;
    }
  }
  return n;
}

// The version `dataset` names, once the asked node knows it (the seal's
// broadcast, else anti-entropy; up to 30 s).
Result<DatasetDescription> DescribeOnceKnown(Client& client, const std::string& dataset) {
  Result<DatasetDescription> described = Status::NotFound("not asked");
  Eventually(
      [&] {
        described = client.Describe(dataset);
        return described.ok();
      },
      30s);
  return described;
}

// Whether every node's map shows every node up (waits up to 30 s).
bool AllUp(LocalCluster& cluster) {
  return Eventually(
      [&] {
        for (int i = 0; i < cluster.size(); ++i) {
          if (cluster.UpIn(i) != cluster.size()) return false;
        }
        return true;
      },
      30s);
}

TEST(ErasureTest, BadRedundancyIsRefused) {
  LocalCluster::Options o;
  o.nodes = 3;
  LocalCluster cluster(o);
  auto client = cluster.Connect(0);
  const Status too_many = IngestEc(*client, "big", 2, 2);
  EXPECT_EQ(too_many.code(), Code::kInvalidArgument) << too_many.ToString();
  EXPECT_NE(too_many.message().find("needs at least 4 nodes"), std::string::npos) << too_many.ToString();
  EXPECT_EQ(IngestEc(*client, "zero", 2, 0).code(), Code::kInvalidArgument);
  EXPECT_EQ(IngestEc(*client, "both", 1, 1, 2).code(), Code::kInvalidArgument);
  EXPECT_EQ(IngestEc(*client, "wide", 30, 3).code(), Code::kInvalidArgument);
}

TEST(ErasureTest, SixNodesFourPlusTwo) {
  LocalCluster cluster(SixNodes());
  auto client = cluster.Connect(0);
  // Every node sees every other up before the ingest (a node not yet seen
  // up gets no chunks at ingest: hand-offs, which repair moves later).
  ASSERT_TRUE(AllUp(cluster));
  ASSERT_TRUE(IngestEc(*client, "ec", 4, 2).ok());
  ASSERT_TRUE(IngestEc(*client, "ec2", 4, 2).ok());
  // The versions reach every node's catalog (the broadcast after the seal,
  // else anti-entropy) before the node the client asks describes them.
  Result<DatasetDescription> described = Status::NotFound("not asked");
  ASSERT_TRUE(Eventually(
      [&] {
        described = client->Describe("ec");
        return described.ok() && client->Describe("ec2").ok();
      },
      30s))
      << described.status().ToString();
  const DatasetInfo& info = described->dataset;
  const Version ec{"ec", info.version};
  const Version ec2{"ec2", client->Describe("ec2")->dataset.version};
  EXPECT_EQ(info.ec_data, 4u);
  EXPECT_EQ(info.ec_parity, 2u);
  ASSERT_GT(info.shards, 8u) << "several stripes";
  // sync: every data shard and parity file is at the node placement gives it.
  const uint32_t stripes = (info.shards + 3) / 4;
  for (uint32_t g = 0; g < stripes; ++g) {
    for (uint32_t c = 0; c < 6; ++c) {
      const uint32_t seq = c < 4 ? g * 4 + c : g * 2 + (c - 4);
      if (c < 4 && seq >= info.shards) continue;
      const int holder = HolderOf(cluster, ec, g, c);
      EXPECT_TRUE(std::filesystem::exists(ChunkPath(cluster, holder, ec, seq, c >= 4)))
          << "stripe " << g << " chunk " << c << " on " << cluster.Id(holder);
    }
  }
  // The ingesting node's own copies of files placed elsewhere are released:
  // then each chunk has one copy, at its holder.
  const std::vector<int> all = {0, 1, 2, 3, 4, 5};
  for (const Version& dataset : {ec, ec2}) {
    auto d = client->Describe(dataset.name);
    ASSERT_TRUE(d.ok());
    const int shards = static_cast<int>(d->dataset.shards), parity = 2 * ((shards + 3) / 4);
    EXPECT_TRUE(Eventually(
        [&] {
          return CountFiles(cluster, dataset, ".shard", all) == shards &&
                 CountFiles(cluster, dataset, ".parity", all) == parity;
        },
        60s))
        << dataset.name << ": " << CountFiles(cluster, dataset, ".shard", all) << " shard files for " << shards;
  }
  // A healthy epoch on 4 ranks: every sample once, byte-identical.
  const auto want = RunRanks(cluster, 0, "ec", 4, 16);
  ExpectSameAndExactlyOnce(RunRanks(cluster, 0, "ec", 4, 16), want, kSamples);

  // A data shard damaged at its holder is never served, and is rebuilt there.
  const int damaged_node = HolderOf(cluster, ec, 0, 1);
  const std::string victim = ChunkPath(cluster, damaged_node, ec, 1, false);
  const std::string original = ReadFile(victim);
  FlipByte(victim, std::filesystem::file_size(victim) / 2, 0x10);
  ExpectSameAndExactlyOnce(RunRanks(cluster, 0, "ec", 4, 16), want, kSamples);
  ASSERT_TRUE(Eventually(
      [&] {
        std::error_code err;
        return std::filesystem::exists(victim, err) && ReadFile(victim) == original &&
               Lists(cluster, damaged_node, ec, 1, false);
      },
      60s))
      << "the damaged shard is rebuilt from its stripe";

  // A damaged parity file, which no stream reads, is found by the scrubber,
  // quarantined, and rebuilt from the stripe by repair.
  const int parity_node = HolderOf(cluster, ec, 0, 5);
  const std::string parity = ChunkPath(cluster, parity_node, ec, 1, true);
  const std::string parity_original = ReadFile(parity);
  FlipByte(parity, parity_original.size() / 3, 0x04);
  ASSERT_TRUE(Eventually(
      [&] {
        std::error_code err;
        return std::filesystem::exists(parity, err) && ReadFile(parity) == parity_original &&
               Lists(cluster, parity_node, ec, 1, true);
      },
      90s))
      << "the damaged parity file is rebuilt";
  EXPECT_FALSE(std::filesystem::is_empty(cluster.DataDir(parity_node) + "/quarantine"));

  // kill -9 of 2 nodes mid-epoch: still every sample once. A stripe with 2
  // nodes down has no chunk to spare (stripe 0 here: its 4 left include both
  // chunks rebuilt above), hence the waits above until they are served again,
  // not only back on disk.
  std::atomic<int> kills{0};
  const auto got = RunRanks(cluster, 0, "ec", 4, 16, [&](uint32_t rank, uint64_t step) {
    if (rank != 0) return;
    if (step == 5 && kills == 0) {
      cluster.Kill(1);
      ++kills;
    }
    if (step == 20 && kills == 1) {
      cluster.Kill(2);
      ++kills;
    }
  });
  EXPECT_EQ(kills, 2);
  ExpectSameAndExactlyOnce(got, want, kSamples);
  // (The client may have had the whole epoch in flight before the kills:
  // the next one starts with both nodes down.) A full epoch with 2 nodes
  // down reads every shard, so each of the dead nodes' shards is rebuilt on
  // a survivor by a degraded read.
  ExpectSameAndExactlyOnce(RunRanks(cluster, 0, "ec", 4, 16), want, kSamples);
  EXPECT_GE(CountFiles(cluster, ec, ".shard", {0, 3, 4, 5}), static_cast<int>(info.shards));

  // A third node down: stripes of "ec2" (never read, so nothing was rebuilt)
  // have 3 of their 6 chunks left, fewer than K.
  cluster.Kill(3);
  std::vector<Status> ends;
  RunRanks(cluster, 0, "ec2", 4, 16, {}, SamplerSpec::Kind::kShuffle, &ends);
  bool named = false;
  for (const Status& s : ends) {
    if (s.code() == Code::kOutOfRange) continue;
    EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
    named |= s.message().find("ec2@" + std::to_string(ec2.version) + "/") != std::string::npos &&
             s.message().find(".shard") != std::string::npos;
  }
  EXPECT_TRUE(named) << "a rank fails naming the shard it cannot read: " << ends[0].ToString();

  // With 3 nodes up, a sync ingest of ec:4+2 is refused (it put several chunks
  // of a stripe on one node, and called them durable); ec:2+1 fits.
  ASSERT_TRUE(Eventually([&] { return cluster.UpIn(0) == 3; }, 30s));
  const Status refused = IngestEc(*client, "late", 4, 2);
  EXPECT_EQ(refused.code(), Code::kUnavailable) << refused.ToString();
  EXPECT_NE(refused.message().find("distinct nodes"), std::string::npos)
      << "the home's answer, not a redirect to it: " << refused.ToString();
  EXPECT_TRUE(IngestEc(*client, "late", 2, 1).ok());
}

// A stripe with one chunk's holder down and one data shard damaged on disk
// (which no scrub has found yet) still has K intact chunks. The rebuild used
// the damaged shard as a source, committed nothing, and the stream failed
// for ever with Unavailable; it now skips it (a data shard is checked against
// its catalog checksum before use). Repair then rebuilds the damaged shard
// from the intact chunks too.
TEST(ErasureTest, ARebuildNeverUsesADamagedDataShard) {
  LocalCluster::Options o = SixNodes();
  o.extra_args = {"--cluster-scrub-bytes-per-sec", "0"};  // only the reads find the damage
  LocalCluster cluster(o);
  auto client = cluster.Connect(0);
  ASSERT_TRUE(AllUp(cluster));
  ASSERT_TRUE(IngestEc(*client, "bad", 4, 2).ok());
  const Result<DatasetDescription> described = DescribeOnceKnown(*client, "bad");
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  const Version v{"bad", described->dataset.version};
  // A stripe whose chunks 0 and 1 are on nodes other than node-1, which the ranks ask.
  uint32_t g = 0;
  while ((g + 1) * 4 <= described->dataset.shards &&
         (HolderOf(cluster, v, g, 0) == 0 || HolderOf(cluster, v, g, 1) == 0))
    ++g;
  ASSERT_LE((g + 1) * 4, described->dataset.shards) << "no stripe away from node-1";

  // Damaged before any read (a record verified in locked pages is not hashed
  // again: a change made to those pages would go unseen, which a disk's own
  // damage never is).
  const int damaged_node = HolderOf(cluster, v, g, 1);
  const std::string victim = ChunkPath(cluster, damaged_node, v, g * 4 + 1, false);
  const std::string original = ReadFile(victim);
  FlipByte(victim, std::filesystem::file_size(victim) / 2, 0x10);
  cluster.Kill(HolderOf(cluster, v, g, 0));
  std::map<uint64_t, int> seen;
  for (const Steps& rank : RunRanks(cluster, 0, "bad", 2, 16)) {  // payloads checked on the way
    for (const auto& step : rank) {
      for (uint64_t id : step) ++seen[id];
    }
  }
  EXPECT_EQ(seen.size(), kSamples);
  for (const auto& [id, count] : seen) ASSERT_EQ(count, 1) << "id " << id;
  EXPECT_TRUE(Eventually(
      [&] {
        std::error_code err;
        return std::filesystem::exists(victim, err) && ReadFile(victim) == original;
      },
      60s))
      << "the damaged shard is rebuilt from its stripe's intact chunks\n"
      << cluster.Process(damaged_node).Log();
}

// A parity file rewritten with wrong content but a valid trailer (its own
// checksums agree: what a bug in the encoder, or a parity left from other
// data, would leave) passes every per-file check; the scrubber's parity
// check recomputes it from the stripe's data shards, quarantines it, and
// repair rebuilds the right one.
TEST(ErasureTest, TheScrubberFindsAParityFileThatIsNotItsStripesParity) {
  LocalCluster cluster(SixNodes());
  auto client = cluster.Connect(0);
  ASSERT_TRUE(AllUp(cluster));
  ASSERT_TRUE(IngestEc(*client, "pq", 4, 2).ok());
  const Result<DatasetDescription> described = DescribeOnceKnown(*client, "pq");
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  const Version pq{"pq", described->dataset.version};
  const int node = HolderOf(cluster, pq, 1, 4);  // parity file 0 of stripe 1: seq 2
  const std::string path = ChunkPath(cluster, node, pq, 2, true);
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(path); }, 30s)) << path;
  const std::string original = ReadFile(path);
  ASSERT_GT(original.size(), kParityTrailerBytes);
  const uint64_t body_bytes = original.size() - kParityTrailerBytes;
  auto trailer = DecodeParityTrailer(std::string_view(original).substr(body_bytes), original.size());
  ASSERT_TRUE(trailer.ok()) << trailer.status().ToString();
  std::string wrong = original.substr(0, body_bytes);
  for (size_t i = 0; i < wrong.size(); i += 4096) wrong[i] = static_cast<char>(wrong[i] ^ 0x5a);
  ParityTrailer t = trailer.value();
  t.body_checksum = Checksum64(wrong);
  ASSERT_TRUE(WriteParityFile(path, wrong, t).ok());
  ASSERT_TRUE(VerifyParityFile(path).ok()) << "the wrong parity passes its own checks";
  ASSERT_NE(ReadFile(path), original);

  EXPECT_TRUE(Eventually(
      [&] { return Metric(cluster.Process(node).metrics_address(), "strata_scrub_parity_mismatches_total") >= 1; },
      90s))
      << "the scrubber on " << cluster.Id(node) << " finds the mismatch";
  ASSERT_TRUE(Eventually(
      [&] {
        std::error_code err;
        return std::filesystem::exists(path, err) && ReadFile(path) == original;
      },
      90s))
      << "the parity file is rebuilt with its stripe's parity";
  EXPECT_FALSE(std::filesystem::is_empty(cluster.DataDir(node) + "/quarantine"));
  // No other parity file of the version was found wrong.
  double mismatches = 0;
  for (int i = 0; i < cluster.size(); ++i) {
    mismatches += std::max(0.0, Metric(cluster.Process(i).metrics_address(), "strata_scrub_parity_mismatches_total"));
  }
  EXPECT_EQ(mismatches, 1);
}

// A node gone past the grace period leaves the map: each of its chunks is
// rebuilt from K others at its stripe's next node, and every file of the
// version is at the holder placement over the 6 left gives it.
// `strata status` counts an erasure-coded version's shards by their stripes:
// one copy of each chunk is whole (it counted every data shard, which has one
// copy, as short of the `min(3, nodes)` copies a replicated one has), and a
// lost chunk leaves its stripe's shards under-replicated, not missing, while
// K chunks remain to rebuild them from.
TEST(ErasureTest, StatusCountsAStripeWholeWithOneCopyOfEachChunk) {
  LocalCluster::Options o;
  o.nodes = 3;
  LocalCluster cluster(o);
  auto client = cluster.Connect(0);
  ASSERT_TRUE(AllUp(cluster));
  ASSERT_TRUE(IngestEc(*client, "whole", 2, 1).ok());
  auto d = client->Describe("whole");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const Version v{"whole", d->dataset.version};
  const int shards = static_cast<int>(d->dataset.shards);
  ASSERT_GT(shards, 4) << "several stripes";
  // One copy of each chunk once the ingesting node has released its own.
  ASSERT_TRUE(Eventually(
      [&] {
        return CountFiles(cluster, v, ".shard", {0, 1, 2}) == shards &&
               CountFiles(cluster, v, ".parity", {0, 1, 2}) == (shards + 1) / 2;
      },
      60s));
  auto status = [&](int node) {
    CommandResult r = RunCommand({StrataCliBinary(), "status", "--json", "--server", cluster.Address(node)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
    return j.is_null() ? j : j["datasets"][0];
  };
  const auto whole = status(0);
  ASSERT_FALSE(whole.is_null());
  EXPECT_EQ(whole["dataset"], "whole@" + std::to_string(v.version));
  EXPECT_EQ(whole["ec_data"], 2);
  EXPECT_EQ(whole["ec_parity"], 1);
  EXPECT_EQ(whole["shards"], shards);
  EXPECT_EQ(whole["healthy"], shards) << whole.dump();
  EXPECT_EQ(whole["under_replicated"], 0) << whole.dump();
  EXPECT_EQ(whole["missing"], 0) << whole.dump();
  CommandResult text = RunCommand({StrataCliBinary(), "status", "--server", cluster.Address(0)});
  EXPECT_NE(text.out.find("ec:2+1"), std::string::npos) << text.out;

  // node-3 gone: every stripe has lost the chunk it held (each stripe has
  // one on every node; a short last stripe may have lost only its empty
  // one), and two remain.
  cluster.Kill(2);
  const auto short_one = status(0);
  ASSERT_FALSE(short_one.is_null());
  EXPECT_GE(short_one["under_replicated"].get<int>(), shards - 1) << short_one.dump();
  EXPECT_EQ(short_one["healthy"].get<int>() + short_one["under_replicated"].get<int>(), shards) << short_one.dump();
  EXPECT_EQ(short_one["missing"], 0) << short_one.dump();
}

TEST(ErasureTest, ANodeGonePastItsGracePeriodHasItsChunksRebuilt) {
  LocalCluster::Options o;
  o.nodes = 7;
  o.grace_period_s = 1;
  LocalCluster cluster(o);
  auto client = cluster.Connect(0);
  ASSERT_TRUE(AllUp(cluster));
  ASSERT_TRUE(IngestEc(*client, "heal", 4, 2).ok());
  const Result<DatasetDescription> described = DescribeOnceKnown(*client, "heal");
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  const uint32_t shards = described->dataset.shards;
  const Version heal{"heal", described->dataset.version};
  const auto want = RunRanks(cluster, 0, "heal", 2, 16);
  cluster.Kill(3);
  const std::vector<int> left = {0, 1, 2, 4, 5, 6};
  const auto placed = [&] {
    for (uint32_t g = 0; g < (shards + 3) / 4; ++g) {
      for (uint32_t c = 0; c < 6; ++c) {
        const uint32_t seq = c < 4 ? g * 4 + c : g * 2 + (c - 4);
        if (c < 4 && seq >= shards) continue;
        std::error_code ec;
        if (!std::filesystem::exists(ChunkPath(cluster, HolderAmong(cluster, left, heal, g, c), heal, seq, c >= 4),
                                     ec)) {
          return false;
        }
      }
    }
    return true;
  };
  ASSERT_TRUE(Eventually(placed, 90s)) << "every chunk at its holder among the 6 left";
  ExpectSameAndExactlyOnce(RunRanks(cluster, 0, "heal", 2, 16), want, kSamples);
}

}  // namespace
}  // namespace strata::testing
