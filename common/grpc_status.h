// Translation between strata::Status and grpc::Status: the one place where RPC
// errors cross into strata's error codes. Code numbers match gRPC's, except
// kIOError, which travels as INTERNAL.
#pragma once

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace strata {

grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

}  // namespace strata
