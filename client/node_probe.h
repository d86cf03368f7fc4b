// Private to libstrata. Asks, in the background, whether a node a stream has
// excluded could serve it again: one DescribeDataset of the stream's dataset
// (its version once known) with a short deadline. An answer means the node's
// gRPC server is up and its catalog knows the version; no answer (dead,
// stopped, still starting) or an error means not yet.
//
// The call completes on a queue of the probe's own, which done() looks at
// without waiting, not through gRPC's callback API: that would start gRPC's
// callback threads in the trainer's process for good, and they would poll
// (and read) the streams' sockets beside the stream's own loop
// (client/read_loop.h), which made a 1 MiB stream 1.3 times slower.
//
// Lifetime: destroying a probe whose call is in flight cancels the call and
// waits for it to end (promptly, after a cancel).
//
// Thread-safety: done() and alive() may be called from any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "strata/v1/admin.grpc.pb.h"

namespace strata::client_internal {

class NodeProbe {
 public:
  // Starts the call at once.
  NodeProbe(const std::shared_ptr<grpc::Channel>& channel, const std::string& dataset,
            std::chrono::milliseconds deadline);
  ~NodeProbe();  // cancels the call if it is still in flight
  NodeProbe(const NodeProbe&) = delete;
  NodeProbe& operator=(const NodeProbe&) = delete;

  // The call has ended.
  bool done() const;
  // The call ended OK. REQUIRES: done().
  bool alive() const;

 private:
  struct Call;
  std::unique_ptr<Call> call_;
};

// The nodes one stream does not use, and when each is asked again whether it
// is back. A node is probed at once the first time it is excluded, then after
// a pause that doubles each time it is excluded again (250 ms up to 4 s), so
// a node that keeps failing costs little and one that restarts is back within
// about a second of answering.
//
// Thread-safety: one caller at a time (the stream's Next()).
class ExcludedNodes {
 public:
  using Clock = std::chrono::steady_clock;
  using ChannelFor = std::function<std::shared_ptr<grpc::Channel>(const std::string& address)>;

  explicit ExcludedNodes(ChannelFor channels) : channels_(std::move(channels)) {}

  // Stops using `node` (at `address`) and schedules its probes.
  void Exclude(const std::string& node, const std::string& address, Clock::time_point now);
  bool Contains(const std::string& node) const { return nodes_.count(node) > 0; }
  bool empty() const { return nodes_.empty(); }
  std::vector<std::string> ids() const;
  // Probes every excluded node now (a cancelled pause).
  void ProbeNow(Clock::time_point now);
  // Starts the probes that are due (DescribeDataset of `dataset`) and returns
  // the nodes whose probe answered, which are no longer excluded.
  std::vector<std::string> Poll(const std::string& dataset, Clock::time_point now);

  static constexpr std::chrono::milliseconds kProbeDeadline{1000};

 private:
  struct Node {
    std::string address;
    Clock::time_point next_probe;
    std::unique_ptr<NodeProbe> probe;
  };
  std::chrono::milliseconds Pause(const std::string& node) const;

  ChannelFor channels_;
  std::map<std::string, Node> nodes_;
  std::map<std::string, int> exclusions_;  // per node, how often it was excluded
};

}  // namespace strata::client_internal
