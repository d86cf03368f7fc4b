// A resume token: all a trainer needs to continue an epoch after a restart,
// on any number of ranks that divides the same global batch.
//
// Text form: "strata1:<dataset>@<version>:<plan hash, 16 hex>:<seed>:<epoch>:<step>"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata {

struct ResumeToken {
  std::string dataset;  // name, without version
  uint64_t version = 0;
  uint64_t plan_hash = 0;  // the hash of the stream's plan, as its server computed it
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t step = 0;  // the next step to deliver

  std::string Encode() const;
  // InvalidArgument on anything but a well-formed token.
  static Result<ResumeToken> Decode(std::string_view text);

  friend bool operator==(const ResumeToken&, const ResumeToken&) = default;
};

}  // namespace strata
