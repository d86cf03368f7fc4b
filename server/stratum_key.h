// How a sample's stratum key is derived from its fields at ingest.
//
// With stratify_by = ["label"] (the default) the key is the label itself.
// With several keys it is "k1=v1|k2=v2" in the order given, where "label" is
// the label and any other name is the attribute of that name ("" if absent).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "strata/v1/types.pb.h"

namespace strata {

class StratumKeyer {
 public:
  // InvalidArgument for an empty or repeated key name.
  static Result<StratumKeyer> Create(std::vector<std::string> stratify_by, std::string time_field,
                                     uint64_t time_bucket_seconds);

  // The stratum key of `sample`. InvalidArgument if the time field does not
  // parse as a timestamp.
  Result<std::string> KeyOf(const v1::Sample& sample) const;

  const std::vector<std::string>& stratify_by() const { return by_; }

 private:
  std::vector<std::string> by_;
  std::string time_field_;
  uint64_t bucket_seconds_ = 0;
};

}  // namespace strata
