// AdminService: what `strata ls`, `describe`, `status` and `cluster` ask.
// Thin: each method calls a component and maps the status at the edge.
#pragma once

#include "server/cluster/cluster_view.h"
#include "server/cluster/node_status.h"
#include "server/storage/catalog.h"
#include "strata/v1/admin.grpc.pb.h"

namespace strata {

class AdminServiceImpl final : public v1::AdminService::CallbackService {
 public:
  // The pointers must outlive the service.
  AdminServiceImpl(const Catalog* catalog, const NodeStatus* status, const ClusterView* view)
      : catalog_(catalog), status_(status), view_(view) {}

  grpc::ServerUnaryReactor* ListDatasets(grpc::CallbackServerContext* context, const v1::ListDatasetsRequest* request,
                                         v1::ListDatasetsReply* reply) override;
  grpc::ServerUnaryReactor* DescribeDataset(grpc::CallbackServerContext* context,
                                            const v1::DescribeDatasetRequest* request,
                                            v1::DescribeDatasetReply* reply) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const v1::StatusRequest* request,
                                      v1::StatusReply* reply) override;
  grpc::ServerUnaryReactor* GetClusterMap(grpc::CallbackServerContext* context,
                                          const v1::GetClusterMapRequest* request, v1::ClusterMap* reply) override;

 private:
  const Catalog* const catalog_;
  const NodeStatus* const status_;
  const ClusterView* const view_;
};

}  // namespace strata
