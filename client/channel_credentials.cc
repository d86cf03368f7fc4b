#include "client/channel_credentials.h"

#include <fstream>
#include <sstream>
#include <string_view>

namespace strata::client_internal {

namespace {

// The file's text, which must hold a PEM block of the kind named by `marker`
// ("CERTIFICATE", or "PRIVATE KEY" for any key type): a wrong file is named
// here, where gRPC would fail later with a handshake or channel error.
Result<std::string> ReadPem(const std::string& what, const std::string& path, const std::string& marker) {
  std::ifstream in(path);
  if (!in) return Status::IOError("cannot read the " + what + " file " + path);
  std::stringstream text;
  text << in.rdbuf();
  std::string pem = text.str();
  // Any block will do (an EC key file starts with its parameters' block).
  constexpr std::string_view kBegin = "-----BEGIN ";
  for (size_t at = pem.find(kBegin); at != std::string::npos; at = pem.find(kBegin, at + 1)) {
    const size_t label = at + kBegin.size();
    const size_t end = pem.find("-----", label);
    if (end != std::string::npos && pem.substr(label, end - label).find(marker) != std::string::npos) return pem;
  }
  return Status::InvalidArgument("the " + what + " file " + path + " holds no PEM " + marker + " (a '-----BEGIN ..." +
                                 marker + "-----' block)");
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
  auto ca = ReadPem("CA", options.tls_ca_file, "CERTIFICATE");
  if (!ca.ok()) return ca.status();
  ssl.pem_root_certs = std::move(ca).value();
  if (!options.tls_cert_file.empty()) {
    auto cert = ReadPem("certificate", options.tls_cert_file, "CERTIFICATE");
    if (!cert.ok()) return cert.status();
    auto key = ReadPem("private key", options.tls_key_file, "PRIVATE KEY");
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
