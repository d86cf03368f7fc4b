// Private to libstrata: the gRPC implementations of Stream and IngestWriter
// that Client hands out. Each holds its own stub, which shares the channel, so
// it may outlive the Client that created it.
#pragma once

#include <grpcpp/channel.h>

#include <memory>

#include "strata/client.h"
#include "strata/v1/data.pb.h"

namespace strata::client_internal {

// Starts one StreamBatches call. `position` is where the stream starts: the
// dataset name, version (0 when the request names the latest), plan hash (0
// when not yet known), seed, epoch and start step of `request`.
std::unique_ptr<Stream> NewGrpcStream(std::shared_ptr<grpc::Channel> channel, const v1::StreamRequest& request,
                                      const ResumeToken& position);

// Starts one Ingest call and sends `options` as its first message. Errors
// come from the server on a later Write or on Commit.
std::unique_ptr<IngestWriter> NewGrpcIngestWriter(std::shared_ptr<grpc::Channel> channel,
                                                  const v1::IngestOptions& options);

}  // namespace strata::client_internal
