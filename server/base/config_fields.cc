// The table of stratad's settings: each row is one field of NodeConfig, its
// YAML key, its help and its validation. The flag, the YAML reader and the
// README's reference all come from here (server/base/config.cc).
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <set>

#include "common/input_limits.h"
#include "common/units.h"
#include "server/base/config.h"

namespace strata {

namespace {

// The smallest memory_budget accepted: stratad's code and heap take about
// 25 MiB before it serves anything.
constexpr uint64_t kMinMemoryBudget = 32ull << 20;

Status Invalid(std::string message) { return Status::InvalidArgument(std::move(message)); }

Status CheckAddress(const std::string& address, const std::string& key) {
  std::string host;
  int port = 0;
  return ParseHostPort(address, &host, &port).WithContext(key);
}

// A second address of the node's must not be `listen` itself (port 0 aside:
// each picks its own free port): the second bind would fail as if another
// process held the port.
Status CheckNotListen(const NodeConfig& c, const std::string& address, const std::string& key) {
  std::string host, listen_host;
  int port = 0, listen_port = 0;
  if (!ParseHostPort(address, &host, &port).ok() || !ParseHostPort(c.listen, &listen_host, &listen_port).ok()) {
    return Status::OK();  // CheckAddress says what is wrong
  }
  if (port == 0 || port != listen_port || host != listen_host) return Status::OK();
  return Invalid(key + " " + address + " is `listen` itself: give it a port of its own" +
                 (key == "peer_listen" ? std::string(", or leave it out to serve peers on the data port") : ""));
}

Status CheckNodeId(const NodeConfig& c) {
  if (c.node_id.empty()) return Invalid("node_id must not be empty");
  return CheckClusterName("node_id", c.node_id, InputLimits::kMaxNodeIdBytes);
}

Status CheckLogLevel(const NodeConfig& c) {
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (kLevels.count(c.log_level)) return Status::OK();
  return Invalid("log_level '" + c.log_level + "': use trace, debug, info, warn or error");
}

Status CheckCacheBlockBytes(const NodeConfig& c) {
  if (c.cache_block_bytes < 4096 || c.cache_block_bytes > (64ull << 20) || c.cache_block_bytes % 4096 != 0) {
    return Invalid("cache_block_bytes must be a multiple of 4 KiB between 4 KiB and 64 MiB");
  }
  return Status::OK();
}

Status CheckCacheBytes(const NodeConfig& c) {
  if (c.cache_bytes != 0 && c.cache_bytes < c.cache_block_bytes) {
    return Invalid("cache_bytes must be 0 (no cache) or at least cache_block_bytes");
  }
  return Status::OK();
}

Status CheckMemoryBudget(const NodeConfig& c) {
  if (c.memory_budget != 0 && c.memory_budget < kMinMemoryBudget) {
    return Invalid(
        "memory_budget must be 0 (none) or at least 32 MiB: stratad's code and heap alone take about 25 MiB");
  }
  if (c.memory_budget != 0 && c.cache_bytes == 0) {
    return Invalid("memory_budget needs the block cache, which keeps the server within it: cache_bytes must not be 0");
  }
  return Status::OK();
}

Status CheckMembership(const NodeConfig& c) {
  const ClusterConfig& k = c.cluster;
  if (k.membership != "static" && k.membership != "etcd") {
    return Invalid("cluster.membership '" + k.membership + "': use static or etcd");
  }
  if (k.membership == "etcd" && k.etcd_endpoints.empty()) {
    return Invalid("cluster.membership is etcd but no cluster.etcd_endpoints are given");
  }
  return Status::OK();
}

Status CheckNodes(const NodeConfig& c) {
  std::set<std::string> ids;
  bool self_listed = c.cluster.nodes.empty();
  for (const auto& n : c.cluster.nodes) {
    if (n.id.empty()) return Invalid("cluster.nodes lists a node without an id");
    STRATA_RETURN_IF_ERROR(CheckClusterName("cluster.nodes id", n.id, InputLimits::kMaxNodeIdBytes));
    if (!ids.insert(n.id).second) return Invalid("cluster.nodes lists '" + n.id + "' twice");
    STRATA_RETURN_IF_ERROR(CheckAddress(n.address, "cluster.nodes " + n.id));
    if (!n.peer_address.empty()) STRATA_RETURN_IF_ERROR(CheckAddress(n.peer_address, "cluster.nodes " + n.id));
    STRATA_RETURN_IF_ERROR(
        CheckClusterName("cluster.nodes " + n.id + " zone", n.zone, InputLimits::kMaxDomainNameBytes));
    STRATA_RETURN_IF_ERROR(
        CheckClusterName("cluster.nodes " + n.id + " rack", n.rack, InputLimits::kMaxDomainNameBytes));
    // Under static membership every node places shards from this list, its
    // own entry included (the others know this node's domains from nowhere
    // else): it must name the zone and rack this node has.
    if (n.id == c.node_id && c.cluster.membership != "etcd" &&
        ((!c.cluster.zone.empty() && n.zone != c.cluster.zone) ||
         (!c.cluster.rack.empty() && n.rack != c.cluster.rack))) {
      return Invalid("cluster.nodes gives this node ('" + c.node_id + "') zone '" + n.zone + "' and rack '" + n.rack +
                     "', but cluster.zone and cluster.rack say '" + c.cluster.zone + "' and '" + c.cluster.rack +
                     "': every node places shards from that list, so give this node's zone there too (" + c.node_id +
                     "=HOST:PORT@ZONE[/RACK])");
    }
    self_listed = self_listed || n.id == c.node_id;
  }
  if (!self_listed) return Invalid("cluster.nodes does not list this node ('" + c.node_id + "')");
  return Status::OK();
}

Status CheckEtcdEndpoints(const NodeConfig& c) {
  for (const auto& e : c.cluster.etcd_endpoints) STRATA_RETURN_IF_ERROR(CheckAddress(e, "cluster.etcd_endpoints"));
  return Status::OK();
}

Status CheckDiskWatermarks(const NodeConfig& c) {
  auto low = ParseByteThreshold(c.disk_low_watermark);
  if (!low.ok()) return Invalid("disk_low_watermark: " + low.status().message());
  auto high = ParseByteThreshold(c.disk_high_watermark);
  if (!high.ok()) return Invalid("disk_high_watermark: " + high.status().message());
  // Comparable only in the same unit; mixed, the node uses the larger of the two as its high mark.
  if ((low->percent != 0) == (high->percent != 0) && (high->percent < low->percent || high->bytes < low->bytes)) {
    return Invalid("disk_high_watermark must be at least disk_low_watermark");
  }
  return Status::OK();
}

Status CheckFailureTimeout(const NodeConfig& c) {
  if (c.cluster.failure_timeout_ms < c.cluster.heartbeat_interval_ms) {
    return Invalid("cluster.failure_timeout_ms must be at least cluster.heartbeat_interval_ms");
  }
  return Status::OK();
}

// A file named by a setting: empty, or a file this process can read. (Which
// go together, and whether they parse, the server checks: tls_credentials.h.)
Status CheckReadableFile(const std::string& path, const std::string& key) {
  if (path.empty()) return Status::OK();
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st) || std::filesystem::is_directory(st)) {
    return Invalid(key + ": " + path + " is not a file");
  }
  if (::access(path.c_str(), R_OK) != 0) return Invalid(key + ": " + path + " cannot be read");
  return Status::OK();
}

}  // namespace

