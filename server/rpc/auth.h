// Who may call what: bearer tokens with roles, and node certificates for the
// peer service, checked in one place for every call (a gRPC
// AuthMetadataProcessor, which runs before any handler).
//
// Roles, each including the one before it:
//   reader  stream, list, describe, status, cluster map, gRPC health check
//   writer  reader + ingest
//   admin   writer + anything that changes the cluster or deletes
// The peer service (replication, repair, version metadata) is for cluster
// nodes only: with --tls-client-ca it needs a client certificate whose CN, or
// one of whose subject alternative names, is the node id of a cluster member.
// Without --tls-client-ca nothing identifies a node: with a token file the
// peer service then needs an admin token (a cluster with tokens therefore
// needs mTLS). A node's certificate also counts as an admin token on the
// other services.
//
// No or an unknown token: UNAUTHENTICATED; a token whose role is too low, or a
// peer call without a node certificate: PERMISSION_DENIED. The token is
// removed from the call's metadata once checked, and never logged.
//
// An Ingest call that carries kKeepVersionsMetadataKey (common/call_metadata.h:
// its retention deletes versions) needs admin; the ingest handler refuses
// keep_versions on a call without that key where tokens are on.
//
// Token file: one token a line, "<role> <token> [comment]"; blank lines and
// lines starting with '#' are skipped. Tokens are at least 16 characters; a
// file without any is refused (it would lock every client out).
//
// Thread-safety: AuthProcessor is safe for concurrent use; Reload may run at
// any time (SIGHUP) and applies to the calls that start after it.
#pragma once

#include <grpcpp/security/auth_metadata_processor.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"

namespace strata {

enum class Role : uint8_t { kReader = 1, kWriter = 2, kAdmin = 3 };

std::string_view RoleName(Role role);

// What a method ("/strata.v1.DataService/Ingest") needs. Unknown methods need admin.
struct MethodRule {
  bool peer = false;  // the peer service: a node certificate
  Role role = Role::kAdmin;
};
MethodRule RuleFor(std::string_view method);

class TokenTable {
 public:
  // InvalidArgument (naming the line, never the token) on a malformed file.
  static Result<TokenTable> Load(const std::string& path);
  static Result<TokenTable> Parse(std::string_view text);
  std::optional<Role> Find(std::string_view token) const;
  size_t size() const { return roles_.size(); }

 private:
  std::unordered_map<std::string, Role> roles_;  // by the token's XXH3-128 digest, not the token
};

class AuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  struct Options {
    std::string tokens_path;                        // empty: no tokens needed on the data and admin services
    bool require_node_cert = false;                 // the peer service needs a node certificate (mTLS)
    std::function<bool(std::string_view)> is_node;  // is this id a cluster member?
  };
  // Loads the token file. InvalidArgument/IOError if it cannot be read.
  static Result<std::shared_ptr<AuthProcessor>> Create(Options options);

  // Re-reads the token file; on an error the old tokens stay in force.
  Status Reload();

  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata, OutputMetadata* response_metadata) override;

 private:
  explicit AuthProcessor(Options options) : options_(std::move(options)) {}
  bool IsNodePeer(const grpc::AuthContext& context) const;

  const Options options_;
  mutable std::mutex mu_;
  std::shared_ptr<const TokenTable> tokens_;  // GUARDED_BY(mu_); null: no token file
};

}  // namespace strata
