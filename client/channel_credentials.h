// The client's channel credentials from ClientOptions: plaintext, TLS, mutual
// TLS, and a bearer token on every call.
//
// Thread-safety: a pure function (it reads the PEM files).
#pragma once

#include <grpcpp/security/credentials.h>

#include <memory>

#include "common/status.h"
#include "strata/client.h"

namespace strata::client_internal {

// InvalidArgument for a token without TLS or a certificate without its key;
// IOError naming a file that cannot be read.
Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const ClientOptions& options);

}  // namespace strata::client_internal
