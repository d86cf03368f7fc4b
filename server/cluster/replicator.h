// Copies files written here at ingest to their holders, in the background.
//
// For each file the caller gives the candidates in placement order (nodes up,
// best first) and how many copies the placement wants. The first `want`
// candidates are the targets; this node counts as a copy if it is one (its file
// is already durable). A target that cannot be reached is replaced by the next
// candidate (a hand-off copy that rebalance later moves home; where that next
// candidate is this node, its own file is the copy), so a node dying
// mid-ingest costs a retry, not the ingest. Callers wait for as many confirmed
// copies as their write policy needs; the rest continue after the ingest
// returns, counted in strata_replication_backlog_bytes.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "server/base/metrics.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/peer_clients.h"
#include "server/storage/data_dir.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

class Replicator {
 public:
  // The progress of one file's copies.
  class Copies : public std::enable_shared_from_this<Copies> {
   public:
    // Blocks until `n` targets hold a durable copy (OK), until that can no
    // longer happen (Unavailable, naming the file and what failed), or until
    // `deadline` (DeadlineExceeded).
    Status WaitFor(uint32_t n, std::chrono::steady_clock::time_point deadline);
    // Calls `done` once, with what WaitFor would return, without blocking:
    // at once on the calling thread when that is known now, else on the
    // replicator's pool (when a push ends, or at `deadline`).
    void WhenConfirmed(uint32_t n, std::chrono::steady_clock::time_point deadline, std::function<void(Status)> done);
    uint32_t confirmed() const;
    std::vector<std::string> holders() const;  // nodes with a confirmed copy

   private:
    friend class Replicator;
    struct Waiter {
      uint32_t n = 0;
      std::function<void(Status)> done;
      std::shared_ptr<boost::asio::steady_timer> timer;  // used on strand_ only
    };
    // What WaitFor(n) would return now; nullopt while it would still wait.
    std::optional<Status> Outcome(uint32_t n, bool expired) const REQUIRES(mu_);
    // Why copies are short: the last push's error, or too few candidates.
    std::string WhyShort() const REQUIRES(mu_);
    // Calls the waiters whose outcome is known (after a push ended).
    void Notify() EXCLUDES(mu_);
    void Expire(const boost::asio::steady_timer* timer) EXCLUDES(mu_);

    boost::asio::strand<boost::asio::thread_pool::executor_type> strand_;  // the waiters' timers
    v1::FileRef file_;
    uint64_t bytes_ = 0;
    std::vector<v1::NodeInfo> candidates_;  // placement order
    std::string left_out_;                  // the nodes placement passed over, and why
    size_t next_candidate_ GUARDED_BY(mu_) = 0;
    mutable Mutex mu_;
    CondVar cv_;
    std::set<std::string> confirmed_ GUARDED_BY(mu_);
    int in_flight_ GUARDED_BY(mu_) = 0;
    std::string last_error_ GUARDED_BY(mu_);
    std::vector<Waiter> waiters_ GUARDED_BY(mu_);

   public:
    explicit Copies(boost::asio::thread_pool::executor_type executor) : strand_(std::move(executor)) {}
  };

  // With `view`, a push that fails is not tried again while the view has its
  // target down (or gone): the copy is handed on at once. Without it, and for
  // a target the view has up (views lag a node that has just come back), a
  // push that finds its target unreachable is tried for 2.1 s, longer than a
  // peer channel's reconnect backoff.
  Replicator(std::string self_id, const DataDir* dir, PeerClients* peers, Metrics* metrics,
             const ClusterView* view = nullptr, size_t threads = 2);
  ~Replicator();

  // Starts copying `file` (durable here, `bytes` long) to the first `want` of
  // `candidates`, replacing failed ones from the rest. `left_out` says which
  // nodes placement passed over and why ("node-3 is down"); an error for too
  // few candidates quotes it.
  std::shared_ptr<Copies> Replicate(const v1::FileRef& file, uint64_t bytes, std::vector<v1::NodeInfo> candidates,
                                    uint32_t want, std::string left_out = "");

  // Waits for the copies in flight to end (used at shutdown).
  void Stop();

 private:
  void Launch(const std::shared_ptr<Copies>& copies, const v1::NodeInfo& target) REQUIRES(copies->mu_);
  void Push(std::shared_ptr<Copies> copies, v1::NodeInfo target);

  const std::string self_id_;
  const DataDir* dir_;
  PeerClients* peers_;
  Metrics* metrics_;
  const ClusterView* const view_;  // may be null
  boost::asio::thread_pool pool_;
};

}  // namespace strata
