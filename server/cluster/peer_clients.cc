#include "server/cluster/peer_clients.h"

#include "common/mutex.h"
#include "server/base/security_config.h"
#include "server/cluster/cluster_view.h"

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

PeerClients::Tracked::~Tracked() {
  if (owner_ == nullptr) return;
  MutexLock lock(&owner_->calls_mu_);
  owner_->calls_.erase(it_);
}

PeerClients::Tracked PeerClients::Track(const std::string& node_id, grpc::ClientContext* context) {
  Calls::iterator it;
  {
    MutexLock lock(&calls_mu_);
    it = calls_.emplace(node_id, context);
  }
  // Down before it was registered: the view's last change may have been
  // handled already.
  if (view_ != nullptr && !view_->IsUp(node_id)) context->TryCancel();
  return Tracked(this, it);
}

void PeerClients::CancelCallsToNodesDown() {
  if (view_ == nullptr) return;
  MutexLock lock(&calls_mu_);
  for (const auto& [node, context] : calls_) {
    if (!view_->IsUp(node)) context->TryCancel();
  }
}

}  // namespace strata
