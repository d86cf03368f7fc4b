#include "server/base/config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "common/units.h"

namespace strata {

namespace {

// The smallest memory_budget accepted: stratad's code and heap take about
// 25 MiB before it serves anything.
constexpr uint64_t kMinMemoryBudget = 32ull << 20;

Status Bad(const std::string& where, const std::string& what) {
  return Status::InvalidArgument(where + ": " + what);
}

// Reads a size that may be written as a number or as "64MiB".
Status ReadSize(const YAML::Node& node, const std::string& where, uint64_t* out);

template <typename T>
Status ReadScalar(const YAML::Node& node, const std::string& where, T* out);

Status ReadSize(const YAML::Node& node, const std::string& where, uint64_t* out) {
  std::string text;
  STRATA_RETURN_IF_ERROR(ReadScalar(node, where, &text));
  auto parsed = ParseByteSize(text);
  if (!parsed.ok()) return Bad(where, parsed.status().message());
  *out = parsed.value();
  return Status::OK();
}

template <typename T>
Status ReadScalar(const YAML::Node& node, const std::string& where, T* out) {
  try {
    *out = node.as<T>();
  } catch (const YAML::Exception&) {
    return Bad(where, "expected a " + std::string(std::is_same_v<T, std::string> ? "string" : "number") +
                          ", got '" + YAML::Dump(node) + "'");
  }
  return Status::OK();
}

Status ApplyCluster(const YAML::Node& node, const std::string& where, ClusterConfig* c) {
  if (!node.IsMap()) return Bad(where, "expected a mapping");
  for (const auto& kv : node) {
    std::string key;
    STRATA_RETURN_IF_ERROR(ReadScalar(kv.first, where, &key));
    const YAML::Node& v = kv.second;
    const std::string at = where + "." + key;
    if (key == "name") STRATA_RETURN_IF_ERROR(ReadScalar(v, at, &c->name));
    else if (key == "membership") STRATA_RETURN_IF_ERROR(ReadScalar(v, at, &c->membership));
    else if (key == "advertise") STRATA_RETURN_IF_ERROR(ReadScalar(v, at, &c->advertise));
    else if (key == "lease_ttl_s") STRATA_RETURN_IF_ERROR(ReadScalar(v, at, &c->lease_ttl_s));
    else if (key == "heartbeat_interval_ms") STRATA_RETURN_IF_ERROR(ReadScalar(v, at, &c->heartbeat_interval_ms));
    else if (key == "failure_timeout_ms") STRATA_RETURN_IF_ERROR(ReadScalar(v, at, &c->failure_timeout_ms));
    else if (key == "grace_period_s") STRATA_RETURN_IF_ERROR(ReadScalar(v, at, &c->grace_period_s));
    else if (key == "repair_bytes_per_sec") STRATA_RETURN_IF_ERROR(ReadSize(v, at, &c->repair_bytes_per_sec));
    else if (key == "repair_interval_ms") STRATA_RETURN_IF_ERROR(ReadScalar(v, at, &c->repair_interval_ms));
    else if (key == "scrub_bytes_per_sec") STRATA_RETURN_IF_ERROR(ReadSize(v, at, &c->scrub_bytes_per_sec));
    else if (key == "etcd_endpoints") {
      if (!v.IsSequence()) return Bad(at, "expected a list of HOST:PORT");
      c->etcd_endpoints.clear();
      for (const auto& e : v) {
        std::string endpoint;
        STRATA_RETURN_IF_ERROR(ReadScalar(e, at, &endpoint));
        c->etcd_endpoints.push_back(endpoint);
      }
    } else if (key == "nodes") {
      if (!v.IsSequence()) return Bad(at, "expected a list of {id, address}");
      c->nodes.clear();
      for (const auto& n : v) {
        if (!n.IsMap() || !n["id"] || !n["address"]) return Bad(at, "each node needs an id and an address");
        ClusterConfig::Peer peer;
        STRATA_RETURN_IF_ERROR(ReadScalar(n["id"], at, &peer.id));
        STRATA_RETURN_IF_ERROR(ReadScalar(n["address"], at, &peer.address));
        c->nodes.push_back(std::move(peer));
      }
    } else {
      return Bad(where, "unknown key '" + key + "'");
    }
  }
  return Status::OK();
}

// "node-1=127.0.0.1:7400,node-2=127.0.0.1:7401"
Status ParsePeers(const std::string& text, std::vector<ClusterConfig::Peer>* out) {
  out->clear();
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      return Status::InvalidArgument("--peers: expected ID=HOST:PORT[,ID=HOST:PORT...], got '" + item + "'");
    }
    out->push_back({item.substr(0, eq), item.substr(eq + 1)});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::OK();
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Status ApplyFile(const std::string& path, NodeConfig* c) {
  if (!std::filesystem::exists(path)) return Status::NotFound("config file " + path + " does not exist");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config file " + path + ": " + e.what());
  }
  if (root.IsNull()) return Status::OK();  // an empty file keeps the defaults
  if (!root.IsMap()) return Status::InvalidArgument("config file " + path + ": expected a mapping of keys to values");
  for (const auto& kv : root) {
    std::string key;
    STRATA_RETURN_IF_ERROR(ReadScalar(kv.first, path, &key));
    const YAML::Node& v = kv.second;
    const std::string where = path + ": " + key;
    if (key == "node_id") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->node_id));
    else if (key == "listen") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->listen));
    else if (key == "metrics_listen") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->metrics_listen));
    else if (key == "data_dir") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->data_dir));
    else if (key == "log_level") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->log_level));
    else if (key == "shard_target_bytes") STRATA_RETURN_IF_ERROR(ReadSize(v, where, &c->shard_target_bytes));
    else if (key == "io_threads") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->io_threads));
    else if (key == "prefetch_batches") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->prefetch_batches));
    else if (key == "cache_bytes") STRATA_RETURN_IF_ERROR(ReadSize(v, where, &c->cache_bytes));
    else if (key == "cache_block_bytes") STRATA_RETURN_IF_ERROR(ReadSize(v, where, &c->cache_block_bytes));
    else if (key == "memory_budget") STRATA_RETURN_IF_ERROR(ReadSize(v, where, &c->memory_budget));
    else if (key == "read_ahead_steps") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->read_ahead_steps));
    else if (key == "max_part_bytes") STRATA_RETURN_IF_ERROR(ReadSize(v, where, &c->max_part_bytes));
    else if (key == "max_message_bytes") STRATA_RETURN_IF_ERROR(ReadSize(v, where, &c->max_message_bytes));
    else if (key == "drain_timeout_ms") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->drain_timeout_ms));
    else if (key == "max_streams") STRATA_RETURN_IF_ERROR(ReadScalar(v, where, &c->max_streams));
    else if (key == "cluster") STRATA_RETURN_IF_ERROR(ApplyCluster(v, path + ": cluster", &c->cluster));
    else return Bad(path, "unknown key '" + key + "'");
  }
  return Status::OK();
}

}  // namespace

