#include "common/status.h"

#include <cstring>

namespace strata {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kCancelled: return "Cancelled";
    case Code::kUnknown: return "Unknown";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kDeadlineExceeded: return "DeadlineExceeded";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kPermissionDenied: return "PermissionDenied";
    case Code::kResourceExhausted: return "ResourceExhausted";
    case Code::kFailedPrecondition: return "FailedPrecondition";
    case Code::kAborted: return "Aborted";
    case Code::kOutOfRange: return "OutOfRange";
    case Code::kUnimplemented: return "Unimplemented";
    case Code::kInternal: return "Internal";
    case Code::kUnavailable: return "Unavailable";
    case Code::kDataLoss: return "Corruption";
    case Code::kUnauthenticated: return "Unauthenticated";
    case Code::kIOError: return "IOError";
  }
  return "Unknown";
}

Status Status::FromErrno(std::string_view context, int err) {
  std::string m(context);
  m += ": ";
  m += std::strerror(err);
  return Status(Code::kIOError, std::move(m));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(CodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

}  // namespace strata
