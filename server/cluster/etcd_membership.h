// etcd membership: leases, the cluster map under one key, a watch. See membership.h.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "server/cluster/membership.h"

namespace strata {

// REQUIRES: config.cluster.membership == "etcd" and etcd_endpoints non-empty.
// `executor`: see EtcdMembership; `disk`: see Membership::Create.
std::unique_ptr<Membership> NewEtcdMembership(const NodeConfig& config, const v1::NodeInfo& self,
                                              boost::asio::any_io_executor executor, const DiskSpace* disk = nullptr);

}  // namespace strata