uint64_t DefaultCacheBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 1ull << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4;
}

Status ParseHostPort(const std::string& address, std::string* host, int* port) {
  const auto bad = [&] {
    return Status::InvalidArgument("invalid address '" + address + "': expected HOST:PORT, e.g. 127.0.0.1:7400");
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return bad();
  *host = address.substr(0, colon);
  if (host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  if (host->empty()) return bad();
  int p = 0;
  for (char ch : address.substr(colon + 1)) {
    if (ch < '0' || ch > '9') return bad();
    p = p * 10 + (ch - '0');
    if (p > 65535) return Status::InvalidArgument("invalid address '" + address + "': port above 65535");
  }
  *port = p;
  return Status::OK();
}

Status ValidateNodeConfig(const NodeConfig& c) {
  std::string host;
  int port = 0;
  STRATA_RETURN_IF_ERROR(ParseHostPort(c.listen, &host, &port).WithContext("listen"));
  if (!c.metrics_listen.empty()) {
    STRATA_RETURN_IF_ERROR(ParseHostPort(c.metrics_listen, &host, &port).WithContext("metrics_listen"));
  }
  if (c.node_id.empty()) return Status::InvalidArgument("node_id must not be empty");
  for (char ch : c.node_id) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') {
      return Status::InvalidArgument("node_id '" + c.node_id + "': use letters, digits, '-', '_' and '.'");
    }
  }
  if (c.data_dir.empty()) return Status::InvalidArgument("data_dir must not be empty");
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (!kLevels.count(c.log_level)) {
    return Status::InvalidArgument("log_level '" + c.log_level + "': use trace, debug, info, warn or error");
  }
  if (c.shard_target_bytes < 4096 || c.shard_target_bytes > (64ull << 30)) {
    return Status::InvalidArgument("shard_target_bytes must be between 4 KiB and 64 GiB");
  }
  if (c.io_threads < 1 || c.io_threads > 256) return Status::InvalidArgument("io_threads must be between 1 and 256");
  if (c.prefetch_batches < 1 || c.prefetch_batches > 64) {
    return Status::InvalidArgument("prefetch_batches must be between 1 and 64");
  }
  if (c.cache_block_bytes < 4096 || c.cache_block_bytes > (64ull << 20) || c.cache_block_bytes % 4096 != 0) {
    return Status::InvalidArgument("cache_block_bytes must be a multiple of 4 KiB between 4 KiB and 64 MiB");
  }
  if (c.cache_bytes != 0 && c.cache_bytes < c.cache_block_bytes) {
    return Status::InvalidArgument("cache_bytes must be 0 (no cache) or at least cache_block_bytes");
  }
  if (c.memory_budget != 0 && c.memory_budget < kMinMemoryBudget) {
    return Status::InvalidArgument("memory_budget must be 0 (none) or at least 32 MiB: stratad's code and heap "
                                   "alone take about 25 MiB");
  }
  if (c.memory_budget != 0 && c.cache_bytes == 0) {
    return Status::InvalidArgument("memory_budget needs the block cache, which keeps the server within it: "
                                   "cache_bytes must not be 0");
  }
  if (c.read_ahead_steps > 1024) return Status::InvalidArgument("read_ahead_steps must be at most 1024");
  if (c.max_part_bytes < 4096 || c.max_part_bytes > (1ull << 30)) {
    return Status::InvalidArgument("max_part_bytes must be between 4 KiB and 1 GiB");
  }
  if (c.max_message_bytes < (1ull << 20) || c.max_message_bytes > (2ull << 30) - 1) {
    return Status::InvalidArgument("max_message_bytes must be between 1 MiB and 2 GiB");
  }
  if (c.max_streams < 1) return Status::InvalidArgument("max_streams must be at least 1");
  const ClusterConfig& k = c.cluster;
  if (k.membership != "static" && k.membership != "etcd") {
    return Status::InvalidArgument("cluster.membership '" + k.membership + "': use static or etcd");
  }
  if (k.membership == "etcd" && k.etcd_endpoints.empty()) {
    return Status::InvalidArgument("cluster.membership is etcd but no etcd_endpoints are given");
  }
  for (const auto& e : k.etcd_endpoints) {
    STRATA_RETURN_IF_ERROR(ParseHostPort(e, &host, &port).WithContext("cluster.etcd_endpoints"));
  }
  if (!k.advertise.empty()) STRATA_RETURN_IF_ERROR(ParseHostPort(k.advertise, &host, &port).WithContext("advertise"));
  std::set<std::string> ids;
  bool self_listed = k.nodes.empty();
  for (const auto& n : k.nodes) {
    if (!ids.insert(n.id).second) return Status::InvalidArgument("cluster.nodes lists '" + n.id + "' twice");
    STRATA_RETURN_IF_ERROR(ParseHostPort(n.address, &host, &port).WithContext("cluster.nodes " + n.id));
    self_listed = self_listed || n.id == c.node_id;
  }
  if (!self_listed) {
    return Status::InvalidArgument("cluster.nodes does not list this node ('" + c.node_id + "')");
  }
  if (k.lease_ttl_s < 1) return Status::InvalidArgument("cluster.lease_ttl_s must be at least 1");
  if (k.heartbeat_interval_ms < 10) return Status::InvalidArgument("cluster.heartbeat_interval_ms must be >= 10");
  if (k.failure_timeout_ms < k.heartbeat_interval_ms) {
    return Status::InvalidArgument("cluster.failure_timeout_ms must be at least heartbeat_interval_ms");
  }
  if (k.grace_period_s < 1) return Status::InvalidArgument("cluster.grace_period_s must be at least 1");
  if (k.repair_bytes_per_sec < (1u << 20)) return Status::InvalidArgument("cluster.repair_bytes_per_sec must be >= 1 MiB");
  if (k.repair_interval_ms < 10) return Status::InvalidArgument("cluster.repair_interval_ms must be >= 10");
  return Status::OK();
}

