// The errors an ingest with several writers reports when the version was
// aborted under it: one writer's failure (or an operator's `strata rm
// --abort`) aborts the version for every writer, and the others then fail
// with one of these, a consequence rather than a cause. The nodes build them
// here and `strata ingest --writers` recognises them (IsVersionAbortedError),
// to show the failing writer's own error rather than another's "was aborted".
//
//   IngestAborted:         the home, to a writer that joins, sends a part or
//                          commits: "ingest ID was aborted: WHY"
//   IngestAbortedForAll:   a writer's node, when its session fails because
//                          the version's record is aborted or deleted
//   VersionDeadOnArrival:  a node a replica was sent to, when the version
//                          died while the copy was in flight; the sender
//                          quotes it inside its "too few copies" error
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

inline constexpr std::string_view kIngestAbortedMarker = " was aborted";
inline constexpr std::string_view kVersionDeadMarker = " was deleted or aborted";

// FailedPrecondition "ingest <id> was aborted: <why>".
inline Status IngestAborted(std::string_view ingest_id, std::string_view why) {
  return Status::FailedPrecondition("ingest " + std::string(ingest_id) + std::string(kIngestAbortedMarker) + ": " +
                                    std::string(why));
}

// FailedPrecondition "ingest <id> was aborted for every writer (...);
// nothing was stored (here: <detail>)".
inline Status IngestAbortedForAll(std::string_view ingest_id, std::string_view detail) {
  return Status::FailedPrecondition("ingest " + std::string(ingest_id) + std::string(kIngestAbortedMarker) +
                                    " for every writer (another writer failed, the coordinator refused a part, or an "
                                    "operator aborted it); nothing was stored (here: " +
                                    std::string(detail) + ")");
}

// FailedPrecondition "dataset version <name>@<version> was deleted or aborted".
inline Status VersionDeadOnArrival(std::string_view dataset, uint64_t version) {
  return Status::FailedPrecondition("dataset version " + std::string(dataset) + "@" + std::to_string(version) +
                                    std::string(kVersionDeadMarker));
}

// Whether `s` is (or quotes, as a sender's "too few copies" error quotes its
// last push's) one of the errors above, whatever its code.
inline bool IsVersionAbortedError(const Status& s) {
  return s.message().find(kIngestAbortedMarker) != std::string::npos ||
         s.message().find(kVersionDeadMarker) != std::string::npos;
}

}  // namespace strata
