#include "server/rpc/admin_service.h"

#include <boost/asio/post.hpp>

#include "common/dataset_ref.h"
#include "common/grpc_status.h"
#include "server/cluster/ingest_coordinator.h"
#include "server/cluster/request_validation.h"
#include "server/rpc/ingest_reactor.h"
#include "server/storage/dataset_queries.h"

namespace strata {

namespace {

// Finishes a unary call with `result`'s status, moving its value into *reply.
template <typename T>
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context, Result<T> result, T* reply) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (result.ok()) {
    *reply = std::move(result).value();
    reactor->Finish(grpc::Status::OK);
  } else {
    reactor->Finish(ToGrpcStatus(result.status()));
  }
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* AdminServiceImpl::ListDatasets(grpc::CallbackServerContext* context,
                                                         const v1::ListDatasetsRequest* request,
                                                         v1::ListDatasetsReply* reply) {
  return FinishUnary(context, strata::ListDatasets(*catalog_, *request), reply);
}

grpc::ServerUnaryReactor* AdminServiceImpl::DescribeDataset(grpc::CallbackServerContext* context,
                                                            const v1::DescribeDatasetRequest* request,
                                                            v1::DescribeDatasetReply* reply) {
  if (Status valid = ValidateDescribeRequest(*request); !valid.ok()) {
    return FinishUnary(context, Result<v1::DescribeDatasetReply>(valid), reply);
  }
  return FinishUnary(context, strata::DescribeDataset(*catalog_, *request), reply);
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetStatus(grpc::CallbackServerContext* context,
                                                      const v1::StatusRequest* /*request*/, v1::StatusReply* reply) {
  return FinishUnary(context, Result<v1::StatusReply>(status_->Get()), reply);
}

grpc::ServerUnaryReactor* AdminServiceImpl::GetClusterMap(grpc::CallbackServerContext* context,
                                                          const v1::GetClusterMapRequest* /*request*/,
                                                          v1::ClusterMap* reply) {
  v1::ClusterMap map = view_->Current();
  map.set_ingest_accept_signal(!LegacyIngestForTests());
  map.set_serves_work(true);
  return FinishUnary(context, Result<v1::ClusterMap>(std::move(map)), reply);
}

grpc::ServerUnaryReactor* AdminServiceImpl::DeleteVersion(grpc::CallbackServerContext* context,
                                                          const v1::DeleteVersionRequest* request,
                                                          v1::DeleteVersionReply* reply) {
  if (Status valid = ValidateDeleteRequest(*request); !valid.ok()) {
    return FinishUnary(context, Result<v1::DeleteVersionReply>(valid), reply);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  boost::asio::post(executor_, [this, reactor, request, reply] {
    const DatasetRef ref = ParseDatasetRef(request->dataset()).value();
    auto deleted = Delete(ref.name, *ref.version, request->abort_ingest());
    if (deleted.ok()) {
      *reply->mutable_dataset() = deleted->info;
      for (auto& n : deleted->told) reply->add_nodes_told(std::move(n));
      for (auto& n : deleted->pending) reply->add_nodes_pending(std::move(n));
    }
    reactor->Finish(ToGrpcStatus(deleted.status()));
  });
  return reactor;
}

Result<VersionDeleter::Deleted> AdminServiceImpl::Delete(const std::string& name, uint64_t version, bool abort_ingest) {
  auto deleted = DeleteOrAbort(name, version, abort_ingest);
  if (deleted.status().code() != Code::kNotFound) return deleted;
  // A version being ingested is in its home's catalog only (until it seals):
  // say where to ask rather than only "no such version".
  const v1::ClusterMap map = view_->Current();
  auto home = DatasetHome(name, map);
  if (!home.ok() || (*home)->id() == view_->self_id()) return deleted;
  return Status::NotFound(deleted.status().message() + " on " + view_->self_id() +
                          "; a version still being ingested is known to the dataset's home only, " + (*home)->id() +
                          " at " + (*home)->address() + " (strata rm --server there)");
}

Result<VersionDeleter::Deleted> AdminServiceImpl::DeleteOrAbort(const std::string& name, uint64_t version,
                                                                bool abort_ingest) {
  if (!abort_ingest) return deleter_->Delete(name, version);
  if (aborter_ == nullptr) return Status::Unimplemented("this node does not abort ingests");
  auto aborted = aborter_->Abort(name, version, "aborted by an operator (strata rm --abort)");
  if (!aborted.ok()) return aborted.status();
  auto deleted = deleter_->Delete(name, version);
  if (!aborted.value() && deleted.status().code() == Code::kFailedPrecondition) {
    return Status::FailedPrecondition("no node up has an ingest with several writers open for " + name + "@" +
                                      std::to_string(version) +
                                      ": it is written by one writer, and aborted when that writer's call ends "
                                      "(stop its strata ingest)");
  }
  return deleted;
}

}  // namespace strata
