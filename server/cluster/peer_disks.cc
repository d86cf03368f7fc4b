#include "server/cluster/peer_disks.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace strata {

namespace {

// A peer that does not answer within this is left out of the tick.
constexpr std::chrono::milliseconds kPingDeadline{1000};

}  // namespace

PeerDisks::PeerDisks(DiskSpace* self, const ClusterView* view, PeerClients* peers,
                     boost::asio::any_io_executor background, std::chrono::milliseconds interval)
    : self_(self), view_(view), peers_(peers), interval_(interval), task_(std::move(background), [this] {
        Tick();
        return interval_;
      }) {}

PeerDisks::~PeerDisks() { Stop(); }

void PeerDisks::Start() { task_.Start(); }

void PeerDisks::Stop() { task_.Stop(); }

std::set<std::string> PeerDisks::Full() const {
  std::set<std::string> out;
  MutexLock lock(&mu_);
  for (const auto& [id, r] : reports_) {
    if (r.full) out.insert(id);
  }
  return out;
}

std::map<std::string, PeerDisks::Report> PeerDisks::All() const {
  MutexLock lock(&mu_);
  return reports_;
}

void PeerDisks::Tick() {
  const bool was_low = self_->BelowLow();
  const bool was_high = self_->BelowHigh();
  if (Status s = self_->Sample(); !s.ok()) spdlog::warn("disk: {}", s.ToString());
  const DiskFigures mine = self_->Last();
  if (self_->BelowLow() != was_low || self_->BelowHigh() != was_high) {
    spdlog::warn("disk: {} free of {}: {}", FormatBytes(mine.free_bytes), FormatBytes(mine.total_bytes),
                 self_->BelowLow()    ? "below the low watermark, refusing ingests and replicas"
                 : self_->BelowHigh() ? "below the high watermark, taking no new replicas"
                                      : "above the watermarks again");
  }
  std::map<std::string, Report> next;
  next[view_->self_id()] = Report{mine, self_->BelowHigh()};

  // Ping the others in parallel, so one that does not answer delays no other.
  struct Call {
    std::string id;
    grpc::ClientContext context;
    v1::PingReply reply;
    grpc::Status status;
    bool done = false;
  };
  std::vector<std::unique_ptr<Call>> calls;
  Mutex done_mu;
  CondVar done_cv;
  v1::PingRequest request;
  request.set_from(view_->self_id());
  const v1::ClusterMap map = view_->Current();
  for (const auto& n : map.nodes()) {
    if (n.id() == view_->self_id() || n.state() != v1::NODE_UP) continue;
    auto call = std::make_unique<Call>();
    call->id = n.id();
    call->context.set_deadline(std::chrono::system_clock::now() + kPingDeadline);
    Call* c = call.get();
    calls.push_back(std::move(call));
    peers_->Peer(n)->async()->Ping(&c->context, &request, &c->reply, [&, c](grpc::Status s) {
      MutexLock lock(&done_mu);
      c->status = std::move(s);
      c->done = true;
      done_cv.SignalAll();
    });
  }
  {
    MutexLock lock(&done_mu);
    done_cv.Wait(&done_mu, [&]() REQUIRES(done_mu) {
      return std::all_of(calls.begin(), calls.end(), [](const auto& c) { return c->done; });
    });
  }
  for (const auto& c : calls) {
    if (!c->status.ok() || c->reply.node_id() != c->id || c->reply.disk_total_bytes() == 0) continue;
    next[c->id] = Report{DiskFigures{c->reply.disk_free_bytes(), c->reply.disk_total_bytes()}, c->reply.disk_full()};
  }
  MutexLock lock(&mu_);
  reports_ = std::move(next);
}

}  // namespace strata
