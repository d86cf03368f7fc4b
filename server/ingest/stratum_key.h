// How a sample's stratum key is derived from its fields at ingest.
//
// The key's parts are the stratify_by names in the order given (default:
// ["label"]): "label" is the sample's label and any other name the attribute
// of that name ("" if absent). With a time bucket (field F, width W), the part
// named F is the bucket of F's timestamp (server/ingest/time_bucket.h); if F is not
// among stratify_by, the bucket is added as a last part named F. One part
// gives the key as its bare value; several give "name=value|name=value".
//
//   stratify_by          time bucket   key
//   (default)            -             cat
//   label,source         -             label=cat|source=web
//   (default)            ts:1d         label=cat|ts=2024-01-31
//   label,source         ts:1h         label=cat|source=web|ts=2024-01-31T06:00:00Z
//   ts                   ts:1d         2024-01-31
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "strata/v1/types.pb.h"

namespace strata {

class StratumKeyer {
 public:
  // InvalidArgument for an empty or repeated key name, or a time bucket with
  // a field but no width (or a width but no field).
  static Result<StratumKeyer> Create(std::vector<std::string> stratify_by, std::string time_field,
                                     uint64_t time_bucket_seconds);

  // The stratum key of `sample`. InvalidArgument, naming the sample's key, if
  // the time field is missing or is not a timestamp.
  Result<std::string> KeyOf(const v1::Sample& sample) const;

  const std::vector<std::string>& stratify_by() const { return by_; }

 private:
  std::vector<std::string> by_;
  std::vector<std::string> parts_;  // by_, plus the time field if it is not among them
  std::string time_field_;
  uint64_t bucket_seconds_ = 0;
};

}  // namespace strata
