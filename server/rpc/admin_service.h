// AdminService: what `strata ls`, `describe`, `status`, `cluster` and `rm`
// ask. Thin: each method calls a component and maps the status at the edge.
#pragma once

#include <boost/asio/thread_pool.hpp>

#include "server/cluster/cluster_view.h"
#include "server/cluster/ingest_abort.h"
#include "server/cluster/node_status.h"
#include "server/cluster/version_delete.h"
#include "server/storage/catalog.h"
#include "strata/v1/admin.grpc.pb.h"

namespace strata {

class AdminServiceImpl final : public v1::AdminService::CallbackService {
 public:
  // The pointers must outlive the service. DeleteVersion runs on `executor`
  // (it blocks for the broadcast to the other nodes). `aborter`: what a
  // delete with abort_ingest calls first (nullptr: such deletes are refused).
  AdminServiceImpl(const Catalog* catalog, const NodeStatus* status, const ClusterView* view, VersionDeleter* deleter,
                   IngestAborter* aborter, boost::asio::thread_pool::executor_type executor)
      : catalog_(catalog), status_(status), view_(view), deleter_(deleter), aborter_(aborter), executor_(executor) {}

  grpc::ServerUnaryReactor* ListDatasets(grpc::CallbackServerContext* context, const v1::ListDatasetsRequest* request,
                                         v1::ListDatasetsReply* reply) override;
  grpc::ServerUnaryReactor* DescribeDataset(grpc::CallbackServerContext* context,
                                            const v1::DescribeDatasetRequest* request,
                                            v1::DescribeDatasetReply* reply) override;
  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const v1::StatusRequest* request,
                                      v1::StatusReply* reply) override;
  grpc::ServerUnaryReactor* GetClusterMap(grpc::CallbackServerContext* context, const v1::GetClusterMapRequest* request,
                                          v1::ClusterMap* reply) override;
  grpc::ServerUnaryReactor* DeleteVersion(grpc::CallbackServerContext* context, const v1::DeleteVersionRequest* request,
                                          v1::DeleteVersionReply* reply) override;

 private:
  // Deletes name@version; with `abort_ingest`, aborts its ingest with several
  // writers first, wherever it is open. Blocks. NotFound names the dataset's
  // home when it is another node (a version being ingested is known there).
  Result<VersionDeleter::Deleted> Delete(const std::string& name, uint64_t version, bool abort_ingest);
  Result<VersionDeleter::Deleted> DeleteOrAbort(const std::string& name, uint64_t version, bool abort_ingest);

  const Catalog* const catalog_;
  const NodeStatus* const status_;
  const ClusterView* const view_;
  VersionDeleter* const deleter_;
  IngestAborter* const aborter_;
  boost::asio::thread_pool::executor_type executor_;
};

}  // namespace strata
