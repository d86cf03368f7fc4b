// N real stratad processes on loopback forming one cluster, for the cluster
// integration tests: start, kill -9, SIGSTOP/SIGCONT, restart, and wait for
// the cluster to reach a state.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/placement.h"
#include "common/sanitizers.h"
#include "strata/client.h"
#include "tests/support/etcd_process.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace strata::testing {

inline const NodeInfo* FindNodeForTest(const ClusterMap& map, const std::string& id) {
  for (const auto& n : map.nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

// Polls `done` until it holds or `timeout` passes.
inline bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// How many times slower than a plain build the nodes of this test binary's
// build run. ThreadSanitizer slows stratad 5-15x on two cores, and a node then
// misses pings for longer than a plain build's 800 ms failure timeout while it
// is alive: its peers mark it down, an ingest finds too few nodes for its
// replication, a stream fails over from a node that was only slow. The
// defaults below (failure timeout, heartbeat, a client's stall timeout) scale
// by this; a test that sets its own timings keeps them.
#ifdef STRATA_TSAN
inline constexpr int kSlowBuild = 3;
#else
inline constexpr int kSlowBuild = 1;
#endif

class LocalCluster {
 public:
  struct Options {
    int nodes = 3;
    std::string etcd;  // endpoint: etcd membership instead of the static list
    uint32_t grace_period_s = 300;
    uint32_t repair_interval_ms = 200;
    // Unanswered pings this long mark a node down. Short, so tests that kill
    // nodes see it soon; a test that counts per-node work raises it, since on a
    // loaded machine a live node can miss pings that long and the client's
    // calls would then be opened again.
    uint32_t failure_timeout_ms = 800 * kSlowBuild;
    std::vector<std::string> extra_args;
    std::map<int, std::vector<std::string>> node_args;  // more flags for node i only
    int start = -1;                                     // nodes started at once (the others later with Start); -1: all
    bool peer_ports = false;         // each node serves the peer service on its own port (--peer-listen)
    std::vector<std::string> zones;  // node i's zone in the --peers list ("@ZONE"); absent or "": none
    // The test's own calls (Map, Connect) connect with these: TLS files and
    // token for a cluster that wants them.
    ClientOptions client;
    // The constructor returns once the nodes it started are Settled(), so
    // that an ingest right after it places copies on every node.
    bool settle = true;
  };

  explicit LocalCluster(const Options& o) : options_(o) {
    for (int i = 1; i <= o.nodes; ++i) {
      ids_.push_back("node-" + std::to_string(i));
      ports_.push_back(EtcdProcess::FreePort());
      peer_ports_.push_back(o.peer_ports ? EtcdProcess::FreePort() : 0);
    }
    procs_.resize(static_cast<size_t>(o.nodes));
    const int started = o.start < 0 ? o.nodes : o.start;
    for (int i = 0; i < started; ++i) Start(i);
    if (o.settle && started > 0) {
      EXPECT_TRUE(Settled()) << "the nodes up in each other's maps";
    }
  }

  // A test that failed shows the end of each node's log.
  ~LocalCluster() {
    if (!::testing::Test::HasFailure()) return;
    constexpr size_t kTail = 12000;
    for (size_t i = 0; i < procs_.size(); ++i) {
      if (procs_[i] == nullptr) continue;
      const std::string log = procs_[i]->Log();
      std::cerr << "---- the end of " << ids_[i] << "'s log:\n"
                << (log.size() > kTail ? log.substr(log.size() - kTail) : log) << "\n";
    }
  }
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  std::string Address(int i) const { return "127.0.0.1:" + std::to_string(ports_[static_cast<size_t>(i)]); }
  // Node i's --peer-listen address; "" without Options::peer_ports.
  std::string PeerAddress(int i) const {
    const int port = peer_ports_[static_cast<size_t>(i)];
    return port == 0 ? "" : "127.0.0.1:" + std::to_string(port);
  }
  const std::string& Id(int i) const { return ids_[static_cast<size_t>(i)]; }
  std::string DataDir(int i) const { return dir_.Join(Id(i)); }
  StratadProcess& Process(int i) { return *procs_[static_cast<size_t>(i)]; }
  int size() const { return options_.nodes; }
  std::vector<std::string> Addresses() const {
    std::vector<std::string> out;
    for (int i = 0; i < options_.nodes; ++i) out.push_back(Address(i));
    return out;
  }

  // From node i's next Start on, its --peers list gives node j `address` (a
  // relay, such as a SlowLink to node j) instead of node j's own.
  void Via(int i, int j, const std::string& address) { via_[{i, j}] = address; }

  // (Re)starts node i on its port and data directory.
  void Start(int i) {
    StratadProcess::Options o;
    o.data_dir = DataDir(i);
    o.node_id = Id(i);
    o.listen = Address(i);
    o.metrics_listen = "127.0.0.1:0";
    o.extra_args = {"--log-level", "info"};
    if (options_.peer_ports) o.extra_args.insert(o.extra_args.end(), {"--peer-listen", PeerAddress(i)});
    if (options_.etcd.empty()) {
      o.extra_args.insert(o.extra_args.end(), {"--peers", PeersOf(i)});
    } else {
      o.extra_args.insert(o.extra_args.end(), {"--etcd", options_.etcd, "--cluster", "test"});
    }
    // Timings short enough for tests, written as a config file.
    const std::string config = dir_.Join(Id(i) + ".yaml");
    // The heartbeat scales with the failure timeout (fewer pings under TSan).
    WriteFile(config, "cluster:\n  heartbeat_interval_ms: " + std::to_string(200 * kSlowBuild) +
                          "\n  failure_timeout_ms: " + std::to_string(options_.failure_timeout_ms) +
                          "\n  lease_ttl_s: 2\n"
                          "  grace_period_s: " +
                          std::to_string(options_.grace_period_s) +
                          "\n  repair_interval_ms: " + std::to_string(options_.repair_interval_ms) +
                          "\n  scrub_bytes_per_sec: 64MiB\n"
                          // Not the host's disk: a test about watermarks passes its own as flags.
                          "disk_low_watermark: 1MiB\ndisk_high_watermark: 2MiB\n");
    o.extra_args.insert(o.extra_args.end(), {"--config", config});
    o.extra_args.insert(o.extra_args.end(), options_.extra_args.begin(), options_.extra_args.end());
    if (auto it = options_.node_args.find(i); it != options_.node_args.end()) {
      o.extra_args.insert(o.extra_args.end(), it->second.begin(), it->second.end());
    }
    procs_[static_cast<size_t>(i)] = StratadProcess::Start(o);
    last_start_ = std::chrono::steady_clock::now();
    ASSERT_NE(procs_[static_cast<size_t>(i)], nullptr) << "node " << i;
  }

  // Waits until the failure timeout has passed since the last node's start
  // (until then a node takes a peer that has not answered yet for up) and
  // every running node has every running node up in its map. The constructor
  // waits for it: an ingest begun while a node was slow to answer places
  // copies on the others only, and when it answers they move (rightly), which
  // a test that damages or counts a node's copies does not expect (seen in CI
  // under load: a node holding no shards, another releasing its damaged ones).
  // (A failure timeout longer than 2 s is waited for 2 s: with it a node that
  // is slow to answer is not taken for down before the ingest either.)
  bool Settled(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::this_thread::sleep_until(last_start_ +
                                  std::chrono::milliseconds(std::min<uint32_t>(options_.failure_timeout_ms, 2000)));
    return Eventually(
        [&] {
          std::set<std::string> running;
          for (int i = 0; i < size(); ++i) {
            if (procs_[static_cast<size_t>(i)] != nullptr && Process(i).Running()) running.insert(Id(i));
          }
          for (int i = 0; i < size(); ++i) {
            if (running.count(Id(i)) == 0) continue;
            std::set<std::string> up;
            for (const auto& n : Map(i).nodes) {
              if (n.state == NodeState::kUp) up.insert(n.id);
            }
            for (const auto& id : running) {
              if (up.count(id) == 0) return false;
            }
          }
          return true;
        },
        timeout);
  }

  void Kill(int i) { Process(i).Kill(); }
  void Pause(int i) { Process(i).Signal(SIGSTOP); }
  void Resume(int i) { Process(i).Signal(SIGCONT); }

  // A client connected to node i, with a short stall timeout; with
  // plan_on_client false its streams leave the planning to the nodes.
  std::unique_ptr<Client> Connect(int i, int64_t stall_ms = 1000 * kSlowBuild, bool plan_on_client = true) {
    ClientOptions o = options_.client;
    o.stall_timeout_ms = stall_ms;
    o.plan_on_client = plan_on_client;
    auto c = Client::Connect(Address(i), o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // A client with `co` connected to node i and its stream `o`; both null, with
  // a test failure, where either fails. The stream goes before the client.
  struct OpenedStream {
    std::unique_ptr<Client> client;
    std::unique_ptr<Stream> stream;
  };
  OpenedStream Open(int i, const ClientOptions& co, const StreamOptions& o) {
    OpenedStream out;
    auto c = Client::Connect(Address(i), co);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return out;
    auto s = c.value()->OpenStream(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return out;
    out.client = std::move(c).value();
    out.stream = std::move(s).value();
    return out;
  }

  // Node i's view of the cluster.
  ClusterMap Map(int i) {
    auto c = Client::Connect(Address(i), options_.client);
    if (!c.ok()) return {};
    auto m = c.value()->GetClusterMap();
    return m.ok() ? m.value() : ClusterMap();
  }

  // How many nodes are up in node i's map.
  int UpIn(int i) {
    int up = 0;
    const ClusterMap map = Map(i);
    for (const auto& n : map.nodes) up += n.state == NodeState::kUp;
    return up;
  }

 private:
  // Node i's --peers list: every node, at the address node i reaches it by.
  std::string PeersOf(int i) const {
    std::string peers;
    for (int j = 0; j < options_.nodes; ++j) {
      auto via = via_.find({i, j});
      peers += (j ? "," : "") + Id(j) + "=" + (via != via_.end() ? via->second : Address(j));
      if (options_.peer_ports) peers += "/" + PeerAddress(j);
      if (static_cast<size_t>(j) < options_.zones.size() && !options_.zones[static_cast<size_t>(j)].empty()) {
        peers += "@" + options_.zones[static_cast<size_t>(j)];
      }
    }
    return peers;
  }

  Options options_;
  std::map<std::pair<int, int>, std::string> via_;  // see Via
  TempDir dir_;
  std::vector<std::string> ids_;
  std::vector<int> ports_;
  std::vector<int> peer_ports_;  // 0: none
  std::vector<std::unique_ptr<StratadProcess>> procs_;
  std::chrono::steady_clock::time_point last_start_;
};

// The index of `dataset`'s home node (its ingest coordinator while up) in
// `cluster`, by placement over all its nodes; -1 if none.
inline int HomeIndex(const LocalCluster& cluster, const std::string& dataset) {
  std::vector<std::string> ids;
  for (int i = 0; i < cluster.size(); ++i) ids.push_back(cluster.Id(i));
  const std::string home = RankMembers(DatasetHomeKey(dataset), ids).front();
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.Id(i) == home) return i;
  }
  return -1;
}

// Per shard seq of `dataset`, the nodes of `cluster` that hold its shard file
// (as each node lists its files; a node that does not answer lists none).
inline std::map<uint32_t, std::set<std::string>> ShardHolders(LocalCluster& cluster, Client& client,
                                                              const std::string& dataset) {
  std::map<uint32_t, std::set<std::string>> out;
  for (int i = 0; i < cluster.size(); ++i) {
    auto files = client.ListNodeFiles(cluster.Address(i));
    if (!files.ok()) continue;
    for (const FileRef& f : *files) {
      if (f.dataset == dataset && f.kind == FileRef::Kind::kShard) out[f.seq].insert(cluster.Id(i));
    }
  }
  return out;
}

}  // namespace strata::testing
