// stratad's configuration: one YAML file per node, every field overridable by
// a command-line flag. Bad configuration is a clear error at start, never a
// crash later.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"

namespace CLI {
class App;
}  // namespace CLI

namespace strata {

// How this node finds the others, and how the cluster keeps its data whole.
struct ClusterConfig {
  struct Peer {
    std::string id;
    std::string address;
    std::string peer_address;  // its PeerService's own address (--peer-listen); empty: `address`
    std::string zone;          // its failure domains (as its own cluster.zone, cluster.rack); empty: none
    std::string rack;
  };
  std::string name = "strata";                   // etcd key prefix /strata/<name>/
  std::string membership = "static";             // "static" (the node list below) or "etcd"
  std::vector<Peer> nodes;                       // static: every node, this one included; empty: this node alone
  std::vector<std::string> etcd_endpoints;       // etcd: HOST:PORT of the etcd cluster
  uint32_t lease_ttl_s = 5;                      // etcd: a node's registration lives this long without keep-alives
  std::string advertise;                         // address others use for this node; default: the bound listen address
  std::string zone;                              // this node's failure domain: copies of a shard go to distinct zones
  std::string rack;                              // within the zone: copies go to distinct racks where zones run out
  uint32_t heartbeat_interval_ms = 1000;         // static: ping period
  uint32_t failure_timeout_ms = 3000;            // static: unanswered pings this long mark a node down
  uint32_t grace_period_s = 300;                 // a node down this long leaves the map; its shards are re-replicated
  uint64_t repair_bytes_per_sec = 256ull << 20;  // repair and rebalance copy rate (per node)
  uint32_t repair_interval_ms = 2000;            // how often a node checks what placement gives it
  uint64_t scrub_bytes_per_sec = 32ull << 20;    // background checksum verification; 0 disables
};

// The block cache's default budget: a quarter of the machine's memory (1 GiB
// where the size cannot be read).
uint64_t DefaultCacheBytes();

struct NodeConfig {
  std::string node_id = "node-1";                 // names this node in logs, metrics and the cluster map
  std::string listen = "127.0.0.1:7400";          // gRPC address (port 0 picks a free port)
  std::string metrics_listen = "127.0.0.1:9400";  // Prometheus /metrics; empty disables
  std::string peer_listen;                        // PeerService on its own address; empty: on `listen`
  std::string data_dir = "./strata-data";         // shard files and the RocksDB metadata
  std::string log_level = "info";                 // trace, debug, info, warn, error
  uint64_t shard_target_bytes = 64ull << 20;      // cut a shard when it reaches this size
  uint32_t io_threads = 4;                        // lanes that build batches; as many threads write shards
  uint32_t prefetch_batches = 2;                  // batches built ahead of the network, per stream
  uint64_t cache_bytes = DefaultCacheBytes();     // shard bytes kept in memory by the block cache; 0 disables it
  uint64_t cache_block_bytes = 2ull << 20;        // the cache's unit: an aligned range of a shard file
  uint64_t decompressed_cache_bytes =
      256ull << 20;  // compressed datasets' blocks kept decompressed; 0: none (see DecompressedCacheBytes)
  // The server's whole resident memory (VmRSS: code, heap, mapped shards),
  // kept by giving the block cache only what the rest leaves (see
  // server/storage/block_cache.h). 0: no such budget; cache_bytes alone bounds the cache.
  uint64_t memory_budget = 0;
  uint32_t read_ahead_steps = 4;              // steps each stream plans and reads in ahead (with the cache)
  uint64_t max_part_bytes = 1ull << 20;       // a batch larger than this is sent in parts (bench/README.md)
  uint64_t max_message_bytes = 256ull << 20;  // largest gRPC message accepted (ingest)
  uint32_t drain_timeout_ms = 5000;           // SIGTERM: time streams get to finish
  uint32_t max_streams = 1024;                // concurrent batch streams
  uint32_t max_ingests = 64;                  // concurrent ingest calls (a writer of several counts as one)
  uint32_t ingest_idle_timeout_s = 600;       // an ingest whose client sends nothing this long is aborted; 0: never
  // Free space on data_dir's file system ("5%" of it, or a size such as
  // "1GiB"): below the low watermark the node refuses ingests and incoming
  // replicas; below the high one it takes no new replicas (placement and
  // repair skip it) but still accepts writes (server/storage/disk_space.h).
  // Datasets that get their own series in the served-by-dataset counters; later ones count as "other".
  uint32_t metrics_max_datasets = 64;
  std::string disk_low_watermark = "5%";
  std::string disk_high_watermark = "10%";
  // Test only, set by stratad's hidden --test-disk-free-bytes (not a config
  // key): the node reports this many bytes free instead of what statvfs says.
  // 0: the real figure.
  uint64_t test_disk_free_bytes = 0;
  // TLS and bearer tokens (server/base/security_config.h, docs/security.md):
  // PEM files and the token file; empty: none. `--insecure`, the opt-out from
  // them, is a flag only, never a file's setting.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string auth_tokens;
  ClusterConfig cluster;
};

// The flags of stratad: the config file and, per config key, the text of the
// flag that set it. A set flag overrides the config file.
struct NodeFlags {
  std::string config_file;
  std::map<std::string, std::string> values;  // "cluster.nodes" -> "a=h:1,b=h:2"
};

// One setting of stratad. The table of them (ConfigFields) is the one place a
// setting is named: it drives the YAML keys, the flags, validation and the
// reference in the README (ConfigReferenceMarkdown).
struct ConfigField {
  // Where the value lives in a NodeConfig; the alternative is the field's type:
  // a string, a count (uint32, decimal), a byte size (uint64, "64MiB"), a list
  // of strings (YAML sequence; a flag takes A,B,C) or the static node list
  // (YAML sequence of {id, address}; a flag takes ID=HOST:PORT,...).
  using Ref =
      std::variant<std::string*, uint32_t*, uint64_t*, std::vector<std::string>*, std::vector<ClusterConfig::Peer>*>;

