#include "server/cluster/static_membership.h"

#include <google/protobuf/util/message_differencer.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/mutex.h"
#include "common/wall_clock.h"
#include "server/base/grpc_handoff.h"

namespace strata {

namespace {

bool SameNodes(const v1::ClusterMap& a, const v1::ClusterMap& b) {
  if (a.nodes_size() != b.nodes_size()) return false;
  for (int i = 0; i < a.nodes_size(); ++i) {
    if (a.nodes(i).id() != b.nodes(i).id() || a.nodes(i).state() != b.nodes(i).state() ||
        a.nodes(i).address() != b.nodes(i).address() || a.nodes(i).peer_address() != b.nodes(i).peer_address() ||
        a.nodes(i).zone() != b.nodes(i).zone() || a.nodes(i).rack() != b.nodes(i).rack()) {
      return false;
    }
  }
  return true;
}

}  // namespace

StaticMembership::StaticMembership(const NodeConfig& config, const v1::NodeInfo& self, PeerClients* peers,
                                   boost::asio::any_io_executor executor, const DiskSpace* disk)
    : config_(config.cluster),
      self_(self),
      peers_(peers),
      disk_(disk),
      started_(std::chrono::steady_clock::now()),
      heartbeat_(std::move(executor), [this] {
        PingAll();
        Recompute();
        return std::chrono::milliseconds(config_.heartbeat_interval_ms);
      }) {
  for (const auto& n : config_.nodes) {
    if (n.id == self_.id()) continue;
    Peer p;
    p.info.set_id(n.id);
    p.info.set_address(n.address);
    p.info.set_peer_address(n.peer_address);
    p.info.set_zone(n.zone);
    p.info.set_rack(n.rack);
    p.info.set_state(v1::NODE_UP);  // optimistic until the first failure timeout passes
    p.last_seen = started_;
    others_.emplace(n.id, std::move(p));
  }
  map_.set_membership("static");
  map_.set_cluster(config_.name);
  map_.set_epoch(0);
}

struct StaticMembership::PingCall {
  grpc::ClientContext context;
  v1::PingRequest request;
  v1::PingReply reply;
};

StaticMembership::~StaticMembership() { Stop(); }

Status StaticMembership::Start() {
  Recompute();
  heartbeat_.Start();
  return Status::OK();
}

void StaticMembership::Stop() {
  heartbeat_.Stop();
  std::vector<std::shared_ptr<PingCall>> out;
  {
    MutexLock lock(&mu_);
    stopped_ = true;
    for (const auto& [id, call] : calls_) out.push_back(call);
  }
  // Outside mu_: gRPC may run a cancelled call's callback on this thread.
  for (const auto& call : out) call->context.TryCancel();
  MutexLock lock(&mu_);
  calls_done_.Wait(&mu_, [&]() REQUIRES(mu_) { return calls_.empty(); });
}

v1::ClusterMap StaticMembership::Current() const {
  MutexLock lock(&mu_);
  return map_;
}

void StaticMembership::Subscribe(std::function<void(const v1::ClusterMap&)> fn) {
  MutexLock lock(&mu_);
  subs_.push_back(std::move(fn));
}

void StaticMembership::PingAll() {
  std::vector<std::pair<v1::NodeInfo, std::shared_ptr<PingCall>>> sends;
  {
    MutexLock lock(&mu_);
    if (stopped_) return;
    for (auto& [id, p] : others_) {
      if (calls_.count(id) != 0) continue;  // its answer may still come
      auto call = std::make_shared<PingCall>();
      call->request.set_from(self_.id());
      call->context.set_deadline(std::chrono::system_clock::now() +
                                 std::chrono::milliseconds(config_.failure_timeout_ms));
      calls_[id] = call;
      sends.emplace_back(p.info, std::move(call));
    }
  }
  for (auto& [target, call] : sends) {
    PingCall* c = call.get();
    HandOffToGrpc(c);
    peers_->Peer(target)->async()->Ping(&c->context, &c->request, &c->reply,
                                        [this, call = std::move(call), id = target.id()](grpc::Status s) {
                                          TakeBackFromGrpc(call.get());
                                          Pinged(id, s, call->reply);
                                        });
  }
}

void StaticMembership::Pinged(const std::string& id, const grpc::Status& status, const v1::PingReply& reply) {
  MutexLock lock(&mu_);
  auto it = others_.find(id);
  if (it != others_.end()) {
    Peer& p = it->second;
    p.unanswered = !status.ok() || reply.node_id() != id;
    if (status.ok() && reply.node_id() != id) {
      spdlog::warn("membership: {} answers as '{}', not '{}'; check cluster.nodes", p.info.address(), reply.node_id(),
                   id);
    } else if (status.ok()) {
      p.last_seen = std::chrono::steady_clock::now();
      if (reply.disk_total_bytes() != 0) {  // 0: not sampled yet; keep what was heard before
        p.info.set_disk_free_bytes(reply.disk_free_bytes());
        p.info.set_disk_total_bytes(reply.disk_total_bytes());
        p.info.set_disk_full(reply.disk_full());
      }
    }
  }
  // The call (its context) goes with the callback that holds it; this is the
  // last use of `this`.
  calls_.erase(id);
  if (calls_.empty()) calls_done_.SignalAll();
}

void StaticMembership::Recompute() {
  const auto now = std::chrono::steady_clock::now();
  const auto failure = std::chrono::milliseconds(config_.failure_timeout_ms);
  const auto grace = std::chrono::seconds(config_.grace_period_s);
  v1::ClusterMap next;
  std::vector<std::function<void(const v1::ClusterMap&)>> subs;
  {
    MutexLock lock(&mu_);
    std::vector<v1::NodeInfo> nodes = {self_};
    nodes.back().set_state(v1::NODE_UP);
    if (disk_ != nullptr) SetDisk(*disk_, &nodes.back());
    for (auto& [id, p] : others_) {
      const auto silent = now - p.last_seen;
      if (silent < failure) {
        if (p.info.state() != v1::NODE_UP) spdlog::info("membership: {} is up", id);
        p.info.set_state(v1::NODE_UP);
        p.info.set_down_since_unix_ms(0);
      } else if (p.info.state() == v1::NODE_UP && p.unanswered) {
        spdlog::warn("membership: {} is down (no answer for {} ms)", id,
                     std::chrono::duration_cast<std::chrono::milliseconds>(silent).count());
        p.info.set_state(v1::NODE_DOWN);
        p.info.set_down_since_unix_ms(UnixNowMs());
        p.down_at = now;
      }
      // Down past the grace period: no longer a placement member here.
      if (p.info.state() == v1::NODE_DOWN && now - p.down_at >= grace) continue;
      nodes.push_back(p.info);
    }
    std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.id() < b.id(); });
    next = map_;
    next.clear_nodes();
    for (auto& n : nodes) *next.add_nodes() = std::move(n);
    // The same nodes keep the epoch (new disk figures at most).
    if (SameNodes(next, map_) && map_.epoch() != 0) {
      if (google::protobuf::util::MessageDifferencer::Equals(next, map_)) return;
    } else {
      next.set_epoch(map_.epoch() + 1);
    }
    map_ = next;
    subs = subs_;
  }
  for (const auto& fn : subs) fn(next);
}

}  // namespace strata