Result<NodeConfig> LoadNodeConfig(const NodeFlags& flags) {
  NodeConfig c;
  if (!flags.config_file.empty()) STRATA_RETURN_IF_ERROR(ApplyFile(flags.config_file, &c));
  if (flags.listen) c.listen = *flags.listen;
  if (flags.data_dir) c.data_dir = *flags.data_dir;
  if (flags.metrics_listen) c.metrics_listen = *flags.metrics_listen;
  if (flags.node_id) c.node_id = *flags.node_id;
  if (flags.log_level) c.log_level = *flags.log_level;
  if (flags.cache_bytes) {
    auto parsed = ParseByteSize(*flags.cache_bytes);
    if (!parsed.ok()) return Status::InvalidArgument("--cache-bytes: " + parsed.status().message());
    c.cache_bytes = parsed.value();
  }
  if (flags.memory_budget) {
    auto parsed = ParseByteSize(*flags.memory_budget);
    if (!parsed.ok()) return Status::InvalidArgument("--memory-budget: " + parsed.status().message());
    c.memory_budget = parsed.value();
  }
  if (flags.advertise) c.cluster.advertise = *flags.advertise;
  if (flags.cluster_name) c.cluster.name = *flags.cluster_name;
  if (flags.peers) {
    c.cluster.membership = "static";
    STRATA_RETURN_IF_ERROR(ParsePeers(*flags.peers, &c.cluster.nodes));
  }
  if (flags.etcd_endpoints) {
    c.cluster.membership = "etcd";
    c.cluster.etcd_endpoints = SplitList(*flags.etcd_endpoints);
  }
  STRATA_RETURN_IF_ERROR(ValidateNodeConfig(c));
  return c;
}

}  // namespace strata
