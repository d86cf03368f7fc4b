// etcd membership: leases, the cluster map under one key, a watch. See membership.h.
#pragma once

#include <memory>

#include "server/cluster/membership.h"

namespace strata {

// REQUIRES: config.cluster.membership == "etcd" and etcd_endpoints non-empty.
std::unique_ptr<Membership> NewEtcdMembership(const NodeConfig& config, const v1::NodeInfo& self);

}  // namespace strata
