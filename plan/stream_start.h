// Where a stream may start in an epoch plan: checked alike by a node that
// plans a stream and by a client that plans its own (client/stream_plan.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace strata {

// OK when `expected` (a resume token's plan hash; 0: none) is 0 or equals the
// plan's hash; FailedPrecondition otherwise: a token continues only its plan.
inline Status CheckResumedPlan(uint64_t expected, uint64_t plan_hash) {
  if (expected == 0 || expected == plan_hash) return Status::OK();
  return Status::FailedPrecondition(
      "the resume token belongs to a different plan (dataset version, sampler, global batch or remainder "
      "changed); start a new epoch or resume with the original settings");
}

// OK when `start` is a step of an epoch of `steps` steps, or its end.
inline Status CheckStartStep(uint64_t start, uint64_t steps) {
  if (start <= steps) return Status::OK();
  return Status::InvalidArgument("start step " + std::to_string(start) + " is past the end of the epoch (" +
                                 std::to_string(steps) + " steps)");
}

// The step after a stream's last: `start` + `max_steps` (0: no limit), at
// most the epoch's end (a max_steps of 2^64 - 1 means the rest of the epoch,
// not a sum that wraps), and `start` itself if that is past the end.
inline uint64_t EndStep(uint64_t start, uint64_t max_steps, uint64_t steps) {
  if (start >= steps) return start;
  return max_steps == 0 || max_steps >= steps - start ? steps : start + max_steps;
}

}  // namespace strata
