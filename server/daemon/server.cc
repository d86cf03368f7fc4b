#include "server/daemon/server.h"

#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

namespace strata {

Result<std::unique_ptr<Server>> Server::Start(const NodeConfig& config, const SecurityConfig& security) {
  STRATA_RETURN_IF_ERROR(CheckTlsFiles(security.tls));
  if (!security.auth_tokens.empty() && !security.tls.enabled()) {
    return Status::InvalidArgument("--auth-tokens needs --tls-cert and --tls-key: a token sent in plaintext can be "
                                   "read by anyone on the network");
  }
  if (!IsLoopbackListen(config.listen) && !security.insecure &&
      (!security.tls.enabled() || security.auth_tokens.empty())) {
    return Status::FailedPrecondition(
        "refusing to serve " + config.listen + " without TLS and tokens: give --tls-cert, --tls-key and "
        "--auth-tokens (and --tls-client-ca for a cluster), or --insecure to let anyone who reaches the port read, "
        "write and delete data");
  }
  std::unique_ptr<Server> server(new Server());
  auto node = Node::Open(config);
  if (!node.ok()) return node.status();
  server->node_ = std::move(node).value();

  std::string host;
  int port = 0;
  if (!config.metrics_listen.empty()) {
    STRATA_RETURN_IF_ERROR(server->node_->metrics().StartExposer(config.metrics_listen));
    STRATA_RETURN_IF_ERROR(ParseHostPort(config.metrics_listen, &host, &port));
    server->metrics_address_ = host + ":" + std::to_string(server->node_->metrics().exposer_port());
  }

  server->data_ = std::make_unique<DataServiceImpl>(server->node_.get());
  server->admin_ = std::make_unique<AdminServiceImpl>(server->node_.get());
  server->peer_ = std::make_unique<PeerServiceImpl>(server->node_.get());
  grpc::EnableDefaultHealthCheckService(true);
  if (security.tls.enabled()) {
    Node* core = server->node_.get();
    auto auth = AuthProcessor::Create({security.auth_tokens, !security.tls.client_ca.empty(),
                                       [core](std::string_view id) {
                                         const v1::ClusterMap map = core->cluster_map();
                                         for (const auto& n : map.nodes()) {
                                           if (n.id() == id) return true;
                                         }
                                         return false;
                                       }});
    if (!auth.ok()) {
      server->node_->Close().IgnoreError();
      return auth.status();
    }
    server->auth_ = std::move(auth).value();
    SetPeerChannelCredentials(MakePeerChannelCredentials(security.tls));
  }
  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(config.listen, MakeServerCredentials(security.tls, server->auth_), &bound_port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes));
  builder.SetMaxSendMessageSize(-1);  // batches are bounded by max_part_bytes instead
  // Keepalive, set deliberately (README, "Keepalives and timeouts"): the
  // server pings a silent client every 60 s and drops the connection after
  // 20 s without an answer (a crashed trainer's streams stop holding memory);
  // it accepts the clients' 30 s keepalive pings, with or without calls, and
  // never closes a connection for pinging (a too_many_pings GOAWAY would end
  // every stream on it: a failover with no fault).
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10 * 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.RegisterService(server->data_.get());
  builder.RegisterService(server->admin_.get());
  builder.RegisterService(server->peer_.get());
  server->grpc_ = builder.BuildAndStart();
  if (!server->grpc_ || bound_port == 0) {
    server->node_->Close().IgnoreError();  // the bind failure is the error to report
    return Status::Unavailable("cannot listen on " + config.listen + " (is another process using it?)");
  }
  STRATA_RETURN_IF_ERROR(ParseHostPort(config.listen, &host, &port));
  server->address_ = host + ":" + std::to_string(bound_port);

  // Join the cluster under the address others can use.
  v1::NodeInfo self;
  self.set_id(config.node_id);
  self.set_address(config.cluster.advertise.empty() ? server->address_ : config.cluster.advertise);
  self.set_metrics_address(server->metrics_address_);
  self.set_state(v1::NODE_UP);
  STRATA_RETURN_IF_ERROR(server->node_->StartCluster(self));
  if (!config.metrics_listen.empty()) {
    server->node_->metrics().SetReadiness([s = server.get()] { return s->NotReadyReason(); });
  }
  server->grpc_->GetHealthCheckService()->SetServingStatus(true);
  return server;
}

Server::~Server() { Stop().IgnoreError(); }

Status Server::Reload() { return auth_ ? auth_->Reload() : Status::OK(); }

Status Server::Stop() {
  if (stopped_) return Status::OK();
  stopped_ = true;
  if (grpc_) {
    const auto timeout = std::chrono::milliseconds(node_->config().drain_timeout_ms);
  spdlog::info("draining: {} streams and {} ingests open; waiting up to {} ms", node_->active_streams().load(),
                 node_->active_ingests().load(), timeout.count());
    draining_ = true;
    // From here /readyz no longer calls into this Server, which may be
    // destroyed before the exposer (owned by the node) stops.
    node_->metrics().SetReadiness([] { return std::string("draining: shutting down"); });
    grpc_->GetHealthCheckService()->SetServingStatus(false);
    data_->BeginDrain();
    // Streams end after their current batch and new ones are refused; ingests
    // get the drain time to commit. gRPC's own Shutdown would also wait out its
    // deadline for connections that are merely open (an idle trainer's channel),
    // so wait for our calls here and then shut gRPC down at once.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while ((node_->active_streams().load() > 0 || node_->active_ingests().load() > 0) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    grpc_->Shutdown(std::chrono::system_clock::now());  // cancels whatever is left
    grpc_->Wait();
  }
  if (!node_) return Status::OK();  // Start failed before the node opened
  Status closed = node_->Close();
  spdlog::info("stopped: storage closed{}", closed.ok() ? "" : " with an error: " + closed.ToString());
  return closed;
}

std::string Server::NotReadyReason() const {
  if (draining_) return "draining: shutting down";
  const v1::ClusterMap map = node_->cluster_map();
  const v1::NodeInfo* self = FindNode(map, node_->config().node_id);
  if (self == nullptr) return "not in the cluster map yet (membership not joined)";
  if (self->state() != v1::NODE_UP) return "the cluster map does not have this node up";
  return "";
}

}  // namespace strata
