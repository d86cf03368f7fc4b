// Status helpers private to strata, and its one early-return macro. The
// Status and Result types themselves, with the table of error codes, are
// public: client/include/strata/status.h.
#pragma once

#include <string_view>

#include "strata/status.h"

namespace strata {

// The Status of a failed system call: "<context>: <strerror(err)>", coded
// NotFound for ENOENT and ENOTDIR, PermissionDenied for EACCES and EPERM,
// ResourceExhausted for ENOSPC, EDQUOT, EMFILE, ENFILE and ENOMEM, IOError
// otherwise ("<context> is a directory" for EISDIR).
Status ErrnoStatus(std::string_view context, int err);

}  // namespace strata

// The one early-return macro: evaluates a Status expression and returns it if not OK.
#define STRATA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::strata::Status strata_status_ = (expr);        \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)
