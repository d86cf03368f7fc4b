#include "server/cluster/static_membership.h"

#include <google/protobuf/util/message_differencer.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/mutex.h"

namespace strata {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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

StaticMembership::~StaticMembership() { Stop(); }

Status StaticMembership::Start() {
  Recompute();
  heartbeat_.Start();
  return Status::OK();
}

void StaticMembership::Stop() { heartbeat_.Stop(); }

v1::ClusterMap StaticMembership::Current() const {
  MutexLock lock(&mu_);
  return map_;
}

void StaticMembership::Subscribe(std::function<void(const v1::ClusterMap&)> fn) {
  MutexLock lock(&mu_);
  subs_.push_back(std::move(fn));
}

void StaticMembership::PingAll() {
  std::vector<v1::NodeInfo> targets;
  {
    MutexLock lock(&mu_);
    for (const auto& [id, p] : others_) targets.push_back(p.info);
  }
  // Ping in parallel so one unreachable node does not delay the others.
  struct Call {
    grpc::ClientContext context;
    v1::PingReply reply;
    grpc::Status status;
    bool done = false;
  };
  std::vector<std::unique_ptr<Call>> calls;
  Mutex done_mu;
  CondVar done_cv;
  v1::PingRequest request;
  request.set_from(self_.id());
  for (const auto& t : targets) {
    auto call = std::make_unique<Call>();
    call->context.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::milliseconds(std::max<uint32_t>(config_.heartbeat_interval_ms, 200)));
    Call* c = call.get();
    peers_->Peer(t)->async()->Ping(&c->context, &request, &c->reply, [&, c](grpc::Status s) {
      MutexLock lock(&done_mu);
      c->status = std::move(s);
      c->done = true;
      done_cv.SignalAll();
    });
    calls.push_back(std::move(call));
  }
  {
    MutexLock lock(&done_mu);
    done_cv.Wait(&done_mu, [&]() REQUIRES(done_mu) {
      return std::all_of(calls.begin(), calls.end(), [](const auto& c) { return c->done; });
    });
  }
  const auto now = std::chrono::steady_clock::now();
  MutexLock lock(&mu_);
  for (size_t i = 0; i < targets.size(); ++i) {
    auto it = others_.find(targets[i].id());
    if (it == others_.end() || !calls[i]->status.ok()) continue;
    if (calls[i]->reply.node_id() != targets[i].id()) {
      spdlog::warn("membership: {} answers as '{}', not '{}'; check cluster.nodes", targets[i].address(),
                   calls[i]->reply.node_id(), targets[i].id());
      continue;
    }
    it->second.last_seen = now;
    it->second.ever_seen = true;
    const v1::PingReply& r = calls[i]->reply;
    if (r.disk_total_bytes() != 0) {  // 0: not sampled yet; keep what was heard before
      it->second.info.set_disk_free_bytes(r.disk_free_bytes());
      it->second.info.set_disk_total_bytes(r.disk_total_bytes());
      it->second.info.set_disk_full(r.disk_full());
    }
  }
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
      } else if (p.info.state() == v1::NODE_UP) {
        spdlog::warn("membership: {} is down (no answer for {} ms)", id, config_.failure_timeout_ms);
        p.info.set_state(v1::NODE_DOWN);
        p.info.set_down_since_unix_ms(NowMs());
      }
      // Down past the grace period: no longer a placement member here.
      if (p.info.state() == v1::NODE_DOWN && silent >= failure + grace) continue;
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
