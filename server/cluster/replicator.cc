#include "server/cluster/replicator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <thread>

#include "common/mutex.h"
#include "server/cluster/file_transfer.h"
#include "server/storage/local_files.h"

namespace strata {

namespace {

// A copy that takes longer than this is given up and handed to another node.
constexpr std::chrono::minutes kPushTimeout{5};
// A peer that cannot be reached is tried again this often before the copy is
// handed to another node (its channel may still be backing off from a failed
// connection attempt made before it started). The attempts span 2.1 s, more
// than the peer channels' longest reconnect backoff (1 s, plus gRPC's 20%
// jitter: server/cluster/peer_clients.cc), so a peer that is up is reached.
constexpr int kPushAttempts = 8;
constexpr std::chrono::milliseconds kRetryPause{300};

}  // namespace

std::string Replicator::Copies::WhyShort() const {
  // No push failed: the ingest had too few nodes to ask (placement leaves
  // out nodes that are down or below their disk's high watermark).
  if (last_error_.empty()) {
    return "no other node could take one" +
           (left_out_.empty() ? std::string(" (the cluster has no other node up)") : ": " + left_out_);
  }
  return "last error: " + last_error_;
}

std::optional<Status> Replicator::Copies::Outcome(uint32_t n, bool expired) const {
  if (confirmed_.size() >= n) return Status::OK();
  if (in_flight_ == 0 && next_candidate_ >= candidates_.size()) {
    return Status::Unavailable("only " + std::to_string(confirmed_.size()) + " of " + std::to_string(n) +
                               " copies of " + FileName(file_) + " could be written; " + WhyShort());
  }
  if (expired) {
    return Status::DeadlineExceeded("timed out waiting for " + std::to_string(n) + " copies of " + FileName(file_) +
                                    " (" + std::to_string(confirmed_.size()) + " so far)");
  }
  return std::nullopt;
}

void Replicator::Copies::WhenConfirmed(uint32_t n, std::chrono::steady_clock::time_point deadline,
                                       std::function<void(Status)> done) {
  std::shared_ptr<boost::asio::steady_timer> timer;
  {
    MutexLock lock(&mu_);
    std::optional<Status> now = Outcome(n, std::chrono::steady_clock::now() >= deadline);
    if (!now) {
      timer = std::make_shared<boost::asio::steady_timer>(strand_, deadline);
      waiters_.push_back(Waiter{n, std::move(done), timer});
    } else {
      lock.Unlock();
      done(*std::move(now));
      return;
    }
  }
  // Armed on the strand, where Notify cancels it: a timer is not thread-safe.
  boost::asio::post(strand_, [self = shared_from_this(), timer] {
    timer->async_wait([self, timer](const boost::system::error_code& ec) {
      if (!ec) self->Expire(timer.get());
    });
  });
}

void Replicator::Copies::Notify() {
  std::vector<std::pair<std::function<void(Status)>, Status>> ready;
  {
    MutexLock lock(&mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      std::optional<Status> now = Outcome(it->n, /*expired=*/false);
      if (!now) {
        ++it;
        continue;
      }
      boost::asio::post(strand_, [timer = it->timer] { timer->cancel(); });
      ready.emplace_back(std::move(it->done), *std::move(now));
      it = waiters_.erase(it);
    }
  }
  for (auto& [done, status] : ready) done(std::move(status));
}

void Replicator::Copies::Expire(const boost::asio::steady_timer* timer) {
  std::function<void(Status)> done;
  Status status;
  {
    MutexLock lock(&mu_);
    auto it = std::find_if(waiters_.begin(), waiters_.end(), [&](const Waiter& w) { return w.timer.get() == timer; });
    if (it == waiters_.end()) return;  // already answered
    status = *Outcome(it->n, /*expired=*/true);
    done = std::move(it->done);
    waiters_.erase(it);
  }
  done(std::move(status));
}

Status Replicator::Copies::WaitFor(uint32_t n, std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(&mu_);
  const bool done = cv_.WaitUntil(&mu_, deadline, [&]() REQUIRES(mu_) {
    return confirmed_.size() >= n || (in_flight_ == 0 && next_candidate_ >= candidates_.size());
  });
  if (confirmed_.size() >= n) return Status::OK();
  if (!done) {
    return Status::DeadlineExceeded("timed out waiting for " + std::to_string(n) + " copies of " + FileName(file_) +
                                    " (" + std::to_string(confirmed_.size()) + " so far)");
  }
  return Status::Unavailable("only " + std::to_string(confirmed_.size()) + " of " + std::to_string(n) + " copies of " +
                             FileName(file_) + " could be written; " + WhyShort());
}

uint32_t Replicator::Copies::confirmed() const {
  MutexLock lock(&mu_);
  return static_cast<uint32_t>(confirmed_.size());
}

std::vector<std::string> Replicator::Copies::holders() const {
  MutexLock lock(&mu_);
  return {confirmed_.begin(), confirmed_.end()};
}

Replicator::Replicator(std::string self_id, const DataDir* dir, PeerClients* peers, Metrics* metrics,
                       const ClusterView* view, size_t threads)
    // pool_: owned by the replicator (joined by Stop). Purpose: pushing newly
    // sealed files to their other holders; each push blocks on a peer stream.
    : self_id_(std::move(self_id)), dir_(dir), peers_(peers), metrics_(metrics), view_(view), pool_(threads) {}

Replicator::~Replicator() { Stop(); }

void Replicator::Stop() { pool_.join(); }

std::shared_ptr<Replicator::Copies> Replicator::Replicate(const v1::FileRef& file, uint64_t bytes,
                                                          std::vector<v1::NodeInfo> candidates, uint32_t want,
                                                          std::string left_out) {
  auto copies = std::make_shared<Copies>(pool_.get_executor());
  copies->file_ = file;
  copies->bytes_ = bytes;
  copies->candidates_ = std::move(candidates);
  copies->left_out_ = std::move(left_out);
  MutexLock lock(&copies->mu_);
  while (copies->next_candidate_ < copies->candidates_.size() &&
         copies->confirmed_.size() + static_cast<size_t>(copies->in_flight_) < want) {
    const v1::NodeInfo& target = copies->candidates_[copies->next_candidate_++];
    if (target.id() == self_id_) {
      copies->confirmed_.insert(self_id_);  // written and fsynced here already
    } else {
      Launch(copies, target);
    }
  }
  return copies;
}

void Replicator::Launch(const std::shared_ptr<Copies>& copies, const v1::NodeInfo& target) {
  ++copies->in_flight_;
  metrics_->replication_backlog_bytes.Increment(static_cast<double>(copies->bytes_));
  boost::asio::post(pool_, [this, copies, target] { Push(copies, target); });
}

void Replicator::Push(std::shared_ptr<Copies> copies, v1::NodeInfo target) {
  // A target the view has down is not waited for: a node that died mid-ingest
  // would otherwise hold a pool thread 2.1 s for every file sent its way, and
  // one that stopped answering, until the push's deadline (the push is
  // tracked: PeerClients cancels it when the view has its target down).
  const auto may_be_up = [&] { return view_ == nullptr || view_->IsUp(target.id()); };
  const auto push_once = [&]() -> Result<bool> {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kPushTimeout);
    const PeerClients::Tracked tracked = peers_->Track(target.id(), &context);
    return PushFile(peers_->Peer(target).get(), *dir_, copies->file_, nullptr, &context);
  };
  auto pushed = push_once();
  for (int attempt = 1;
       attempt < kPushAttempts && !pushed.ok() && pushed.status().code() == Code::kUnavailable && may_be_up();
       ++attempt) {
    std::this_thread::sleep_for(kRetryPause);
    pushed = push_once();
  }
  metrics_->replication_backlog_bytes.Decrement(static_cast<double>(copies->bytes_));
  MutexLock lock(&copies->mu_);
  --copies->in_flight_;
  if (pushed.ok()) {
    if (!pushed.value()) metrics_->replicated_bytes.Increment(static_cast<double>(copies->bytes_));
    copies->confirmed_.insert(target.id());
  } else {
    copies->last_error_ = target.id() + ": " + pushed.status().ToString();
    spdlog::warn("replicating {} to {}: {}", FileName(copies->file_), target.id(), pushed.status().ToString());
    // Hand the copy to the next candidate that is not already a holder. This
    // node, when it comes next, is that copy: its file is durable here
    // already (and it keeps it until the holders have theirs).
    while (copies->next_candidate_ < copies->candidates_.size()) {
      const v1::NodeInfo& next = copies->candidates_[copies->next_candidate_++];
      if (copies->confirmed_.count(next.id())) continue;
      if (next.id() == self_id_) {
        copies->confirmed_.insert(self_id_);
      } else {
        Launch(copies, next);
      }
      break;
    }
  }
  copies->cv_.SignalAll();
  lock.Unlock();
  copies->Notify();
}

}  // namespace strata
