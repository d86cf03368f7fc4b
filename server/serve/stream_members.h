// A stream request's placement members: the node ids the client's map lists,
// with their zones and racks, from which every node of the stream places each
// shard the same way (common/placement.h), and the trainer's zone.
#pragma once

#include <string>
#include <vector>

#include "common/placement.h"
#include "common/status.h"
#include "strata/v1/data.pb.h"

namespace strata {

// InvalidArgument unless member_zones and member_racks are empty or name
// every member, and no member is listed twice. Bytes from the network: call
// before the two below.
Status ValidateStreamMembers(const v1::StreamRequest& r);

// The members with their domains. REQUIRES: ValidateStreamMembers(r) is OK.
std::vector<PlacementMember> StreamMembers(const v1::StreamRequest& r);

// The members in the trainer's zone (r.zone()), whose holders serve its
// samples first; empty when the trainer names no zone.
std::vector<std::string> NearMembers(const v1::StreamRequest& r);

}  // namespace strata
