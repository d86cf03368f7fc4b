#include "common/grpc_status.h"

namespace strata {

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  if (status.code() == Code::kIOError) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "I/O error: " + status.message());
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return Status::OK();
  const int code = static_cast<int>(status.error_code());
  if (code <= 0 || code > static_cast<int>(Code::kUnauthenticated)) {
    return Status(Code::kUnknown, status.error_message());
  }
  return Status(static_cast<Code>(code), status.error_message());
}

}  // namespace strata
