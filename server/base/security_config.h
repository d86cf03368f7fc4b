// stratad's security settings: TLS files, the token file, and the explicit
// opt-out for an open port, as the server takes them. The files are settings
// of NodeConfig (tls.cert, tls.key, tls.client_ca, auth_tokens: in the YAML
// file or as flags); the opt-out is stratad's --insecure flag alone.
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
