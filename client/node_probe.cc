#include "client/node_probe.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace strata::client_internal {

struct NodeProbe::Call {
  std::unique_ptr<v1::AdminService::Stub> stub;
  grpc::ClientContext context;
  v1::DescribeDatasetRequest request;
  v1::DescribeDatasetReply reply;
  std::mutex mu;
  std::condition_variable ended;
  std::atomic<bool> done{false};
  std::atomic<bool> ok{false};
};

NodeProbe::NodeProbe(const std::shared_ptr<grpc::Channel>& channel, const std::string& dataset,
                     std::chrono::milliseconds deadline)
    : call_(std::make_unique<Call>()) {
  call_->stub = v1::AdminService::NewStub(channel);
  call_->request.set_dataset(dataset);
  call_->context.set_deadline(std::chrono::system_clock::now() + deadline);
  // A node that is restarting refuses connections: wait for it (within the
  // deadline) rather than fail at once, so one probe spans the restart.
  call_->context.set_wait_for_ready(true);
  Call* call = call_.get();
  call_->stub->async()->DescribeDataset(&call_->context, &call_->request, &call_->reply, [call](grpc::Status s) {
    std::lock_guard<std::mutex> lock(call->mu);
    call->ok = s.ok();
    call->done = true;
    call->ended.notify_all();
  });
}

NodeProbe::~NodeProbe() {
  // gRPC needs the call's context until its callback has run: cancel, then wait for it.
  call_->context.TryCancel();
  std::unique_lock<std::mutex> lock(call_->mu);
  call_->ended.wait(lock, [&] { return call_->done.load(); });
}

bool NodeProbe::done() const { return call_->done; }
bool NodeProbe::alive() const { return call_->ok; }

std::chrono::milliseconds ExcludedNodes::Pause(const std::string& node) const {
  auto it = exclusions_.find(node);
  const int n = it == exclusions_.end() ? 1 : it->second;
  return std::chrono::milliseconds(250) * (1 << std::min(4, std::max(0, n - 1)));
}

void ExcludedNodes::Exclude(const std::string& node, const std::string& address, Clock::time_point now) {
  ++exclusions_[node];
  Node& n = nodes_[node];
  n.address = address;
  n.probe.reset();
  // The first exclusion probes at once: a node the map said was down may be up.
  n.next_probe = exclusions_[node] == 1 ? now : now + Pause(node);
}

std::vector<std::string> ExcludedNodes::ids() const {
  std::vector<std::string> out;
  for (const auto& [id, n] : nodes_) out.push_back(id);
  return out;
}

void ExcludedNodes::ProbeNow(Clock::time_point now) {
  for (auto& [id, n] : nodes_) {
    if (!n.probe) n.next_probe = now;
  }
}

std::vector<std::string> ExcludedNodes::Poll(const std::string& dataset, Clock::time_point now) {
  std::vector<std::string> back;
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    Node& n = it->second;
    if (n.probe && n.probe->done()) {
      if (n.probe->alive()) {
        back.push_back(it->first);
        it = nodes_.erase(it);
        continue;
      }
      n.probe.reset();
      n.next_probe = now + Pause(it->first);
    }
    if (!n.probe && now >= n.next_probe && !n.address.empty()) {
      n.probe = std::make_unique<NodeProbe>(channels_(n.address), dataset, kProbeDeadline);
    }
    ++it;
  }
  return back;
}

}  // namespace strata::client_internal
