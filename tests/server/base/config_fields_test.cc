// The table of settings: every field has a flag and a YAML key, a flag
// overrides the file, a bad value names the field, and README.md's reference
// is the table's.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "server/base/config.h"
#include "tests/support/temp_dir.h"

namespace strata {
namespace {

using testing::TempDir;
using testing::WriteFile;

// Per field: a config file that sets it, and a flag value that sets it to
// something else. Every field of the table must be here.
struct Sample {
  const char* key;
  const char* yaml;
  const char* flag;
  // For the flag alone (no file): another value where `flag` is the default,
  // and a flag the value needs. nullptr: `flag`, nothing.
  const char* alone = nullptr;
  const char* alone_needs = nullptr;
};
const Sample kSamples[] = {
    {"node_id", "node_id: store-7\n", "store-8"},
    {"listen", "listen: 127.0.0.1:7500\n", "127.0.0.1:7600"},
    {"metrics_listen", "metrics_listen: 127.0.0.1:9500\n", ""},
    {"peer_listen", "peer_listen: 127.0.0.1:7700\n", "127.0.0.1:7800"},
    {"data_dir", "data_dir: /srv/a\n", "/srv/b"},
    {"log_level", "log_level: debug\n", "warn"},
    {"shard_target_bytes", "shard_target_bytes: 8MiB\n", "16MiB"},
    {"io_threads", "io_threads: 3\n", "5"},
    {"prefetch_batches", "prefetch_batches: 3\n", "6"},
    {"cache_bytes", "cache_bytes: 64MiB\n", "128MiB"},
    {"memory_budget", "memory_budget: 1GiB\n", "2GiB"},
    {"cache_block_bytes", "cache_block_bytes: 1MiB\n", "4MiB"},
    {"decompressed_cache_bytes", "decompressed_cache_bytes: 64MiB\n", "0"},
    {"read_ahead_steps", "read_ahead_steps: 8\n", "0"},
    {"max_part_bytes", "max_part_bytes: 8MiB\n", "32MiB"},
    {"max_message_bytes", "max_message_bytes: 64MiB\n", "128MiB"},
    {"drain_timeout_ms", "drain_timeout_ms: 100\n", "200"},
    {"max_streams", "max_streams: 8\n", "16"},
    {"max_ingests", "max_ingests: 8\n", "16"},
    {"ingest_idle_timeout_s", "ingest_idle_timeout_s: 30\n", "0"},
    {"metrics_max_datasets", "metrics_max_datasets: 8\n", "16"},
    {"disk_low_watermark", "disk_low_watermark: 2%\n", "1GiB", nullptr, "--disk-high-watermark=2GiB"},
    {"disk_high_watermark", "disk_high_watermark: 20%\n", "30%"},
    {"cluster.membership", "cluster:\n  membership: etcd\n  etcd_endpoints: [127.0.0.1:2379]\n", "static", "etcd",
     "--cluster-etcd-endpoints=127.0.0.1:2379"},
    {"cluster.nodes", "cluster:\n  nodes: [{id: node-1, address: 127.0.0.1:1}]\n", "node-1=127.0.0.1:2,b=h:3"},
    {"cluster.etcd_endpoints", "cluster:\n  membership: etcd\n  etcd_endpoints: [127.0.0.1:1]\n",
     "127.0.0.1:2,127.0.0.1:3"},
    {"cluster.name", "cluster:\n  name: prod\n", "test"},
    {"cluster.advertise", "cluster:\n  advertise: 10.0.0.1:7400\n", "10.0.0.2:7400"},
    {"cluster.zone", "cluster:\n  zone: hall-1\n", "hall-2"},
    {"cluster.rack", "cluster:\n  rack: r1\n", "r2"},
    {"cluster.lease_ttl_s", "cluster:\n  lease_ttl_s: 7\n", "9"},
    {"cluster.heartbeat_interval_ms", "cluster:\n  heartbeat_interval_ms: 500\n", "600"},
    {"cluster.failure_timeout_ms", "cluster:\n  failure_timeout_ms: 4000\n", "5000"},
    {"cluster.grace_period_s", "cluster:\n  grace_period_s: 60\n", "90"},
    {"cluster.repair_bytes_per_sec", "cluster:\n  repair_bytes_per_sec: 64MiB\n", "128MiB"},
    {"cluster.repair_interval_ms", "cluster:\n  repair_interval_ms: 500\n", "700"},
    {"cluster.scrub_bytes_per_sec", "cluster:\n  scrub_bytes_per_sec: 0\n", "1MiB"},
    // Files that exist: the settings check that they can be read.
    {"tls.cert", "tls:\n  cert: /etc/passwd\n", "/etc/hosts"},
    {"tls.key", "tls:\n  key: /etc/passwd\n", "/etc/hosts"},
    {"tls.client_ca", "tls:\n  client_ca: /etc/passwd\n", "/etc/hosts"},
    {"auth_tokens", "auth_tokens: /etc/passwd\n", "/etc/hosts"},
};

struct Equal {
  template <typename T>
  bool operator()(T* a, T* b) const {
    return *a == *b;
  }
  bool operator()(std::vector<ClusterConfig::Peer>* a, std::vector<ClusterConfig::Peer>* b) const {
    if (a->size() != b->size()) return false;
    for (size_t i = 0; i < a->size(); ++i) {
      if ((*a)[i].id != (*b)[i].id || (*a)[i].address != (*b)[i].address ||
          (*a)[i].peer_address != (*b)[i].peer_address) {
        return false;
      }
    }
    return true;
  }
  template <typename T, typename U>
  bool operator()(T*, U*) const {
    return false;
  }
};

bool SameValue(const ConfigField& f, NodeConfig a, NodeConfig b) { return std::visit(Equal{}, f.ref(a), f.ref(b)); }

const ConfigField& Field(const std::string& key) {
  for (const auto& f : ConfigFields()) {
    if (key == f.key) return f;
  }
  throw std::runtime_error("no field " + key);
}

// Parses argv as stratad would (the flags AddConfigFlags registers).
Result<NodeConfig> LoadFromArgs(std::vector<std::string> args, const std::string& config_file = "") {
  CLI::App app;
  NodeFlags flags;
  flags.config_file = config_file;
  AddConfigFlags(app, &flags);
  args.insert(args.begin(), "stratad");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return Status::InvalidArgument(std::string("usage: ") + e.what());
  }
  return LoadNodeConfig(flags);
}

TEST(ConfigFieldsTest, SamplesCoverEveryField) {
  std::set<std::string> table, samples;
  for (const auto& f : ConfigFields()) EXPECT_TRUE(table.insert(f.key).second) << f.key << " twice";
  for (const auto& s : kSamples) samples.insert(s.key);
  EXPECT_EQ(table, samples) << "a new field needs a sample here";
  EXPECT_GE(table.size(), 28u);
}

TEST(ConfigFieldsTest, EveryFieldHasAFlagNamedAfterItsKey) {
  std::set<std::string> flags;
  for (const auto& f : ConfigFields()) {
    const std::string flag = FlagName(f.key);
    EXPECT_TRUE(flags.insert(flag).second) << flag;
    if (f.alias) {
      EXPECT_TRUE(flags.insert(f.alias).second) << f.alias;
    }
  }
  EXPECT_EQ(FlagName("cluster.repair_bytes_per_sec"), "--cluster-repair-bytes-per-sec");
  EXPECT_EQ(FlagName("node_id"), "--node-id");
  const NodeConfig defaults;
  for (const auto& s : kSamples) {
    const ConfigField& f = Field(s.key);
    std::vector<std::string> args = {FlagName(s.key), s.alone ? s.alone : s.flag};
    if (s.alone_needs) args.push_back(s.alone_needs);
    auto c = LoadFromArgs(args);
    ASSERT_TRUE(c.ok()) << s.key << ": " << c.status().ToString();
    EXPECT_FALSE(SameValue(f, c.value(), defaults)) << FlagName(s.key) << " changed nothing";
    if (f.alias) {
      args[0] = f.alias;
      auto by_alias = LoadFromArgs(args);
      ASSERT_TRUE(by_alias.ok()) << f.alias << ": " << by_alias.status().ToString();
      EXPECT_TRUE(SameValue(f, by_alias.value(), c.value())) << f.alias;
    }
  }
}

TEST(ConfigFieldsTest, EveryFieldReadsFromTheFileAndAFlagOverridesIt) {
  TempDir dir;
  const NodeConfig defaults;
  for (const auto& s : kSamples) {
    const ConfigField& f = Field(s.key);
    WriteFile(dir.Join("n.yaml"), s.yaml);
    auto from_file = LoadFromArgs({}, dir.Join("n.yaml"));
    ASSERT_TRUE(from_file.ok()) << s.yaml << from_file.status().ToString();
    EXPECT_FALSE(SameValue(f, from_file.value(), defaults)) << s.key << " from the file changed nothing";
    auto both = LoadFromArgs({FlagName(s.key), s.flag}, dir.Join("n.yaml"));
    ASSERT_TRUE(both.ok()) << s.key << ": " << both.status().ToString();
    auto flag_only = LoadFromArgs({FlagName(s.key), s.flag});
    ASSERT_TRUE(flag_only.ok()) << s.key << ": " << flag_only.status().ToString();
    EXPECT_FALSE(SameValue(f, both.value(), from_file.value())) << s.key << ": the file won over the flag";
    EXPECT_TRUE(SameValue(f, both.value(), flag_only.value())) << s.key;
  }
}

TEST(ConfigFieldsTest, AListFlagSetsTheMembershipUnlessTheMembershipFlagIsGiven) {
  auto c = LoadFromArgs({"--etcd", "127.0.0.1:2379"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster.membership, "etcd");
  c = LoadFromArgs({"--cluster-etcd-endpoints", "127.0.0.1:2379", "--cluster-membership", "static"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cluster.membership, "static") << "the explicit flag wins";
}

// Values each field rejects; every field with a validator needs one here.
const std::pair<const char*, const char*> kBadValues[] = {
    {"node_id", "a b"},
    {"node_id", ""},
    {"listen", "nohost"},
    {"listen", "1.2.3.4:99999"},
    {"metrics_listen", "9400"},
    {"data_dir", ""},
    {"log_level", "loud"},
    {"shard_target_bytes", "1K"},
    {"io_threads", "0"},
    {"io_threads", "-1"},
    {"io_threads", "99999999999"},
    {"prefetch_batches", "65"},
    {"cache_bytes", "1MiB"},
    {"memory_budget", "16MiB"},
    {"cache_block_bytes", "5000"},
    {"decompressed_cache_bytes", "2TiB"},
    {"read_ahead_steps", "1025"},
    {"max_part_bytes", "2GiB"},
    {"max_message_bytes", "4GiB"},
    {"max_message_bytes", "1MiB"},  // a peer's 1 MiB chunk and its header would not fit
    {"max_streams", "0"},
    {"max_ingests", "0"},
    {"metrics_max_datasets", "10001"},
    {"disk_low_watermark", "0%"},
    {"disk_low_watermark", "20%"},
    {"disk_high_watermark", "2%"},
    {"disk_high_watermark", "lots"},
    {"cluster.membership", "gossip"},
    {"cluster.nodes", "node-2=127.0.0.1:1"},
    {"cluster.nodes", "node-1=nohost"},
    {"cluster.etcd_endpoints", "nohost"},
    {"cluster.advertise", "0.0.0.0"},
    {"cluster.zone", "zone a"},
    {"cluster.rack", "rack/1"},
    {"cluster.lease_ttl_s", "0"},
    {"cluster.heartbeat_interval_ms", "5"},
    {"cluster.failure_timeout_ms", "10"},
    {"cluster.grace_period_s", "0"},
    {"cluster.repair_bytes_per_sec", "1KiB"},
    {"peer_listen", "no-port"},
    {"cluster.repair_interval_ms", "1"},
    {"tls.cert", "/nonexistent/node.pem"},
    {"tls.key", "/etc"},
    {"tls.client_ca", "/nonexistent/ca.pem"},
    {"auth_tokens", "/nonexistent/tokens"},
};

TEST(ConfigFieldsTest, ABadValueNamesTheField) {
  std::set<std::string> covered;
  for (const auto& [key, bad] : kBadValues) {
    covered.insert(key);
    auto c = LoadFromArgs({FlagName(key), bad});
    ASSERT_FALSE(c.ok()) << key << "=" << bad;
    EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
    EXPECT_NE(c.status().message().find(key), std::string::npos) << key << "=" << bad << ": " << c.status().ToString();
  }
  for (const auto& f : ConfigFields()) {
    if (f.validate) {
      EXPECT_TRUE(covered.count(f.key)) << f.key << " has a validator but no bad value here";
    }
  }
  // A value that does not parse as the field's type names the field and its flag.
  for (const auto& f : ConfigFields()) {
    NodeConfig probe;
    if (!std::holds_alternative<uint32_t*>(f.ref(probe)) && !std::holds_alternative<uint64_t*>(f.ref(probe))) continue;
    auto c = LoadFromArgs({FlagName(f.key), "x"});
    ASSERT_FALSE(c.ok()) << f.key;
    EXPECT_NE(c.status().message().find(f.key), std::string::npos) << c.status().ToString();
    EXPECT_NE(c.status().message().find(FlagName(f.key)), std::string::npos) << c.status().ToString();
  }
}

TEST(ConfigFieldsTest, ABadValueInTheFileNamesTheFileAndTheKey) {
  TempDir dir;
  WriteFile(dir.Join("n.yaml"), "cluster:\n  repair_interval_ms: soon\n");
  auto c = LoadFromArgs({}, dir.Join("n.yaml"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(dir.Join("n.yaml") + ": cluster.repair_interval_ms"), std::string::npos)
      << c.status().ToString();
  WriteFile(dir.Join("n.yaml"), "cluster:\n  repair_intervl_ms: 5\n");
  c = LoadFromArgs({}, dir.Join("n.yaml"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown key 'repair_intervl_ms'"), std::string::npos) << c.status().ToString();
  // A key given twice would have the last one win, unsaid.
  WriteFile(dir.Join("n.yaml"), "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n");
  c = LoadFromArgs({}, dir.Join("n.yaml"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("key 'listen' is given twice"), std::string::npos) << c.status().ToString();
  WriteFile(dir.Join("n.yaml"), "cluster:\n  name: a\n  name: b\n");
  c = LoadFromArgs({}, dir.Join("n.yaml"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cluster: key 'name' is given twice"), std::string::npos)
      << c.status().ToString();
  // A dotted name is no second way to set a nested key.
  WriteFile(dir.Join("n.yaml"), "tls:\n  cert: /etc/passwd\ntls.cert: /etc/hosts\n");
  c = LoadFromArgs({}, dir.Join("n.yaml"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown key 'tls.cert' (a key holds no '.': write tls: {cert: ...})"),
            std::string::npos)
      << c.status().ToString();
  WriteFile(dir.Join("n.yaml"), "cluster: 5\n");
  c = LoadFromArgs({}, dir.Join("n.yaml"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cluster: expected a mapping"), std::string::npos) << c.status().ToString();
}

// README.md's reference is exactly what `stratad --print-config-reference`
// prints, between its two marker comments.
TEST(ConfigFieldsTest, ReadmeReferenceIsTheTable) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in) << "README.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const std::string begin = "<!-- config-reference: begin (stratad --print-config-reference) -->\n";
  const std::string end = "<!-- config-reference: end -->";
  const size_t b = readme.find(begin);
  const size_t e = readme.find(end);
  ASSERT_NE(b, std::string::npos) << "README.md lacks " << begin;
  ASSERT_NE(e, std::string::npos) << "README.md lacks " << end;
  ASSERT_LT(b, e);
  EXPECT_EQ(readme.substr(b + begin.size(), e - b - begin.size()), ConfigReferenceMarkdown())
      << "regenerate: ./build/server/stratad --print-config-reference";
}

}  // namespace
}  // namespace strata
