#include "server/rpc/auth.h"

#include <fstream>
#include <sstream>

#include "common/call_metadata.h"
#include "common/checksum.h"

namespace strata {

namespace {

constexpr size_t kMinTokenBytes = 16;
constexpr size_t kMaxTokenBytes = 512;

// Tokens are kept and looked up by a digest, so the table never holds them and
// a lookup does not compare secrets byte by byte.
std::string Digest(std::string_view token) {
  const Hash128 h = ContentHash(token);
  return std::to_string(h.hi) + ":" + std::to_string(h.lo);
}

std::optional<Role> ParseRole(std::string_view word) {
  if (word == "reader") return Role::kReader;
  if (word == "writer") return Role::kWriter;
  if (word == "admin") return Role::kAdmin;
  return std::nullopt;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kReader: return "reader";
    case Role::kWriter: return "writer";
    case Role::kAdmin: return "admin";
  }
  return "?";
}

MethodRule RuleFor(std::string_view method) {
  if (method.rfind("/strata.v1.PeerService/", 0) == 0) return {true, Role::kAdmin};
  if (method == "/strata.v1.DataService/Ingest") return {false, Role::kWriter};
  if (method == "/strata.v1.AdminService/DeleteVersion") return {false, Role::kAdmin};
  if (method == "/strata.v1.DataService/StreamBatches" || method == "/strata.v1.DataService/ServeWork" ||
      method == "/strata.v1.DataService/ReadStratumIndex" || method.rfind("/strata.v1.AdminService/", 0) == 0 ||
      method == "/grpc.health.v1.Health/Check") {
    return {false, Role::kReader};
  }
  return {false, Role::kAdmin};
}

Result<TokenTable> TokenTable::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IOError("cannot read the token file " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto table = Parse(text.str());
  if (!table.ok()) return table.status().WithContext(path);
  return table;
}

Result<TokenTable> TokenTable::Parse(std::string_view text) {
  TokenTable table;
  size_t line_no = 0;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    ++line_no;
    std::istringstream words(line);
    std::string role, token;
    if (!(words >> role) || role[0] == '#') continue;
    const std::string where = "line " + std::to_string(line_no);
    auto parsed = ParseRole(role);
    if (!parsed) return Status::InvalidArgument(where + ": the role must be reader, writer or admin");
    if (!(words >> token)) return Status::InvalidArgument(where + ": no token after the role");
    if (token.size() < kMinTokenBytes || token.size() > kMaxTokenBytes) {
      return Status::InvalidArgument(where + ": a token must be 16 to 512 characters");
    }
    table.roles_[Digest(token)] = *parsed;
  }
  // No token at all would refuse every call: a file caught mid-rewrite, most
  // likely (SIGHUP then keeps the old tokens).
  if (table.roles_.empty()) return Status::InvalidArgument("no tokens: every call would be refused");
  return table;
}

std::optional<Role> TokenTable::Find(std::string_view token) const {
  if (token.size() > kMaxTokenBytes) return std::nullopt;
  auto it = roles_.find(Digest(token));
  if (it == roles_.end()) return std::nullopt;
  return it->second;
}

Result<std::shared_ptr<AuthProcessor>> AuthProcessor::Create(Options options) {
  std::shared_ptr<AuthProcessor> p(new AuthProcessor(std::move(options)));
  STRATA_RETURN_IF_ERROR(p->Reload());
  return p;
}

Status AuthProcessor::Reload() {
  if (options_.tokens_path.empty()) return Status::OK();
  auto table = TokenTable::Load(options_.tokens_path);
  if (!table.ok()) return table.status();
  auto shared = std::make_shared<const TokenTable>(std::move(table).value());
  std::lock_guard lock(mu_);
  tokens_ = std::move(shared);
  return Status::OK();
}

bool AuthProcessor::IsNodePeer(const grpc::AuthContext& context) const {
  if (!options_.is_node) return false;
  for (const char* property : {"x509_common_name", "x509_subject_alternative_name"}) {
    for (const grpc::string_ref& id : context.FindPropertyValues(property)) {
      if (options_.is_node(std::string_view(id.data(), id.size()))) return true;
    }
  }
  return false;
}

grpc::Status AuthProcessor::Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                                    OutputMetadata* consumed_auth_metadata, OutputMetadata*) {
  std::string_view method;
  std::optional<std::string_view> authorization;
  bool keep_versions = false;
  for (const auto& [key, value] : auth_metadata) {
    const std::string_view k(key.data(), key.size());
    if (k == ":path") method = std::string_view(value.data(), value.size());
    if (k == kKeepVersionsMetadataKey) keep_versions = true;
    if (k == "authorization") {
      authorization = std::string_view(value.data(), value.size());
      consumed_auth_metadata->emplace("authorization", std::string(*authorization));
    }
  }
  MethodRule rule = RuleFor(method);
  // An ingest with retention deletes versions (common/call_metadata.h).
  const bool retention = keep_versions && method == "/strata.v1.DataService/Ingest";
  if (retention) rule.role = Role::kAdmin;
  const bool node = IsNodePeer(*context);
  if (rule.peer && options_.require_node_cert) {
    if (node) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "the peer service is for cluster nodes: it needs a client certificate whose CN or subject "
                        "alternative name is a member's node id");
  }
  std::shared_ptr<const TokenTable> tokens;
  {
    std::lock_guard lock(mu_);
    tokens = tokens_;
  }
  // Without mTLS, nothing identifies a node: with tokens, the peer service
  // then needs an admin token (so a cluster with tokens needs --tls-client-ca).
  if (!tokens || node) return grpc::Status::OK;
  if (!authorization) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "this server needs a token: pass --token-file FILE or set $STRATA_TOKEN");
  }
  std::string_view token = *authorization;
  if (token.rfind("Bearer ", 0) == 0) token.remove_prefix(7);
  const std::optional<Role> role = tokens->Find(token);
  if (!role) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the token is not known to this server");
  if (*role < rule.role) {
    const std::string what = retention ? "ingest with keep_versions (it deletes older versions)"
                                       : "call " + std::string(method.substr(0, 80));
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "a " + std::string(RoleName(*role)) + " token cannot " +
                                                                 what + ": it needs " +
                                                                 std::string(RoleName(rule.role)));
  }
  return grpc::Status::OK;
}

}  // namespace strata
