#include "server/cluster/replicator.h"

#include <spdlog/spdlog.h>

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
// connection attempt made before it started).
constexpr int kPushAttempts = 4;
constexpr std::chrono::milliseconds kRetryPause{300};

}  // namespace

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
  return Status::Unavailable("only " + std::to_string(confirmed_.size()) + " of " + std::to_string(n) +
                             " copies of " + FileName(file_) + " could be written; last error: " + last_error_);
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
                       size_t threads)
    : self_id_(std::move(self_id)), dir_(dir), peers_(peers), metrics_(metrics), pool_(threads) {}

Replicator::~Replicator() { Stop(); }

void Replicator::Stop() { pool_.join(); }

std::shared_ptr<Replicator::Copies> Replicator::Replicate(const v1::FileRef& file, uint64_t bytes,
                                                          std::vector<v1::NodeInfo> candidates, uint32_t want) {
  auto copies = std::make_shared<Copies>();
  copies->file_ = file;
  copies->bytes_ = bytes;
  copies->candidates_ = std::move(candidates);
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
  auto pushed = PushFile(peers_->Peer(target).get(), *dir_, copies->file_, nullptr, kPushTimeout);
  for (int attempt = 1; attempt < kPushAttempts && !pushed.ok() && pushed.status().code() == Code::kUnavailable;
       ++attempt) {
    std::this_thread::sleep_for(kRetryPause);
    pushed = PushFile(peers_->Peer(target).get(), *dir_, copies->file_, nullptr, kPushTimeout);
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
    // Hand the copy to the next candidate that is not already a holder.
    while (copies->next_candidate_ < copies->candidates_.size()) {
      const v1::NodeInfo& next = copies->candidates_[copies->next_candidate_++];
      if (next.id() == self_id_ || copies->confirmed_.count(next.id())) continue;
      Launch(copies, next);
      break;
    }
  }
  copies->cv_.SignalAll();
}

}  // namespace strata