// A field's accessor: where it lives in a NodeConfig.
#define STRATA_REF(member) [](NodeConfig& c) -> ConfigField::Ref { return &c.member; }

const std::vector<ConfigField>& ConfigFields() {
  static const std::vector<ConfigField> kFields = {
      {"node_id", nullptr, nullptr, "name in logs, metrics and the cluster", STRATA_REF(node_id), CheckNodeId, nullptr},
      {"listen", nullptr, nullptr, "gRPC address; port 0 picks a free port", STRATA_REF(listen),
       [](const NodeConfig& c) { return CheckAddress(c.listen, "listen"); }, nullptr},
      {"metrics_listen", nullptr, nullptr, "Prometheus `/metrics`; empty disables", STRATA_REF(metrics_listen),
       [](const NodeConfig& c) {
         if (c.metrics_listen.empty()) return Status::OK();
         STRATA_RETURN_IF_ERROR(CheckNotListen(c, c.metrics_listen, "metrics_listen"));
         return CheckAddress(c.metrics_listen, "metrics_listen");
       },
       nullptr},
      {"peer_listen", nullptr, "`listen`",
       "the peer service (node to node) on its own address, so it can be firewalled apart; the data port then "
       "does not serve it",
       STRATA_REF(peer_listen),
       [](const NodeConfig& c) {
         if (c.peer_listen.empty()) return Status::OK();
         STRATA_RETURN_IF_ERROR(CheckNotListen(c, c.peer_listen, "peer_listen"));
         return CheckAddress(c.peer_listen, "peer_listen");
       },
       nullptr},
      {"data_dir", nullptr, nullptr, "shard files (`shards/`) and RocksDB metadata (`meta/`)", STRATA_REF(data_dir),
       [](const NodeConfig& c) { return c.data_dir.empty() ? Invalid("data_dir must not be empty") : Status::OK(); },
       nullptr},
      {"log_level", nullptr, nullptr, "trace, debug, info, warn, error", STRATA_REF(log_level), CheckLogLevel, nullptr},
      {"shard_target_bytes", nullptr, nullptr, "shard size at ingest (a client may ask for another)",
       STRATA_REF(shard_target_bytes),
       [](const NodeConfig& c) {
         return c.shard_target_bytes < 4096 || c.shard_target_bytes > (64ull << 30)
                    ? Invalid("shard_target_bytes must be between 4 KiB and 64 GiB")
                    : Status::OK();
       },
       nullptr},
      {"io_threads", nullptr, nullptr, "threads that build batches, and as many that write shards",
       STRATA_REF(io_threads),
       [](const NodeConfig& c) {
         return c.io_threads < 1 || c.io_threads > 256 ? Invalid("io_threads must be between 1 and 256") : Status::OK();
       },
       nullptr},
      {"prefetch_batches", nullptr, nullptr, "batches built ahead of the network per stream",
       STRATA_REF(prefetch_batches),
       [](const NodeConfig& c) {
         return c.prefetch_batches < 1 || c.prefetch_batches > 64 ? Invalid("prefetch_batches must be between 1 and 64")
                                                                  : Status::OK();
       },
       nullptr},
      {"cache_bytes", nullptr, "a quarter of RAM",
       "memory for shard blocks that streams read (the plan-aware block cache); `0` leaves it to the kernel",
       STRATA_REF(cache_bytes), CheckCacheBytes, nullptr},
      {"memory_budget", nullptr, "none",
       "the server's whole RSS (code, heap, mapped shards): the block cache holds what the rest leaves, so the "
       "server stays within it; at least `32MiB`; needs `cache_bytes` not `0`",
       STRATA_REF(memory_budget), CheckMemoryBudget, nullptr},
      {"cache_block_bytes", nullptr, nullptr,
       "the cache's unit, an aligned range of a shard file (a multiple of 4 KiB; 2 MiB holds whole page-cache "
       "folios)",
       STRATA_REF(cache_block_bytes), CheckCacheBlockBytes, nullptr},
      {"decompressed_cache_bytes", nullptr, nullptr,
       "compressed datasets' blocks kept decompressed for later reads (`0`: none)",
       STRATA_REF(decompressed_cache_bytes),
       [](const NodeConfig& c) {
         return c.decompressed_cache_bytes > (1ull << 40) ? Invalid("decompressed_cache_bytes must be at most 1TiB")
                                                          : Status::OK();
       },
       nullptr},
      {"read_ahead_steps", nullptr, nullptr, "steps each stream plans ahead and whose blocks it reads in",
       STRATA_REF(read_ahead_steps),
       [](const NodeConfig& c) {
         return c.read_ahead_steps > 1024 ? Invalid("read_ahead_steps must be at most 1024") : Status::OK();
       },
       nullptr},
      {"max_part_bytes", nullptr, nullptr, "larger batches are sent as several messages", STRATA_REF(max_part_bytes),
       [](const NodeConfig& c) {
         return c.max_part_bytes < 4096 || c.max_part_bytes > (1ull << 30)
                    ? Invalid("max_part_bytes must be between 4 KiB and 1 GiB")
                    : Status::OK();
       },
       nullptr},
      {"max_message_bytes", nullptr, nullptr, "largest gRPC message accepted", STRATA_REF(max_message_bytes),
       [](const NodeConfig& c) {
         // A copy between nodes comes in 1 MiB chunks (file_transfer.h), each
         // with its file's name: a message a little over 1 MiB.
         return c.max_message_bytes < (2ull << 20) || c.max_message_bytes > (2ull << 30) - 1
                    ? Invalid("max_message_bytes must be between 2 MiB and 2 GiB (nodes copy shards in 1 MiB chunks)")
                    : Status::OK();
       },
       nullptr},
      {"drain_timeout_ms", nullptr, nullptr, "time open streams and ingests get on SIGTERM",
       STRATA_REF(drain_timeout_ms), nullptr, nullptr},
      {"max_streams", nullptr, nullptr, "concurrent batch streams", STRATA_REF(max_streams),
       [](const NodeConfig& c) { return c.max_streams < 1 ? Invalid("max_streams must be at least 1") : Status::OK(); },
       nullptr},
      {"max_ingests", nullptr, nullptr, "concurrent ingest calls; more get `RESOURCE_EXHAUSTED`",
       STRATA_REF(max_ingests),
       [](const NodeConfig& c) { return c.max_ingests < 1 ? Invalid("max_ingests must be at least 1") : Status::OK(); },
       nullptr},
      {"ingest_idle_timeout_s", nullptr, nullptr,
       "an ingest whose client sends nothing this long is aborted (`0`: never)", STRATA_REF(ingest_idle_timeout_s),
       nullptr, nullptr},
      {"metrics_max_datasets", nullptr, nullptr,
       "datasets that get their own series in `strata_served_*_by_dataset_total` (the first names served); later "
       "ones are counted as `dataset=\"other\"`",
       STRATA_REF(metrics_max_datasets),
       [](const NodeConfig& c) {
         return c.metrics_max_datasets > 10000 ? Invalid("metrics_max_datasets must be at most 10000") : Status::OK();
       },
       nullptr},
      {"disk_low_watermark", nullptr, nullptr,
       "free space on `data_dir`'s file system (`5%` or a size, e.g. `1GiB`) below which ingests and incoming "
       "replicas get `RESOURCE_EXHAUSTED`",
       STRATA_REF(disk_low_watermark), CheckDiskWatermarks, nullptr},
      {"disk_high_watermark", nullptr, nullptr,
       "free space below which the node gets no new replicas (placement and repair skip it); at least the low "
       "watermark",
       STRATA_REF(disk_high_watermark), CheckDiskWatermarks, nullptr},
      {"cluster.membership", nullptr, nullptr,
       "`static` (the `cluster.nodes` list) or `etcd`; a flag for either list sets it too",
       STRATA_REF(cluster.membership), CheckMembership, nullptr},
      {"cluster.nodes", "--peers", "this node alone",
       "static membership: every node, this one included (`ID=HOST:PORT[/PEER_HOST:PEER_PORT][@ZONE[/RACK]],...` "
       "as a flag; YAML `{id, address, peer_address, zone, rack}`)",
       STRATA_REF(cluster.nodes), CheckNodes, [](NodeConfig& c) { c.cluster.membership = "static"; }},
      {"cluster.etcd_endpoints", "--etcd", nullptr,
       "etcd membership: the etcd cluster (`HOST:PORT,...` as a flag; `https://HOST:PORT`: TLS with this node's "
       "certificates)",
       STRATA_REF(cluster.etcd_endpoints), CheckEtcdEndpoints, [](NodeConfig& c) { c.cluster.membership = "etcd"; }},
      {"cluster.name", "--cluster", nullptr, "etcd key prefix `/strata/NAME/`", STRATA_REF(cluster.name), nullptr,
       nullptr},
      {"cluster.advertise", "--advertise", "the bound `listen`", "address other nodes and clients use for this node",
       STRATA_REF(cluster.advertise),
       [](const NodeConfig& c) {
         return c.cluster.advertise.empty() ? Status::OK() : CheckAddress(c.cluster.advertise, "cluster.advertise");
       },
       nullptr},
      {"cluster.zone", "--zone", "none",
       "this node's failure domain (static membership: `@ZONE` in the list too): a shard's R copies go to distinct "
       "zones when there are R",
       STRATA_REF(cluster.zone),
       [](const NodeConfig& c) {
         return CheckClusterName("cluster.zone", c.cluster.zone, InputLimits::kMaxDomainNameBytes);
       },
       nullptr},
      {"cluster.rack", "--rack", "none", "within the zone: copies sharing a zone go to distinct racks",
       STRATA_REF(cluster.rack),
       [](const NodeConfig& c) {
         return CheckClusterName("cluster.rack", c.cluster.rack, InputLimits::kMaxDomainNameBytes);
       },
       nullptr},
      {"cluster.lease_ttl_s", nullptr, nullptr, "etcd: a registration lives this long without keep-alives",
       STRATA_REF(cluster.lease_ttl_s),
       [](const NodeConfig& c) {
         return c.cluster.lease_ttl_s < 1 ? Invalid("cluster.lease_ttl_s must be at least 1") : Status::OK();
       },
       nullptr},
      {"cluster.heartbeat_interval_ms", nullptr, nullptr, "static: ping period",
       STRATA_REF(cluster.heartbeat_interval_ms),
       [](const NodeConfig& c) {
         return c.cluster.heartbeat_interval_ms < 10 ? Invalid("cluster.heartbeat_interval_ms must be >= 10")
                                                     : Status::OK();
       },
       nullptr},
      {"cluster.failure_timeout_ms", nullptr, nullptr, "static: unanswered pings this long mark a node down",
       STRATA_REF(cluster.failure_timeout_ms), CheckFailureTimeout, nullptr},
      {"cluster.grace_period_s", nullptr, nullptr,
       "a node down this long leaves the map and its shards are re-replicated", STRATA_REF(cluster.grace_period_s),
       [](const NodeConfig& c) {
         return c.cluster.grace_period_s < 1 ? Invalid("cluster.grace_period_s must be at least 1") : Status::OK();
       },
       nullptr},
      {"cluster.repair_bytes_per_sec", nullptr, nullptr, "repair and rebalance copy rate (per node)",
       STRATA_REF(cluster.repair_bytes_per_sec),
       [](const NodeConfig& c) {
         return c.cluster.repair_bytes_per_sec < (1u << 20) ? Invalid("cluster.repair_bytes_per_sec must be >= 1 MiB")
                                                            : Status::OK();
       },
       nullptr},
      {"cluster.repair_interval_ms", nullptr, nullptr, "how often a node checks what placement gives it",
       STRATA_REF(cluster.repair_interval_ms),
       [](const NodeConfig& c) {
         return c.cluster.repair_interval_ms < 10 ? Invalid("cluster.repair_interval_ms must be >= 10") : Status::OK();
       },
       nullptr},
      {"cluster.scrub_bytes_per_sec", nullptr, nullptr, "background checksum verification rate; `0` disables",
       STRATA_REF(cluster.scrub_bytes_per_sec), nullptr, nullptr},
      {"tls.cert", nullptr, "none",
       "serve TLS with this PEM certificate chain (also the node's client certificate to other nodes and etcd)",
       STRATA_REF(tls_cert), [](const NodeConfig& c) { return CheckReadableFile(c.tls_cert, "tls.cert"); }, nullptr},
      {"tls.key", nullptr, "none", "the PEM private key of `tls.cert`", STRATA_REF(tls_key),
       [](const NodeConfig& c) { return CheckReadableFile(c.tls_key, "tls.key"); }, nullptr},
      {"tls.client_ca", nullptr, "none",
       "require client certificates signed by this CA (mutual TLS); the peer service then takes only a certificate "
       "whose CN or a SAN is a member's node id",
       STRATA_REF(tls_client_ca),
       [](const NodeConfig& c) { return CheckReadableFile(c.tls_client_ca, "tls.client_ca"); }, nullptr},
      {"auth_tokens", nullptr, "none",
       "bearer tokens with roles, a `<reader|writer|admin> <token>` line each (needs TLS); re-read on SIGHUP",
       STRATA_REF(auth_tokens), [](const NodeConfig& c) { return CheckReadableFile(c.auth_tokens, "auth_tokens"); },
       nullptr},
  };
  return kFields;
}

#undef STRATA_REF

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

}  // namespace strata
