#include "server/base/security_config.h"

#include <mutex>

namespace strata {

namespace {
std::mutex mu;
std::shared_ptr<grpc::ChannelCredentials>& Stored() {
  static auto* credentials = new std::shared_ptr<grpc::ChannelCredentials>();  // never destroyed: channels outlive main
  return *credentials;
}
}  // namespace

void SetPeerChannelCredentials(std::shared_ptr<grpc::ChannelCredentials> credentials) {
  std::lock_guard lock(mu);
  Stored() = std::move(credentials);
}

std::shared_ptr<grpc::ChannelCredentials> PeerChannelCredentials() {
  std::lock_guard lock(mu);
  if (!Stored()) return grpc::InsecureChannelCredentials();
  return Stored();
}

}  // namespace strata
