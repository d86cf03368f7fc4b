// A cluster as a client sees it: the map of its nodes, one node's counters,
// and the files a node holds.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

enum class NodeState : int {
  kUnspecified = 0,
  kUp = 1,    // serving
  kDown = 2,  // unreachable; still a placement member until its grace period ends
};

struct NodeInfo {
  std::string id;
  std::string address;  // gRPC HOST:PORT other nodes and clients use
  std::string metrics_address;
  NodeState state = NodeState::kUnspecified;
  int64_t down_since_unix_ms = 0;
  std::string peer_address;  // the node's peer service when it has its own (--peer-listen); empty: `address`
  std::string zone;          // failure domains (stratad --zone, --rack); empty: none
  std::string rack;
  // The node's data directory's file system, as membership last heard
  // (0 when not known); disk_full: below its high watermark, so it takes no
  // new copies.
  uint64_t disk_free_bytes = 0;
  uint64_t disk_total_bytes = 0;
  bool disk_full = false;
};

// Every node listed is a placement member (shards are placed over all of
// them); only kUp nodes serve.
struct ClusterMap {
  uint64_t epoch = 0;  // etcd: the revision of the map key; static: a local counter
  std::vector<NodeInfo> nodes;
  std::string membership;  // "static" or "etcd"
  std::string cluster;
  bool ingest_accept_signal = false;  // the node says when it has taken an ingest (newer servers)
  bool serves_work = false;           // the node serves work a client plans (newer servers)
};

// Repair and rebalance on one node: the files placement gives it that it lacks.
struct RepairProgress {
  uint64_t files_missing = 0;  // still to copy here
  uint64_t files_copied = 0;   // copied since start
  uint64_t bytes_copied = 0;
  uint64_t files_quarantined = 0;          // corrupt copies set aside
  uint64_t files_released = 0;             // extra copies deleted once their holders had them
  uint64_t replication_backlog_bytes = 0;  // async ingest copies still to send
  uint64_t bytes_scrubbed = 0;
  uint64_t corruptions_found = 0;
};

// One node's identity and counters (Client::GetStatus, GetNodeStatus).
struct NodeStatus {
  std::string node_id;
  std::string build_version;
  std::string listen;
  std::string metrics_listen;
  std::string data_dir;
  int64_t started_unix_ms = 0;
  uint32_t datasets = 0;
  uint32_t active_streams = 0;
  uint32_t active_ingests = 0;
  uint64_t bytes_served = 0;
  uint64_t samples_served = 0;
  uint64_t batches_served = 0;
  uint64_t samples_ingested = 0;
  uint64_t checksum_failures = 0;
  uint64_t disk_bytes = 0;
  RepairProgress repair;
  uint64_t map_epoch = 0;
  // The data directory's file system.
  uint64_t disk_free_bytes = 0;
  uint64_t disk_total_bytes = 0;
  // "ok", "full" (below the high watermark: no new replicas) or "refusing
  // writes" (below the low watermark: ingests and replicas are refused).
  std::string disk_state;
  // Shards as this node saw them after its last repair round.
  uint64_t shards_under_replicated = 0;
  uint64_t shards_missing = 0;
  // The nodes this node last heard are below their high watermark (placement skips them).
  std::vector<std::string> full_nodes;
};

// One file of a dataset version that a node holds (Client::ListNodeFiles).
struct FileRef {
  enum class Kind : int {
    kShard = 0,
    kStrataIndex = 1,  // the version's stratum member index; every node holds one
    kParity = 2,       // an erasure-coded version's parity file; seq = stripe * M + parity index
  };
  std::string dataset;
  uint64_t version = 0;
  Kind kind = Kind::kShard;
  uint32_t seq = 0;  // kShard and kParity
};

}  // namespace strata
