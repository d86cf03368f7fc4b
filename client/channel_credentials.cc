#include "client/channel_credentials.h"

#include <fstream>
#include <sstream>

namespace strata::client_internal {

namespace {

Result<std::string> ReadPem(const std::string& what, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IOError("cannot read the " + what + " file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const ClientOptions& options) {
  if (options.tls_ca_file.empty()) {
    if (!options.token.empty()) {
      return Status::InvalidArgument("a token is sent only over TLS: give the servers' CA (--tls-ca)");
    }
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
      return Status::InvalidArgument("a client certificate needs TLS: give the servers' CA (--tls-ca)");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  grpc::SslCredentialsOptions ssl;
  auto ca = ReadPem("CA", options.tls_ca_file);
  if (!ca.ok()) return ca.status();
  ssl.pem_root_certs = std::move(ca).value();
  if (!options.tls_cert_file.empty()) {
    auto cert = ReadPem("certificate", options.tls_cert_file);
    if (!cert.ok()) return cert.status();
    auto key = ReadPem("private key", options.tls_key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = std::move(cert).value();
    ssl.pem_private_key = std::move(key).value();
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(ssl);
  if (!options.token.empty()) {
    creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(options.token));
  }
  return creds;
}

}  // namespace strata::client_internal
