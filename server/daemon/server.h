// stratad composed: a Node (storage and core), its gRPC services, and the
// Prometheus exposer. Shutdown is designed in: stop accepting, drain streams,
// cancel what is left after the drain timeout, then close storage.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

#include "server/base/config.h"
#include "server/base/security_config.h"
#include "server/daemon/node.h"
#include "server/rpc/auth.h"
#include "server/rpc/peer_service.h"
#include "server/rpc/services.h"

namespace strata {

class Server {
 public:
  // Opens the node and starts serving. Unavailable if an address cannot be
  // bound; FailedPrecondition for a non-loopback address without TLS and
  // tokens (unless security.insecure); the node's errors otherwise.
  static Result<std::unique_ptr<Server>> Start(const NodeConfig& config, const SecurityConfig& security = {});
  ~Server();

  // The bound gRPC address ("127.0.0.1:43121" when the config said port 0).
  const std::string& address() const { return address_; }
  // The bound metrics address, or "" when metrics are off.
  const std::string& metrics_address() const { return metrics_address_; }
  Node& node() { return *node_; }

  // SIGHUP: re-reads the token file (certificates are watched on their own).
  // On an error the old tokens stay in force.
  Status Reload();

  // Drains and stops; blocks until storage is closed. Idempotent.
  Status Stop();

  // "" when the node is ready to serve: storage open, this node up in its own
  // cluster map (membership joined), not draining; else why not. Answers
  // /readyz; the gRPC health service (grpc.health.v1.Health, service "") says
  // SERVING from the end of Start until the drain begins.
  std::string NotReadyReason() const;

 private:
  Server() = default;

  std::unique_ptr<Node> node_;
  std::unique_ptr<DataServiceImpl> data_;
  std::unique_ptr<AdminServiceImpl> admin_;
  std::unique_ptr<PeerServiceImpl> peer_;
  std::shared_ptr<AuthProcessor> auth_;
  std::unique_ptr<grpc::Server> grpc_;
  std::string address_;
  std::string metrics_address_;
  bool stopped_ = false;
  std::atomic<bool> draining_{false};
};

// stratad's main: flags, config, logging, serve until SIGTERM or SIGINT.
// Returns the process exit status (0 after a clean shutdown).
int RunStratad(int argc, char** argv);

}  // namespace strata
