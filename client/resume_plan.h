// The plan a resume token carries beyond its hash (sampler, remainder, global
// batch): recorded when a stream opens, applied when one resumes, so that a
// token alone continues a stream.
#pragma once

#include "common/status.h"
#include "strata/client.h"
#include "strata/resume_token.h"

namespace strata::client_internal {

// Fills position's plan fields from `options` (the sampler in deterministic
// wire form). REQUIRES: options passed CheckStreamOptions.
void RecordPlan(const StreamOptions& options, ResumeToken* position);

// For a complete token: sets options' sampler and remainder from the token,
// and batch_size from the global batch when it is 0. InvalidArgument, naming
// both sides, where the options disagree with the token: a batch size and
// world that do not make its global batch, a sampler (other than the default
// spec) or drop_last that differ. An incomplete (format 1) token leaves the
// options as they are.
Status ApplyPlan(const ResumeToken& token, StreamOptions* options);

}  // namespace strata::client_internal
