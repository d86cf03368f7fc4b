#include "server/base/tls_credentials.h"

#include <arpa/inet.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <unistd.h>

#include <cerrno>

namespace strata {

namespace {

Status Readable(const std::string& what, const std::string& path) {
  if (access(path.c_str(), R_OK) != 0) return ErrnoStatus(what + " " + path + " cannot be read", errno);
  return Status::OK();
}

}  // namespace

Status CheckTlsFiles(const TlsFiles& files) {
  if (files.cert.empty() != files.key.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  if (!files.enabled()) {
    if (!files.client_ca.empty()) return Status::InvalidArgument("--tls-client-ca needs --tls-cert and --tls-key");
    return Status::OK();
  }
  STRATA_RETURN_IF_ERROR(Readable("the certificate", files.cert));
  STRATA_RETURN_IF_ERROR(Readable("the private key", files.key));
  if (!files.client_ca.empty()) STRATA_RETURN_IF_ERROR(Readable("the client CA", files.client_ca));
  return Status::OK();
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const TlsFiles& files, const std::shared_ptr<grpc::AuthMetadataProcessor>& processor) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key, files.cert, files.client_ca, kCertRefreshSeconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!files.client_ca.empty()) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  auto creds = grpc::experimental::TlsServerCredentials(options);
  if (processor) creds->SetAuthMetadataProcessor(processor);
  return creds;
}

std::shared_ptr<grpc::ChannelCredentials> MakePeerChannelCredentials(const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureChannelCredentials();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key, files.cert, files.client_ca, kCertRefreshSeconds);
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_identity_key_cert_pairs();
  if (!files.client_ca.empty()) options.watch_root_certs();
  return grpc::experimental::TlsCredentials(options);
}

bool IsLoopbackListen(const std::string& host_port) {
  std::string host = host_port.substr(0, host_port.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  // 127.0.0.0/8 as an address, not a name that starts so (127.example.com may be anywhere).
  in_addr v4{};
  return host == "localhost" || host == "::1" ||
         (inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127);
}

}  // namespace strata
