#include "server/base/config.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST(ConfigTest, DefaultsAreValid) {
  auto c = LoadNodeConfig(NodeFlags{});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "127.0.0.1:7400");
}

TEST(ConfigTest, FileThenFlagsOverride) {
  TempDir dir;
  WriteFile(dir.Join("n.yaml"),
            "node_id: store-7\nlisten: 0.0.0.0:7500\ndata_dir: /srv/strata\nshard_target_bytes: 8MiB\nio_threads: 3\n"
            "cache_bytes: 2GiB\ncache_block_bytes: 1MiB\nread_ahead_steps: 8\n");
  NodeFlags flags;
  flags.config_file = dir.Join("n.yaml");
  flags.values["listen"] = "127.0.0.1:7600";
  flags.values["cache_bytes"] = "512MiB";
  auto c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->node_id, "store-7");
  EXPECT_EQ(c->listen, "127.0.0.1:7600") << "the flag wins";
  EXPECT_EQ(c->data_dir, "/srv/strata");
  EXPECT_EQ(c->shard_target_bytes, 8u << 20);
  EXPECT_EQ(c->io_threads, 3u);
  EXPECT_EQ(c->cache_bytes, 512u << 20) << "the flag wins";
  EXPECT_EQ(c->cache_block_bytes, 1u << 20);
  EXPECT_EQ(c->read_ahead_steps, 8u);
}

TEST(ConfigTest, MemoryBudgetFromTheFileOrAFlag) {
  TempDir dir;
  WriteFile(dir.Join("n.yaml"), "memory_budget: 3GiB\n");
  NodeFlags flags;
  flags.config_file = dir.Join("n.yaml");
  auto c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->memory_budget, 3ull << 30);
  flags.values["memory_budget"] = "96MiB";
  c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->memory_budget, 96ull << 20) << "the flag wins";
  EXPECT_EQ(LoadNodeConfig(NodeFlags{}).value().memory_budget, 0u) << "none by default";
  flags.values["memory_budget"] = "big";
  EXPECT_NE(LoadNodeConfig(flags).status().message().find("--memory-budget"), std::string::npos);
}

// With a memory budget, the decompressed-block cache holds at most a quarter
// of it: its default 256 MiB alone would be more than a small budget.
TEST(ConfigTest, AMemoryBudgetCapsTheDecompressedCache) {
  NodeConfig c;
  EXPECT_EQ(DecompressedCacheBytes(c), 256ull << 20) << "no budget: as configured";
  c.memory_budget = 112ull << 20;
  EXPECT_EQ(DecompressedCacheBytes(c), 28ull << 20);
  c.memory_budget = 4ull << 30;
  EXPECT_EQ(DecompressedCacheBytes(c), 256ull << 20) << "a quarter of the budget is more than configured";
  c.decompressed_cache_bytes = 0;
  EXPECT_EQ(DecompressedCacheBytes(c), 0u);
}

TEST(ConfigTest, DiskWatermarksAsSharesOrSizes) {
  auto c = LoadNodeConfig(NodeFlags{});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->disk_low_watermark, "5%");
  EXPECT_EQ(c->disk_high_watermark, "10%");
  NodeFlags flags;
  flags.values["disk_low_watermark"] = "1GiB";
  flags.values["disk_high_watermark"] = "8%";  // mixed units: not compared at load time
  c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->disk_low_watermark, "1GiB");
  flags.values["disk_low_watermark"] = "-1";
  EXPECT_NE(LoadNodeConfig(flags).status().message().find("disk_low_watermark"), std::string::npos);
}

TEST(ConfigTest, BadConfigIsAClearError) {
  TempDir dir;
  struct Case {
    const char* yaml;
    const char* expect;
  } cases[] = {
      {"listne: 1.2.3.4:5\n", "unknown key 'listne'"},
      {"listen: nohost\n", "invalid address"},
      {"listen: 1.2.3.4:99999\n", "port above 65535"},
      {"io_threads: many\n", "expected a number"},
      {"shard_target_bytes: 12XB\n", "size unit"},
      {"log_level: loud\n", "log_level"},
      {"- a\n- b\n", "mapping"},
      {"node_id: [a, b]\n", "expected a string"},
      {"key: [unclosed\n", "config file"},
      {"cache_block_bytes: 5000\n", "cache_block_bytes must be a multiple of 4 KiB"},
      {"cache_bytes: 1MiB\n", "cache_bytes must be 0 (no cache) or at least cache_block_bytes"},
      {"read_ahead_steps: 5000\n", "read_ahead_steps must be at most 1024"},
      {"memory_budget: 16MiB\n", "memory_budget must be 0 (none) or at least 32 MiB"},
      {"memory_budget: 1GiB\ncache_bytes: 0\n", "memory_budget needs the block cache"},
      {"memory_budget: lots\n", "size"},
      {"disk_low_watermark: 0%\n", "disk_low_watermark: invalid share"},
      {"disk_high_watermark: lots\n", "disk_high_watermark: invalid amount"},
      {"disk_low_watermark: 20%\n", "disk_high_watermark must be at least disk_low_watermark"},
      {"disk_low_watermark: 2GiB\ndisk_high_watermark: 1GiB\n", "disk_high_watermark must be at least"},
      {"listen: 127.0.0.1:7650\npeer_listen: 127.0.0.1:7650\n", "peer_listen 127.0.0.1:7650 is `listen` itself"},
      {"listen: 127.0.0.1:9400\n", "metrics_listen 127.0.0.1:9400 is `listen` itself"},
  };
  for (const auto& tc : cases) {
    WriteFile(dir.Join("bad.yaml"), tc.yaml);
    NodeFlags flags;
    flags.config_file = dir.Join("bad.yaml");
    auto c = LoadNodeConfig(flags);
    ASSERT_FALSE(c.ok()) << tc.yaml;
    EXPECT_NE(c.status().message().find(tc.expect), std::string::npos) << tc.yaml << " -> " << c.status().ToString();
  }
  // Port 0 picks a free port for each: not a clash.
  WriteFile(dir.Join("zero.yaml"), "listen: 127.0.0.1:0\npeer_listen: 127.0.0.1:0\nmetrics_listen: 127.0.0.1:0\n");
  NodeFlags zero;
  zero.config_file = dir.Join("zero.yaml");
  EXPECT_TRUE(LoadNodeConfig(zero).ok());
  NodeFlags missing;
  missing.config_file = dir.Join("nope.yaml");
  EXPECT_EQ(LoadNodeConfig(missing).status().code(), Code::kNotFound);
}

