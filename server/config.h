// stratad's configuration: one YAML file per node, every field overridable by
// a command-line flag. Bad configuration is a clear error at start, never a
// crash later.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace strata {

struct NodeConfig {
  std::string node_id = "node-1";            // names this node in logs, metrics and the cluster map
  std::string listen = "127.0.0.1:7400";     // gRPC address (port 0 picks a free port)
  std::string metrics_listen = "127.0.0.1:9400";  // Prometheus /metrics; empty disables
  std::string data_dir = "./strata-data";    // shard files and the RocksDB metadata
  std::string log_level = "info";            // trace, debug, info, warn, error
  uint64_t shard_target_bytes = 64ull << 20; // cut a shard when it reaches this size
  uint32_t io_threads = 4;                   // threads that build batches and write shards
  uint32_t prefetch_batches = 2;             // batches built ahead of the network, per stream
  uint64_t max_part_bytes = 16ull << 20;     // a batch larger than this is sent in parts
  uint64_t max_message_bytes = 256ull << 20; // largest gRPC message accepted (ingest)
  uint32_t drain_timeout_ms = 5000;          // SIGTERM: time streams get to finish
  uint32_t max_streams = 1024;               // concurrent batch streams
};

// The flags of stratad; a set flag overrides the config file.
struct NodeFlags {
  std::string config_file;
  std::optional<std::string> listen;
  std::optional<std::string> data_dir;
  std::optional<std::string> metrics_listen;
  std::optional<std::string> node_id;
  std::optional<std::string> log_level;
};

// Loads flags.config_file (if set) over the defaults, applies the flags and
// validates the result. Unknown keys in the file are errors, so a typo is not
// silently ignored. InvalidArgument or NotFound with the file and key named.
Result<NodeConfig> LoadNodeConfig(const NodeFlags& flags);

// Checks every field (addresses parse, sizes in range, level known).
Status ValidateNodeConfig(const NodeConfig& config);

// Splits "host:port" ("[::1]:7400" too). InvalidArgument if malformed.
Status ParseHostPort(const std::string& address, std::string* host, int* port);

}  // namespace strata
