// stratad's security settings: TLS files, the token file, and the explicit
// opt-out for an open port. Kept apart from NodeConfig for now (flags only;
// to be folded into the config table).
//
// Safe by default: a server whose --listen is not a loopback address refuses
// to start without TLS and a token file unless `insecure` is set.
#pragma once

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "server/base/tls_credentials.h"

namespace strata {

struct SecurityConfig {
  TlsFiles tls;             // --tls-cert, --tls-key, --tls-client-ca
  std::string auth_tokens;  // --auth-tokens FILE: bearer tokens with roles (server/rpc/auth.h)
  bool insecure = false;    // --insecure: serve a non-loopback address without TLS and tokens
};

// Credentials for the channels this process opens to other nodes (peer
// clients). Set once by Server::Start before the cluster starts; plaintext
// until then. Thread-safe.
void SetPeerChannelCredentials(std::shared_ptr<grpc::ChannelCredentials> credentials);
std::shared_ptr<grpc::ChannelCredentials> PeerChannelCredentials();

}  // namespace strata
