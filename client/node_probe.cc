#include "client/node_probe.h"

#include <algorithm>
#include <mutex>

namespace strata::client_internal {

struct NodeProbe::Call {
  std::unique_ptr<v1::AdminService::Stub> stub;
  grpc::ClientContext context;
  grpc::CompletionQueue cq;  // the call's one event: its Finish
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::DescribeDatasetReply>> reader;
  v1::DescribeDatasetRequest request;
  v1::DescribeDatasetReply reply;
  grpc::Status status;
  std::mutex mu;  // takes the event off cq
  std::atomic<bool> done{false};
  std::atomic<bool> ok{false};

  // Takes the call's event if it is there, or waits for it (`wait`).
  void Take(bool wait) {
    std::lock_guard<std::mutex> lock(mu);
    if (done) return;
    void* tag = nullptr;
    bool event_ok = false;
    if (wait) {
      if (!cq.Next(&tag, &event_ok)) return;
    } else if (cq.AsyncNext(&tag, &event_ok, gpr_time_0(GPR_CLOCK_MONOTONIC)) != grpc::CompletionQueue::GOT_EVENT) {
      return;
    }
    ok = status.ok();
    done = true;
  }
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
  call_->reader = call_->stub->PrepareAsyncDescribeDataset(&call_->context, call_->request, &call_->cq);
  call_->reader->StartCall();
  call_->reader->Finish(&call_->reply, &call_->status, call_.get());
}

NodeProbe::~NodeProbe() {
  // gRPC needs the call's context until it has ended: cancel, then wait for it.
  call_->context.TryCancel();
  call_->Take(/*wait=*/true);
  call_->cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (call_->cq.Next(&tag, &ok)) {
  }
}

bool NodeProbe::done() const {
  call_->Take(/*wait=*/false);
  return call_->done;
}
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
