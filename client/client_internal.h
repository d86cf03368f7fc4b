// Private to libstrata: the gRPC implementations of Stream and IngestWriter
// that Client hands out. Each holds its own stub, which shares the channel, so
// it may outlive the Client that created it.
#pragma once

#include <grpcpp/channel.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "strata/client.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/data.pb.h"

namespace strata::client_internal {

class StratumIndexCache;  // client/stream_plan.h

// A channel to a node by address (the client caches them).
using ChannelSource = std::function<std::shared_ptr<grpc::Channel>(const std::string& address)>;

// A stream over every node of `map` that serves part of the request (see
// cluster_stream.cc). `position` is where it starts: dataset name, version (0
// when the request names the latest), plan hash (0 when not yet known), seed,
// epoch and start step.
// `indexes`, the client's, keeps the stratum indexes its streams fetched
// (nullptr: none kept).
std::unique_ptr<Stream> NewClusterStream(ChannelSource channels, v1::ClusterMap map, v1::StreamRequest request,
                                         ResumeToken position, const ClientOptions& options,
                                         std::shared_ptr<StratumIndexCache> indexes = nullptr);

// Starts one Ingest call, sends `options` as its first message and waits (at
// most `timeout`) until the server says it took the ingest. Unavailable if
// the node does not answer in time; the server's refusal otherwise (e.g.
// FailedPrecondition from a node that is not the dataset's home). With a
// stratad built before the acceptance signal (its cluster map lacks
// ingest_accept_signal) only the node's answer is awaited; a refusal then
// comes from the first Write or the Commit.
Result<std::unique_ptr<IngestWriter>> StartGrpcIngest(std::shared_ptr<grpc::Channel> channel,
                                                      const v1::IngestOptions& options,
                                                      std::chrono::milliseconds timeout);

}  // namespace strata::client_internal
