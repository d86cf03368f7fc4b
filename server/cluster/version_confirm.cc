#include "server/cluster/version_confirm.h"

#include <memory>

#include "common/grpc_status.h"
#include "common/input_limits.h"
#include "server/base/grpc_handoff.h"

namespace strata {

namespace {

// One confirmation in flight: what the callback needs, alive until it runs.
struct Confirmation {
  v1::VersionRecord claimed;
  std::string authority;  // the coordinator, or the deleter of a tombstone
  std::string what;       // "dataset 'x' version N", for errors
  grpc::ClientContext context;
  v1::ListVersionsRequest request;
  v1::ListVersionsReply reply;
  std::function<void(Result<v1::VersionMeta>)> done;
};

bool Deleted(const v1::VersionRecord& r) { return r.info().state() == v1::VERSION_DELETED; }

// The authority's copy of the claimed version from its reply, if it holds it
// in the claimed state.
Result<v1::VersionMeta> Match(const Confirmation& c) {
  const v1::DatasetInfo& info = c.claimed.info();
  const bool deleted = Deleted(c.claimed);
  for (const auto& meta : c.reply.versions()) {
    v1::VersionRecord theirs;
    if (!theirs.ParseFromString(meta.version_record())) continue;
    if (theirs.info().name() == info.name() && theirs.info().version() == info.version() &&
        theirs.info().state() == info.state() &&
        (deleted ? theirs.deleted_by() == c.authority : theirs.info().coordinator() == c.authority)) {
      return meta;
    }
  }
  const char* state = info.state() == v1::VERSION_SEALED ? "sealed" : deleted ? "deleted" : "aborted";
  return Status(Code::kPermissionDenied, c.what + " is not " + state + " on " +
                                             (deleted ? "the node named as its deleter " : "its coordinator ") +
                                             c.authority);
}

}  // namespace

void ConfirmWithCoordinator(const v1::VersionRecord& claimed, const v1::ClusterMap& map, const std::string& self,
                            PeerClients& peers, std::chrono::milliseconds timeout,
                            std::function<void(Result<v1::VersionMeta>)> done) {
  const v1::DatasetInfo& info = claimed.info();
  auto c = std::make_shared<Confirmation>();
  c->what = "dataset " + QuotePrefix(info.name()) + " version " + std::to_string(info.version());
  // A tombstone's authority is the node that deleted the version.
  const bool deleted = Deleted(claimed);
  c->authority = deleted ? claimed.deleted_by() : info.coordinator();
  if (c->authority == self) {
    return done(Status(Code::kPermissionDenied, c->what + (deleted ? " was deleted" : " is coordinated") +
                                                    " by this node; only its own catalog changes it"));
  }
  const v1::NodeInfo* coordinator = nullptr;
  for (const auto& n : map.nodes()) {
    if (n.id() == c->authority) coordinator = &n;
  }
  if (coordinator == nullptr) {
    return done(Status(Code::kPermissionDenied, c->what + " names " + (deleted ? "deleter " : "coordinator ") +
                                                    QuotePrefix(c->authority) +
                                                    ", which is not a member of this cluster"));
  }
  c->claimed = claimed;
  c->done = std::move(done);
  c->context.set_deadline(std::chrono::system_clock::now() + timeout);
  // The coordinator is usually the sender, so up: a channel still backing off
  // from a refused connect (a node started before the other listened) waits
  // for its next attempt instead of failing at once.
  c->context.set_wait_for_ready(true);
  c->request.set_include_shards(true);
  c->request.set_dataset(info.name());
  c->request.set_version(info.version());
  HandOffToGrpc(c.get());
  peers.Peer(*coordinator)->async()->ListVersions(&c->context, &c->request, &c->reply, [c](grpc::Status s) {
    TakeBackFromGrpc(c.get());
    Status status = FromGrpcStatus(s);
    if (!status.ok()) {
      return c->done(
          Status::Unavailable("cannot confirm " + c->what + " with " + c->authority + ": " + status.ToString()));
    }
    c->done(Match(*c));
  });
}

}  // namespace strata
