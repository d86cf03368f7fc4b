#include "server/storage/aligned_writer.h"

#include <algorithm>

#include "common/file_util.h"

namespace strata {

AlignedFileWriter::AlignedFileWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
  staged_.reserve(kChunkBytes);
}

Status AlignedFileWriter::Append(std::string_view bytes) {
  while (!bytes.empty()) {
    if (staged_.empty() && bytes.size() >= kChunkBytes) {
      // Aligned already: write the whole chunks in place.
      const size_t whole = bytes.size() / kChunkBytes * kChunkBytes;
      STRATA_RETURN_IF_ERROR(WriteAllFd(fd_, bytes.substr(0, whole), path_));
      written_ += whole;
      bytes.remove_prefix(whole);
      continue;
    }
    const size_t take = std::min(bytes.size(), kChunkBytes - staged_.size());
    staged_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (staged_.size() == kChunkBytes) {
      STRATA_RETURN_IF_ERROR(WriteAllFd(fd_, staged_, path_));
      written_ += kChunkBytes;
      staged_.clear();
    }
  }
  return Status::OK();
}

Status AlignedFileWriter::Flush() {
  STRATA_RETURN_IF_ERROR(WriteAllFd(fd_, staged_, path_));
  written_ += staged_.size();
  staged_.clear();
  return Status::OK();
}

}  // namespace strata
