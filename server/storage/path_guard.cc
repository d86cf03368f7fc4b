#include "server/storage/path_guard.h"

#include <filesystem>

#include "common/dataset_ref.h"
#include "common/input_limits.h"

namespace strata {

namespace fs = std::filesystem;

Status ValidateFileRef(const v1::FileRef& file) {
  STRATA_RETURN_IF_ERROR(ValidateDatasetName(file.dataset()));
  if (file.version() == 0) return Status::InvalidArgument("a file reference needs a version >= 1");
  if (!v1::FileRef::Kind_IsValid(file.kind())) {
    return Status::InvalidArgument("unknown file kind " + std::to_string(static_cast<int>(file.kind())));
  }
  if ((file.kind() == v1::FileRef::SHARD || file.kind() == v1::FileRef::PARITY) && file.seq() > kMaxShardSeq) {
    return Status::InvalidArgument("shard seq " + std::to_string(file.seq()) + " is over the limit of " +
                                   std::to_string(kMaxShardSeq));
  }
  return Status::OK();
}

Result<std::string> ResolveInside(const std::string& root, std::string_view relative) {
  STRATA_RETURN_IF_ERROR(CheckLength("a path", relative, InputLimits::kMaxShardPathBytes));
  auto refuse = [&](std::string_view why) {
    return Status::InvalidArgument("path " + QuotePrefix(relative) + " " + std::string(why));
  };
  if (relative.empty() || relative.front() == '/') return refuse("is not relative to the data directory");
  for (size_t start = 0; start <= relative.size();) {
    size_t end = relative.find('/', start);
    if (end == std::string_view::npos) end = relative.size();
    const std::string_view part = relative.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return refuse("has an empty, '.' or '..' component");
    if (part.find('\0') != std::string_view::npos) return refuse("contains a NUL byte");
    start = end + 1;
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(root), ec);
  if (!ec && base.filename().empty()) base = base.parent_path();
  if (ec) return Status::IOError("cannot resolve the data directory " + root + ": " + ec.message());
  const fs::path full = fs::weakly_canonical(base / fs::path(std::string(relative)), ec);
  if (ec) return Status::IOError("cannot resolve " + QuotePrefix(relative) + ": " + ec.message());
  // Inside means: base's components are a strict prefix of full's.
  auto b = base.begin(), f = full.begin();
  for (; b != base.end(); ++b, ++f) {
    if (f == full.end() || *b != *f) return refuse("resolves outside the data directory");
  }
  if (f == full.end()) return refuse("is the data directory itself");
  return full.string();
}

}  // namespace strata
