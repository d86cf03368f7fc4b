// stratad's transport security: TLS (and mutual TLS) credentials from files,
// for its own port and for the channels it opens to other nodes.
//
// Certificates and keys are PEM files, watched by gRPC's file-watcher
// provider, which re-reads them every kCertRefreshSeconds. stratad hands it
// copies that only SIGHUP replaces, after checking the new files
// (server/base/tls_reload.h).
//
// Thread-safety: pure functions.
#pragma once

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace strata {

inline constexpr unsigned kCertRefreshSeconds = 5;

struct TlsFiles {
  std::string cert;       // this node's certificate chain (server and, to peers, client)
  std::string key;        // its private key
  std::string client_ca;  // CA that signs client certificates; set: mTLS, clients must present one
  bool enabled() const { return !cert.empty(); }
};

// Checks that the files are readable (cert and key both set or both empty;
// client_ca only with them). InvalidArgument/IOError naming the file.
Status CheckTlsFiles(const TlsFiles& files);

// Plaintext when !files.enabled(); otherwise TLS, requiring and verifying a
// client certificate when files.client_ca is set. `processor` (may be null)
// checks every call (server/rpc/auth.h).
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const TlsFiles& files, const std::shared_ptr<grpc::AuthMetadataProcessor>& processor);

// For this node's channels to other nodes: plaintext when !files.enabled();
// otherwise TLS verified against files.client_ca (the cluster's CA), this
// node's certificate presented as its client certificate.
std::shared_ptr<grpc::ChannelCredentials> MakePeerChannelCredentials(const TlsFiles& files);

// True for 127.0.0.0/8, ::1, [::1] and localhost (the host part of HOST:PORT).
bool IsLoopbackListen(const std::string& host_port);

}  // namespace strata
