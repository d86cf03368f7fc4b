#include "server/cluster/peer_clients.h"

#include "common/mutex.h"
#include "server/base/security_config.h"

namespace strata {

std::shared_ptr<v1::PeerService::Stub> PeerClients::Peer(const std::string& address) {
  MutexLock lock(&mu_);
  auto it = stubs_.find(address);
  if (it != stubs_.end()) return it->second;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // file chunks and record batches
  // Peers reconnect quickly after a restart: the default backoff grows to minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  auto channel = grpc::CreateCustomChannel(address, PeerChannelCredentials(), args);
  auto stub = std::shared_ptr<v1::PeerService::Stub>(v1::PeerService::NewStub(channel));
  stubs_.emplace(address, stub);
  return stub;
}

}  // namespace strata