TEST(ConfigTest, ParsesHostPort) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(ParseHostPort("[::1]:7400", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 7400);
  EXPECT_FALSE(ParseHostPort(":7400", &host, &port).ok());
  EXPECT_FALSE(ParseHostPort("host:", &host, &port).ok());
  EXPECT_FALSE(ParseHostPort("host:12a", &host, &port).ok());
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(ClusterConfigTest, StaticNodesFromTheFileAndPeersFromAFlag) {
  testing::TempDir dir;
  testing::WriteFile(
      dir.Join("c.yaml"),
      "node_id: node-2\ncluster:\n  name: prod\n  grace_period_s: 60\n  repair_bytes_per_sec: 64MiB\n"
      "  nodes:\n    - {id: node-1, address: 10.0.0.1:7400}\n    - {id: node-2, address: 10.0.0.2:7400}\n");
  NodeFlags flags;
  flags.config_file = dir.Join("c.yaml");
  auto c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster.name, "prod");
  ASSERT_EQ(c->cluster.nodes.size(), 2u);
  EXPECT_EQ(c->cluster.nodes[1].address, "10.0.0.2:7400");
  EXPECT_EQ(c->cluster.grace_period_s, 60u);
  EXPECT_EQ(c->cluster.repair_bytes_per_sec, 64u << 20);
  flags.values["cluster.nodes"] = "node-1=127.0.0.1:1,node-2=127.0.0.1:2,node-3=127.0.0.1:3";
  c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster.nodes.size(), 3u) << "the flag replaces the file's list";
  EXPECT_EQ(c->cluster.nodes[0].peer_address, "");
  // A node's own peer address (--peer-listen) after a '/', in the flag and the file.
  flags.values["cluster.nodes"] = "node-1=127.0.0.1:1/127.0.0.1:11,node-2=127.0.0.1:2";
  c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster.nodes[0].address, "127.0.0.1:1");
  EXPECT_EQ(c->cluster.nodes[0].peer_address, "127.0.0.1:11");
  EXPECT_EQ(c->cluster.nodes[1].peer_address, "");
  flags.values["cluster.nodes"] = "node-1=127.0.0.1:1/";
  EXPECT_FALSE(LoadNodeConfig(flags).ok());
  flags.values["cluster.nodes"] = "node-1=127.0.0.1:1/nonsense";
  EXPECT_FALSE(LoadNodeConfig(flags).ok());
  flags.values.erase("cluster.nodes");
  testing::WriteFile(dir.Join("p.yaml"),
                     "node_id: node-1\npeer_listen: 127.0.0.1:7500\ncluster:\n  nodes:\n"
                     "    - {id: node-1, address: 10.0.0.1:7400, peer_address: 10.0.1.1:7500}\n");
  NodeFlags peer_flags;
  peer_flags.config_file = dir.Join("p.yaml");
  c = LoadNodeConfig(peer_flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->peer_listen, "127.0.0.1:7500");
  EXPECT_EQ(c->cluster.nodes[0].peer_address, "10.0.1.1:7500");
  flags.values.erase("cluster.nodes");
  flags.values["cluster.etcd_endpoints"] = "127.0.0.1:2379,127.0.0.1:2380";
  c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster.membership, "etcd");
  EXPECT_EQ(c->cluster.etcd_endpoints.size(), 2u);
}