  const char* key;           // YAML key; "cluster.x" is x inside the cluster: mapping
  const char* alias;         // an older, shorter flag that sets it too; nullptr: none
  const char* default_text;  // the default as the reference states it; nullptr: the value in NodeConfig{}
  const char* help;          // one line, Markdown allowed; the flag's --help and the README's "meaning"
  Ref (*ref)(NodeConfig&);
  // Checks the value, the rest of the config at hand. nullptr: any value that parses
  // is fine. Its error names the key (ValidateNodeConfig adds it if not).
  Status (*validate)(const NodeConfig&);
  // Applied when a flag (not the file) sets the field, before any other flag.
  void (*on_flag)(NodeConfig&);
};

// Every setting, in the order the reference lists them.
const std::vector<ConfigField>& ConfigFields();

// The flag of a key: "--" and the key with '.' and '_' as '-'
// (cluster.repair_bytes_per_sec -> --cluster-repair-bytes-per-sec).
std::string FlagName(const std::string& key);

// The table in README.md's "`stratad` flags and config" section, one line per
// field after a header line; `stratad --print-config-reference` prints it.
std::string ConfigReferenceMarkdown();

// Adds a flag for every field (FlagName(key) and its alias) to `app`, each
// storing its text in flags->values[key]. `flags`
// must outlive app.parse().
void AddConfigFlags(CLI::App& app, NodeFlags* flags);

// Loads flags.config_file (if set) over the defaults, applies the flags and
// validates the result. Unknown keys in the file are errors, so a typo is not
// silently ignored. InvalidArgument or NotFound with the file and key named.
Result<NodeConfig> LoadNodeConfig(const NodeFlags& flags);

// Checks every field (addresses parse, sizes in range, level known) with the
// table's validators, in table order; the error names the key.
Status ValidateNodeConfig(const NodeConfig& config);

// The decompressed-block cache's capacity: decompressed_cache_bytes, but with
// a memory_budget at most a quarter of it. Its blocks are heap, which the
// block cache makes room for as the rest of the process; nothing else bounds
// them, so a default 256 MiB cache could hold more than a small budget.
uint64_t DecompressedCacheBytes(const NodeConfig& config);

// Splits "host:port" ("[::1]:7400" too). InvalidArgument if malformed.
Status ParseHostPort(const std::string& address, std::string* host, int* port);

}  // namespace strata
