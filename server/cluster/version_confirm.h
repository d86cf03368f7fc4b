// PutVersion tells a node that a version was sealed or aborted. The message is
// a claim, not a fact: anyone who can reach the peer port can send one. Before
// the catalog changes, the node asks the version's coordinator (the node the
// record says ingested it, found in this node's own cluster map, at the
// address the map gives) for its copy, and imports that copy, never the
// message. So only the node that created a version can make it visible or
// abort it, and a forged "name@99" naming a real node as its coordinator is
// refused because that node has no such version. A deleted version's claim
// (a tombstone) is confirmed the same way with the node it names as its
// deleter (deleted_by): any member may delete, and only a member's own
// tombstone is believed.
//
// Thread-safety: a function over its arguments; it makes one asynchronous RPC
// and holds no thread while it waits.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "common/status.h"
#include "server/cluster/peer_clients.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/storage.pb.h"

namespace strata {

// Asks the coordinator of the version `claimed` names for its own metadata
// (with shard records) and calls `done` with it, once. Errors:
// PermissionDenied if the coordinator is this node (`self`: its catalog is
// the truth) or not a member of `map`, or if the coordinator does not hold
// that version in the claimed state; Unavailable if it cannot be asked now
// (anti-entropy catches up later). A refusal found without asking runs `done`
// before this returns; otherwise `done` runs on a gRPC thread, so it must not
// block (post disk or catalog work to an executor).
void ConfirmWithCoordinator(const v1::VersionRecord& claimed, const v1::ClusterMap& map, const std::string& self,
                            PeerClients& peers, std::chrono::milliseconds timeout,
                            std::function<void(Result<v1::VersionMeta>)> done);

}  // namespace strata
