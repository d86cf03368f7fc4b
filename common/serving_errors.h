// The one error a node returns when a sample it must serve has no holder that
// is up: Unavailable, naming the shard and saying that its holders are down.
// The client recognises it (IsHoldersDown) as a fault of the cluster, not of
// the node that reports it: it waits for an excluded holder to come back
// before it gives up, and never excludes the reporter for it.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

inline constexpr std::string_view kHoldersDownMarker = "its holders are down";

// "Unavailable: no live holder of shard <shard>: its holders are down (<detail>)"
inline Status HoldersDown(std::string_view shard, std::string_view detail) {
  return Status::Unavailable("no live holder of shard " + std::string(shard) + ": " + std::string(kHoldersDownMarker) +
                             " (" + std::string(detail) + ")");
}

inline bool IsHoldersDown(const Status& s) {
  return s.code() == Code::kUnavailable && s.message().find(kHoldersDownMarker) != std::string::npos;
}

// What a node says of a version whose seal it has not seen: FailedPrecondition
// "dataset <name@N> is not sealed (<detail>)". A version being ingested is
// not sealed anywhere; one sealed already is still unsealed on a node that
// was down or just restarted when the seal went out, until the seal reaches
// it (docs/design.md, "Version numbers"). The client takes such a node for
// behind, as one that answers NotFound, and asks the others.
inline constexpr std::string_view kNotSealedMarker = " is not sealed (";

inline Status NotSealed(std::string_view dataset, std::string_view detail) {
  return Status::FailedPrecondition("dataset " + std::string(dataset) + std::string(kNotSealedMarker) +
                                    std::string(detail) + ")");
}

inline bool IsNotSealed(const Status& s) {
  return s.code() == Code::kFailedPrecondition && s.message().find(kNotSealedMarker) != std::string::npos;
}

// What a node (or the client's plan) says of a deleted version: final,
// FailedPrecondition "dataset '<name>' version <N> was deleted".
inline Status VersionDeleted(std::string_view dataset, uint64_t version) {
  return Status::FailedPrecondition("dataset '" + std::string(dataset) + "' version " + std::to_string(version) +
                                    " was deleted");
}

// Errors that every node would repeat: they end a client's stream, not its
// use of the node that returned them.
inline bool IsRequestError(const Status& s) {
  switch (s.code()) {
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kFailedPrecondition:
    case Code::kOutOfRange:
    case Code::kUnimplemented:
    case Code::kPermissionDenied:
    case Code::kUnauthenticated: return true;
    default: return false;
  }
}

}  // namespace strata