TEST(ClusterConfigTest, ZonesAndRacksInTheFlagsTheListAndTheFile) {
  testing::TempDir dir;
  NodeFlags flags;
  flags.values["node_id"] = "node-2";
  flags.values["cluster.zone"] = "zone-b";
  flags.values["cluster.rack"] = "r7";
  flags.values["cluster.nodes"] =
      "node-1=127.0.0.1:1/127.0.0.1:11@zone-a/r1,node-2=127.0.0.1:2@zone-b/r7,node-3=127.0.0.1:3";
  auto c = LoadNodeConfig(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster.zone, "zone-b");
  EXPECT_EQ(c->cluster.rack, "r7");
  ASSERT_EQ(c->cluster.nodes.size(), 3u);
  EXPECT_EQ(c->cluster.nodes[0].peer_address, "127.0.0.1:11");
  EXPECT_EQ(c->cluster.nodes[0].zone, "zone-a");
  EXPECT_EQ(c->cluster.nodes[0].rack, "r1");
  EXPECT_EQ(c->cluster.nodes[1].address, "127.0.0.1:2");
  EXPECT_EQ(c->cluster.nodes[1].zone, "zone-b");
  EXPECT_EQ(c->cluster.nodes[1].rack, "r7");
  EXPECT_EQ(c->cluster.nodes[2].zone, "");
  // The list disagreeing with this node's own zone.
  flags.values["cluster.zone"] = "zone-c";
  EXPECT_FALSE(LoadNodeConfig(flags).ok());
  // ... or silent about it: the other nodes know this node's zone and rack
  // only from the list, so a zone or rack given only to this node would have
  // each node place shards by another map.
  flags.values["cluster.zone"] = "zone-b";
  flags.values["cluster.nodes"] = "node-1=127.0.0.1:1@zone-a/r1,node-2=127.0.0.1:2@zone-b,node-3=127.0.0.1:3";
  auto no_rack = LoadNodeConfig(flags);
  ASSERT_FALSE(no_rack.ok());
  EXPECT_NE(no_rack.status().message().find("node-2=HOST:PORT@ZONE[/RACK]"), std::string::npos)
      << no_rack.status().ToString();
  flags.values.erase("cluster.rack");
  flags.values["cluster.nodes"] = "node-1=127.0.0.1:1@zone-a/r1,node-2=127.0.0.1:2,node-3=127.0.0.1:3";
  EXPECT_FALSE(LoadNodeConfig(flags).ok());
  // The list alone may name this node's domains (the daemon takes them from it).
  flags.values.erase("cluster.zone");
  flags.values["cluster.nodes"] = "node-1=127.0.0.1:1@zone-a/r1,node-2=127.0.0.1:2@zone-b/r7,node-3=127.0.0.1:3";
  EXPECT_TRUE(LoadNodeConfig(flags).ok());
  // Under etcd membership a node registers its own zone: the list is not its map.
  flags.values["cluster.zone"] = "zone-b";
  flags.values["cluster.nodes"] = "node-1=127.0.0.1:1,node-2=127.0.0.1:2";
  flags.values["cluster.membership"] = "etcd";
  flags.values["cluster.etcd_endpoints"] = "127.0.0.1:2379";
  auto etcd = LoadNodeConfig(flags);
  EXPECT_TRUE(etcd.ok()) << etcd.status().ToString();
  for (const char* bad : {"node-1=127.0.0.1:1@", "node-1=127.0.0.1:1@z/", "node-1=127.0.0.1:1@bad zone"}) {
    NodeFlags f;
    f.values["node_id"] = "node-1";
    f.values["cluster.nodes"] = bad;
    EXPECT_FALSE(LoadNodeConfig(f).ok()) << bad;
  }
  NodeFlags f;
  f.values["cluster.zone"] = "a/b";
  EXPECT_FALSE(LoadNodeConfig(f).ok());
  testing::WriteFile(dir.Join("z.yaml"),
                     "node_id: node-1\ncluster:\n  zone: hall-1\n  nodes:\n"
                     "    - {id: node-1, address: 10.0.0.1:7400, zone: hall-1, rack: r2}\n");
  NodeFlags file_flags;
  file_flags.config_file = dir.Join("z.yaml");
  c = LoadNodeConfig(file_flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster.zone, "hall-1");
  EXPECT_EQ(c->cluster.nodes[0].rack, "r2");
}

TEST(ClusterConfigTest, BadClusterConfigIsAClearError) {
  struct Case {
    NodeFlags flags;
    const char* expect;
  };
  std::vector<Case> cases(5);
  cases[0].flags.values["cluster.nodes"] = "node-2=127.0.0.1:1";
  cases[0].expect = "does not list this node";
  cases[1].flags.values["cluster.nodes"] = "node-1=127.0.0.1:1,node-1=127.0.0.1:2";
  cases[1].expect = "twice";
  cases[2].flags.values["cluster.nodes"] = "garbage";
  cases[2].expect = "ID=HOST:PORT";
  cases[3].flags.values["cluster.etcd_endpoints"] = "nohostport";
  cases[3].expect = "etcd_endpoints";
  cases[4].flags.values["cluster.advertise"] = "0.0.0.0";
  cases[4].expect = "advertise";
  for (const auto& tc : cases) {
    auto c = LoadNodeConfig(tc.flags);
    ASSERT_FALSE(c.ok()) << tc.expect;
    EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
    EXPECT_NE(c.status().ToString().find(tc.expect), std::string::npos) << c.status().ToString();
  }
}

}  // namespace
}  // namespace strata
