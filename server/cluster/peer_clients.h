// gRPC channels to the other nodes, one per address, created on first use and
// shared by everything that talks to peers (heartbeats, replication, repair,
// proxied reads).
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "strata/v1/cluster.grpc.pb.h"

namespace strata {

class PeerClients {
 public:
  PeerClients() = default;

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

 private:
  Mutex mu_;
  std::map<std::string, std::shared_ptr<v1::PeerService::Stub>> stubs_ GUARDED_BY(mu_);
};

}  // namespace strata
