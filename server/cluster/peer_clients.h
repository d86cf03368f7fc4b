// gRPC channels to the other nodes, one per address, created on first use and
// shared by everything that talks to peers (heartbeats, replication, repair,
// proxied reads), and the long calls in flight to them.
//
// A node that stops answering without closing its connections (a frozen
// process, a host cut off without a reset) holds every call to it until the
// call's deadline: a replicator thread for a push's 5 minutes, the repair
// loop for a pull's 10, and all the work queued behind them. So a call that
// may last is tracked (Track) by the node it goes to, and cancelled once the
// view has that node down (CancelCallsToNodesDown, which the daemon calls on
// every change of the view). Its caller then sees CANCELLED and goes on as
// for a node that is down.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "strata/v1/cluster.grpc.pb.h"

namespace strata {

class ClusterView;

class PeerClients {
  using Calls = std::multimap<std::string, grpc::ClientContext*>;

 public:
  // Without a view, tracked calls are never cancelled. `view` must outlive
  // this object.
  explicit PeerClients(const ClusterView* view = nullptr) : view_(view) {}

  // A stub for the node at `address` (HOST:PORT). Never null; the channel
  // connects lazily, so errors surface on the first call.
  std::shared_ptr<v1::PeerService::Stub> Peer(const std::string& address);
  // A stub for `node`'s peer service: at PeerAddress(node).
  std::shared_ptr<v1::PeerService::Stub> Peer(const v1::NodeInfo& node) { return Peer(PeerAddress(node)); }

  // Where `node` serves the peer service: its peer_address (--peer-listen),
  // else its address.
  static const std::string& PeerAddress(const v1::NodeInfo& node) {
    return node.peer_address().empty() ? node.address() : node.peer_address();
  }

  // A call's registration: the call is tracked while this lives. Destroy it
  // before the ClientContext.
  class Tracked {
   public:
    Tracked(Tracked&& other) noexcept : owner_(other.owner_), it_(other.it_) { other.owner_ = nullptr; }
    Tracked& operator=(Tracked&&) = delete;
    ~Tracked();

   private:
    friend class PeerClients;
    Tracked(PeerClients* owner, Calls::iterator it) : owner_(owner), it_(it) {}
    PeerClients* owner_;
    Calls::iterator it_;
  };
  // Tracks a call to node `node_id` that uses `context` (start the call after
  // this): it is cancelled (TryCancel) at once if the view has the node down
  // now, else on the first change of the view that has it down, until the
  // returned registration goes.
  [[nodiscard]] Tracked Track(const std::string& node_id, grpc::ClientContext* context) EXCLUDES(calls_mu_);
  // Cancels the tracked calls to nodes the view has down.
  void CancelCallsToNodesDown() EXCLUDES(calls_mu_);

  // Sends one unary call to every node of `nodes` at once and blocks until all
  // have answered (`timeout` each; a call to a node the view marks down
  // meanwhile ends then: Track). `start(stub, context, reply, done)` starts
  // the call on the stub's async() interface. Returns each node's status and
  // reply, in the order of `nodes`. Never call it on a gRPC thread.
  template <class Reply, class Start>
  std::vector<std::pair<grpc::Status, Reply>> CallEach(const std::vector<const v1::NodeInfo*>& nodes,
                                                       std::chrono::milliseconds timeout, Start start);

 private:
  const ClusterView* const view_;
  Mutex mu_;
  std::map<std::string, std::shared_ptr<v1::PeerService::Stub>> stubs_ GUARDED_BY(mu_);
  Mutex calls_mu_;
  Calls calls_ GUARDED_BY(calls_mu_);  // the tracked calls, by their node's id
};

template <class Reply, class Start>
std::vector<std::pair<grpc::Status, Reply>> PeerClients::CallEach(const std::vector<const v1::NodeInfo*>& nodes,
                                                                  std::chrono::milliseconds timeout, Start start) {
  std::vector<std::pair<grpc::Status, Reply>> answers(nodes.size());
  std::vector<grpc::ClientContext> contexts(nodes.size());
  std::vector<Tracked> tracked;
  tracked.reserve(nodes.size());
  Mutex mu;
  CondVar done;
  size_t left = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    contexts[i].set_deadline(std::chrono::system_clock::now() + timeout);
    tracked.push_back(Track(nodes[i]->id(), &contexts[i]));
    start(*Peer(*nodes[i]), &contexts[i], &answers[i].second,
          [&mu, &done, &left, status = &answers[i].first](grpc::Status s) {
            MutexLock lock(&mu);
            *status = std::move(s);
            if (--left == 0) done.SignalAll();
          });
  }
  MutexLock lock(&mu);
  done.Wait(&mu, [&]() REQUIRES(mu) { return left == 0; });
  tracked.clear();  // before the contexts go
  return answers;
}

}  // namespace strata
