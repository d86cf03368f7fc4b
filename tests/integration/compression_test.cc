// Compressed datasets (issue 23) on real stratad processes: `--compression
// zstd` stores records in zstd blocks (shard format 4), and every stream
// delivers exactly the bytes of the same dataset stored uncompressed, on
// every sampler; a damaged compressed block is never served.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "server/storage/shard_format.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/local_cluster.h"

namespace strata::testing {
namespace {

// A JSON line of review-like text: compressible as real text is, distinct per id.
std::string ReviewPayload(uint64_t i) {
  static const char* kWords[] = {"great",     "battery", "screen", "arrived", "late", "works", "fine", "would",
                                 "recommend", "cheap",   "broke",  "after",   "a",    "week",  "the",  "and"};
  std::string text;
  for (uint64_t w = 0; w < 20 + i % 60; ++w) {
    text += kWords[(i * 7 + w * w) % std::size(kWords)];
    text += ' ';
  }
  return "{\"id\": " + std::to_string(i) + ", \"stars\": " + std::to_string(i % 5 + 1) + ", \"text\": \"" + text +
         "\"}";
}

IngestSummary IngestReviews(Client& client, const std::string& dataset, uint64_t n, Compression compression,
                            uint32_t replication = 0, Status* error = nullptr) {
  SyntheticIngest how{
      .labels = 4, .replication = replication, .shard_target_bytes = 16 << 10, .payload = ReviewPayload};
  how.options.compression = compression;
  how.key_prefix = "r";
  how.field = "json";
  auto reply = TryIngestSynthetic(client, dataset, n, how);
  if (!reply.ok()) {
    if (error) *error = reply.status();
    return {};
  }
  return reply.value();
}

// One epoch of rank 0 of 1 as (ids, payload) per step.
struct Epoch {
  std::vector<std::vector<uint64_t>> ids;
  std::vector<std::string> payloads;
  Status end;
};

Epoch StreamEpoch(Client& client, const std::string& dataset, const SamplerSpec& sampler) {
  StreamOptions o;
  o.dataset = dataset;
  o.batch_size = 32;
  o.seed = 9;
  o.sampler = sampler;
  Epoch e;
  const RankRun run = StreamAll(client, o);
  e.end = run.end;
  for (const Batch& b : run.batches) {
    e.ids.push_back(b.ids());
    std::string payload;
    for (size_t i = 0; i < b.size(); ++i) payload += b.sample(i);
    e.payloads.push_back(std::move(payload));
    for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b.sample(i), ReviewPayload(b.ids()[i])) << dataset;
  }
  return e;
}

std::vector<std::string> ShardFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".shard") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Flips a byte in the middle of the stored bytes of the block that holds the
// shard's first record: damage only the block checksum can find.
void DamageFirstBlock(const std::string& shard) {
  uint64_t at = 0;
  {
    auto reader = ShardReader::Open(shard);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    ASSERT_TRUE(reader.value()->compressed());
    const auto [begin, end] = reader.value()->RecordRange(0);
    ASSERT_GT(end, begin + kBlockHeaderSize + 16);
    at = begin + kBlockHeaderSize + (end - begin - kBlockHeaderSize - 8) / 2;
  }
  FlipByte(shard, at, 0x10);
}

// Two nodes, the same dataset name (plans are keyed by it): one stores it
// uncompressed, the other with zstd.
TEST(CompressionTest, CompressedStreamsTheSameBytesOnEverySampler) {
  SingleNode plain_node;
  SingleNode packed_node;
  const uint64_t n = 3000;
  ASSERT_EQ(IngestReviews(plain_node.client(), "reviews", n, Compression::kNone).dataset.samples, n);
  ASSERT_EQ(IngestReviews(packed_node.client(), "reviews", n, Compression::kZstd).dataset.samples, n);

  auto plain = plain_node.client().Describe("reviews");
  auto zstd = packed_node.client().Describe("reviews");
  ASSERT_TRUE(plain.ok() && zstd.ok());
  EXPECT_EQ(plain->dataset.compression, Compression::kNone);
  EXPECT_EQ(zstd->dataset.compression, Compression::kZstd);
  EXPECT_EQ(zstd->dataset.compression_level, kDefaultZstdLevel);
  EXPECT_EQ(zstd->dataset.compression_block_bytes, kCompressedBlockBytes);
  EXPECT_EQ(zstd->dataset.bytes, plain->dataset.bytes);                // the same logical bytes
  EXPECT_LT(zstd->dataset.file_bytes * 2, plain->dataset.file_bytes);  // text: well over 2x smaller
  // On disk, format 4 for the compressed version and 3 for the other.
  for (const auto& [node, format] :
       {std::pair{&plain_node, kShardFormatVersion}, std::pair{&packed_node, kCompressedShardFormatVersion}}) {
    const auto files = ShardFiles(node->dir().Join("data") + "/shards/reviews/v1");
    ASSERT_GE(files.size(), 2u) << format;
    for (const std::string& f : files) {
      auto reader = ShardReader::Open(f);
      ASSERT_TRUE(reader.ok()) << reader.status().ToString();
      EXPECT_EQ(reader.value()->format_version(), format) << f;
    }
  }

  SamplerSpec shuffle;
  SamplerSpec stratified;
  stratified.kind = SamplerSpec::Kind::kStratified;
  SamplerSpec weighted;
  weighted.kind = SamplerSpec::Kind::kWeighted;
  weighted.weights = {{"label0", 3}, {"label1", 1}, {"label2", 1}, {"label3", 0.5}};
  for (const auto& [name, sampler] :
       {std::pair{"shuffle", shuffle}, std::pair{"stratified", stratified}, std::pair{"weighted", weighted}}) {
    SCOPED_TRACE(name);
    const Epoch want = StreamEpoch(plain_node.client(), "reviews", sampler);
    const Epoch got = StreamEpoch(packed_node.client(), "reviews", sampler);
    EXPECT_EQ(want.end.code(), Code::kOutOfRange) << want.end.ToString();
    EXPECT_EQ(got.end.code(), Code::kOutOfRange) << got.end.ToString();
    ASSERT_GE(want.ids.size(), n / 32);
    EXPECT_EQ(got.ids, want.ids);
    EXPECT_TRUE(got.payloads == want.payloads);
  }
}

