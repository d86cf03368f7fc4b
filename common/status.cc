// The public Status (strata/status.h) and the internal helpers of common/status.h.
#include "common/status.h"

#include <cerrno>
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

Status ErrnoStatus(std::string_view context, int err) {
  std::string m(context);
  m += ": ";
  m += std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR: return Status::NotFound(std::move(m));
    case EACCES:
    case EPERM: return Status(Code::kPermissionDenied, std::move(m));
    case ENOSPC:
    case EDQUOT:
    case EMFILE:  // out of file descriptors (the process's limit or the system's)
    case ENFILE:
    case ENOMEM: return Status::ResourceExhausted(std::move(m));
    case EISDIR: return Status::IOError(std::string(context) + ": it is a directory");
    default: return Status::IOError(std::move(m));
  }
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
