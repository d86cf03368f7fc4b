#include "common/unique_fd.h"

#include <cerrno>
#include <string>

namespace strata {

Status UniqueFd::Close(std::string_view what) {
  if (fd_ < 0) return Status::OK();
  // Linux frees the descriptor even when close fails: never retry it.
  if (::close(release()) != 0) return ErrnoStatus("close " + std::string(what), errno);
  return Status::OK();
}

}  // namespace strata
