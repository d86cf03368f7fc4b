#include "server/serve/stream_members.h"

#include <set>

namespace strata {

Status ValidateStreamMembers(const v1::StreamRequest& r) {
  if ((r.member_zones_size() != 0 && r.member_zones_size() != r.members_size()) ||
      (r.member_racks_size() != 0 && r.member_racks_size() != r.members_size())) {
    return Status::InvalidArgument("member_zones and member_racks must be empty or name every member");
  }
  if (std::set<std::string>(r.members().begin(), r.members().end()).size() != static_cast<size_t>(r.members_size())) {
    return Status::InvalidArgument("members lists a node twice");
  }
  return Status::OK();
}

std::vector<PlacementMember> StreamMembers(const v1::StreamRequest& r) {
  std::vector<PlacementMember> out;
  for (int i = 0; i < r.members_size(); ++i) {
    out.push_back({r.members(i), i < r.member_zones_size() ? r.member_zones(i) : "",
                   i < r.member_racks_size() ? r.member_racks(i) : ""});
  }
  return out;
}

std::vector<std::string> NearMembers(const v1::StreamRequest& r) {
  std::vector<std::string> out;
  if (r.zone().empty()) return out;
  for (int i = 0; i < r.members_size() && i < r.member_zones_size(); ++i) {
    if (r.member_zones(i) == r.zone()) out.push_back(r.members(i));
  }
  return out;
}

}  // namespace strata
