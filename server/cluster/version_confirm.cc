#include "server/cluster/version_confirm.h"

#include "common/grpc_status.h"
#include "common/input_limits.h"

namespace strata {

Result<v1::VersionMeta> ConfirmWithCoordinator(const v1::VersionRecord& claimed, const v1::ClusterMap& map,
                                               const std::string& self, PeerClients& peers,
                                               std::chrono::milliseconds timeout) {
  const v1::DatasetInfo& info = claimed.info();
  const std::string what = "dataset " + QuotePrefix(info.name()) + " version " + std::to_string(info.version());
  // A tombstone's authority is the node that deleted the version.
  const bool deleted = info.state() == v1::VERSION_DELETED;
  const std::string& authority = deleted ? claimed.deleted_by() : info.coordinator();
  if (authority == self) {
    return Status(Code::kPermissionDenied, what + (deleted ? " was deleted" : " is coordinated") +
                                               " by this node; only its own catalog changes it");
  }
  const v1::NodeInfo* coordinator = nullptr;
  for (const auto& n : map.nodes()) {
    if (n.id() == authority) coordinator = &n;
  }
  if (coordinator == nullptr) {
    return Status(Code::kPermissionDenied, what + " names " + (deleted ? "deleter " : "coordinator ") +
                                               QuotePrefix(authority) + ", which is not a member of this cluster");
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  // The coordinator is usually the sender, so up: a channel still backing off
  // from a refused connect (a node started before the other listened) waits
  // for its next attempt instead of failing at once.
  context.set_wait_for_ready(true);
  v1::ListVersionsRequest request;
  request.set_include_shards(true);
  request.set_dataset(info.name());
  request.set_version(info.version());
  v1::ListVersionsReply reply;
  Status s = FromGrpcStatus(peers.Peer(*coordinator)->ListVersions(&context, request, &reply));
  if (!s.ok()) return Status::Unavailable("cannot confirm " + what + " with " + coordinator->id() + ": " + s.ToString());
  for (const auto& meta : reply.versions()) {
    v1::VersionRecord theirs;
    if (!theirs.ParseFromString(meta.version_record())) continue;
    if (theirs.info().name() == info.name() && theirs.info().version() == info.version() &&
        theirs.info().state() == info.state() &&
        (deleted ? theirs.deleted_by() == coordinator->id() : theirs.info().coordinator() == coordinator->id())) {
      return meta;
    }
  }
  const char* state = info.state() == v1::VERSION_SEALED ? "sealed" : deleted ? "deleted" : "aborted";
  return Status(Code::kPermissionDenied, what + " is not " + state + " on " +
                                             (deleted ? "the node named as its deleter " : "its coordinator ") +
                                             coordinator->id());
}

}  // namespace strata