TEST(CompressionTest, DamagedBlockOnOneNodeIsNeverServed) {
  SingleNode node;
  const uint64_t n = 2000;
  ASSERT_EQ(IngestReviews(node.client(), "hurt", n, Compression::kZstd).dataset.samples, n);
  const auto files = ShardFiles(node.dir().Join("data") + "/shards/hurt/v1");
  ASSERT_FALSE(files.empty());
  DamageFirstBlock(files.front());
  // Every batch delivered is exact (StreamEpoch checks each sample); the
  // step that needs the damaged block ends the stream with DataLoss.
  const Epoch e = StreamEpoch(node.client(), "hurt", SamplerSpec{});
  EXPECT_TRUE(e.end.code() == Code::kDataLoss || e.end.code() == Code::kUnavailable) << e.end.ToString();
  EXPECT_LT(e.ids.size(), (n + 31) / 32);
}

TEST(CompressionTest, DamagedBlockIsServedFromTheOtherReplica) {
  LocalCluster::Options o;
  o.nodes = 3;
  LocalCluster cluster(o);
  auto client = cluster.Connect(0);
  ASSERT_NE(client, nullptr);
  const uint64_t n = 3000;
  Status error;
  ASSERT_EQ(IngestReviews(*client, "twice", n, Compression::kZstd, 2, &error).dataset.samples, n) << error.ToString();
  // Damage the first block of every shard one node holds: it must fetch
  // those samples from the other holder, decompressed there.
  int victim = 0;
  while (victim < 3 && ShardFiles(cluster.DataDir(victim) + "/shards/twice/v1").empty()) ++victim;
  ASSERT_LT(victim, 3);
  const auto files = ShardFiles(cluster.DataDir(victim) + "/shards/twice/v1");
  for (const std::string& f : files) DamageFirstBlock(f);
  const Epoch e = StreamEpoch(*client, "twice", SamplerSpec{});  // checks every payload
  EXPECT_EQ(e.end.code(), Code::kOutOfRange) << e.end.ToString();
  std::set<uint64_t> seen;
  for (const auto& step : e.ids) seen.insert(step.begin(), step.end());
  EXPECT_EQ(seen.size(), n);
  auto status = client->GetNodeStatus(cluster.Address(victim));
  ASSERT_TRUE(status.ok());
  EXPECT_GE(status->checksum_failures, 1u);
}

TEST(CompressionTest, CliIngestsCompressedAndDescribeShowsTheRatio) {
  SingleNode node;
  const std::string dir = node.dir().Join("texts");
  for (uint64_t i = 0; i < 200; ++i) {
    const std::string label = i % 2 ? "good" : "bad";
    std::filesystem::create_directories(dir + "/" + label);
    WriteFile(dir + "/" + label + "/" + std::to_string(i) + ".json", ReviewPayload(i));
  }
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), StrataCliBinary());
    args.insert(args.end(), {"--server", node.address()});
    return RunCommand(args);
  };
  const CommandResult bad = cli({"ingest", "--dataset", "t", "--compression", "zstd:42", "-q", dir});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("invalid compression 'zstd:42'"), std::string::npos) << bad.err;
  const CommandResult ingest =
      cli({"ingest", "--dataset", "t", "--compression", "zstd:5", "--compression-block", "16KiB", "-q", dir});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  const CommandResult describe = cli({"describe", "t"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("zstd level 5, blocks of 16"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("redundancy"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("x smaller)"), std::string::npos) << describe.out;
  auto d = node.client().Describe("t");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->dataset.compression_level, 5);
  EXPECT_EQ(d->dataset.compression_block_bytes, 16u << 10);
  EXPECT_LT(d->dataset.file_bytes, d->dataset.bytes);
}

}  // namespace
}  // namespace strata::testing
