// A resume token: all a trainer needs to continue an epoch after a restart,
// on any number of ranks that divides the same global batch.
//
// Text form (format 2, written since tokens carry the whole plan):
//   "strata2:<dataset>@<version>:<plan hash, 16 hex>:<global batch>:<short|drop>:<sampler, hex or
//   ->:<seed>:<epoch>:<step>"
// The sampler is the stream's SamplerSpec in protobuf wire form, hex-encoded
// ("-" when empty, i.e. the default shuffle). Format 1 tokens
//   "strata1:<dataset>@<version>:<plan hash>:<seed>:<epoch>:<step>"
// still decode, with complete() false: resuming them needs the batch size,
// sampler and remainder from the caller, as before.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata {

struct ResumeToken {
  std::string dataset;  // name, without version
  uint64_t version = 0;
  // The hash of the stream's plan, as its server computed it; 0 (never a
  // plan's hash) in a token taken before the stream's first part, which skips
  // the resume's plan check. Format 1 tokens must have one.
  uint64_t plan_hash = 0;
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t step = 0;  // the next step to deliver

  // The plan beyond its hash (format 2), so that the token alone resumes the
  // stream. global_batch == 0 means a format 1 token that lacks them.
  uint64_t global_batch = 0;  // samples per step across all ranks
  bool drop_last = false;     // the remainder: true drops the last short global batch
  std::string sampler;        // SamplerSpec in protobuf wire form; empty: the default spec

  // True when the token carries the plan (format 2).
  bool complete() const { return global_batch != 0; }

  // Format 2 when complete(), else format 1.
  std::string Encode() const;
  // InvalidArgument on anything but a well-formed token of format 1 or 2.
  static Result<ResumeToken> Decode(std::string_view text);

  friend bool operator==(const ResumeToken&, const ResumeToken&) = default;
};

}  // namespace strata
