// PeerService: what nodes ask of each other. Thin over the node's core:
// heartbeats, whole-file push and pull (replication, repair), verified record
// reads for a peer that lacks a copy, and version metadata exchange.
#pragma once

#include "strata/v1/cluster.grpc.pb.h"

namespace strata {

class Node;

class PeerServiceImpl final : public v1::PeerService::CallbackService {
 public:
  explicit PeerServiceImpl(Node* node) : node_(node) {}

  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* context, const v1::PingRequest* request,
                                 v1::PingReply* reply) override;
  grpc::ServerReadReactor<v1::FileChunk>* PutFile(grpc::CallbackServerContext* context,
                                                  v1::PutFileReply* reply) override;
  grpc::ServerWriteReactor<v1::FileChunk>* GetFile(grpc::CallbackServerContext* context,
                                                   const v1::GetFileRequest* request) override;
  grpc::ServerUnaryReactor* ReadRecords(grpc::CallbackServerContext* context, const v1::ReadRecordsRequest* request,
                                        v1::ReadRecordsReply* reply) override;
  grpc::ServerUnaryReactor* PutVersion(grpc::CallbackServerContext* context, const v1::PutVersionRequest* request,
                                       v1::PutVersionReply* reply) override;
  grpc::ServerUnaryReactor* ListVersions(grpc::CallbackServerContext* context,
                                         const v1::ListVersionsRequest* request,
                                         v1::ListVersionsReply* reply) override;
  grpc::ServerUnaryReactor* ListLocalFiles(grpc::CallbackServerContext* context,
                                           const v1::ListLocalFilesRequest* request,
                                           v1::ListLocalFilesReply* reply) override;

 private:
  Node* const node_;
};

}  // namespace strata
