// A real stratad under a small open-file limit: a node that has read many
// more shard files than the limit allows keeps only a bounded set of them
// open, and goes on serving streams and accepting connections. (Before the
// dataset cache had a budget, every shard file a node had read stayed open
// for good: with 250 shards under a limit of 150, a stream failed with EMFILE
// and the node refused every new connection until it was restarted.)
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <set>
#include <string>

#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

constexpr uint64_t kSamples = 4000;
constexpr uint64_t kOpenFiles = 200;  // stratad keeps up to a quarter of it: 50 shard readers
constexpr double kKeptLimit = 50;

std::string Payload(uint64_t i) { return std::to_string(i) + std::string(1000, static_cast<char>('a' + i % 26)); }

// How many of process pid's descriptors are shard files.
int ShardFilesOpen(pid_t pid) {
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(fds.c_str());
  if (dir == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(dir)) {
    char target[PATH_MAX];
    const ssize_t len = readlink((fds + "/" + e->d_name).c_str(), target, sizeof target - 1);
    if (len <= 0) continue;
    const std::string path(target, static_cast<size_t>(len));
    if (path.size() > 6 && path.compare(path.size() - 6, 6, ".shard") == 0) ++n;
  }
  closedir(dir);
  return n;
}

TEST(OpenFilesTest, ANodeThatReadMoreShardsThanItsFileLimitKeepsServing) {
  TempDir dir;
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  o.max_open_files = kOpenFiles;
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  EXPECT_NE(server->Log().find("shard readers: up to 50 kept open (open-file limit 200)"), std::string::npos)
      << server->Log();
  auto client = Client::Connect(server->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  SyntheticIngest how;
  how.payload = Payload;
  how.shard_target_bytes = 16 << 10;  // about 15 samples a shard: some 270 shard files
  auto ingested = TryIngestSynthetic(*client.value(), "many", kSamples, how);
  ASSERT_TRUE(ingested.ok()) << ingested.status().ToString();
  ASSERT_GT(ingested->dataset.shards, kOpenFiles) << "the test needs more shard files than the node may open";

  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    StreamOptions so;
    so.dataset = "many";
    so.batch_size = 8;  // the steps in flight hold few files at once
    so.epoch = epoch;
    const RankRun run = StreamAll(*client.value(), so);
    EXPECT_EQ(run.end.code(), Code::kOutOfRange) << "epoch " << epoch << ": " << run.end.ToString();
    std::set<uint64_t> seen;
    for (const Batch& b : run.batches) {
      for (size_t i = 0; i < b.size(); ++i) {
        EXPECT_TRUE(seen.insert(b.ids()[i]).second) << "sample " << b.ids()[i] << " twice";
        EXPECT_EQ(b.field(i, "bin"), Payload(b.ids()[i]));
      }
    }
    EXPECT_EQ(seen.size(), kSamples) << "epoch " << epoch;
    // With the streams over, what stays open is what the budget keeps.
    const int files = ShardFilesOpen(server->pid());
    EXPECT_GE(files, 1);
    EXPECT_LE(files, kKeptLimit) << "shard files open after epoch " << epoch;
    EXPECT_LE(Metric(server->metrics_address(), "strata_shard_readers_open"), kKeptLimit);
    EXPECT_LE(Metric(server->metrics_address(), "strata_shard_readers_kept"), kKeptLimit);
    EXPECT_EQ(Metric(server->metrics_address(), "strata_shard_readers_kept_limit"), kKeptLimit);
  }
  // New connections are accepted (each takes a descriptor).
  auto another = Client::Connect(server->address());
  ASSERT_TRUE(another.ok()) << another.status().ToString();
  EXPECT_TRUE(another.value()->Describe("many").ok());
  EXPECT_EQ(server->Log().find("Too many open files"), std::string::npos) << server->Log();
}

}  // namespace
}  // namespace strata::testing
