#include "common/dataset_ref.h"

#include <charconv>

#include "common/input_limits.h"

namespace strata {

namespace {
constexpr size_t kMaxNameLength = InputLimits::kMaxDatasetNameBytes;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}
}  // namespace

bool IsSimpleName(std::string_view text, size_t max_bytes) {
  if (text.empty() || text.size() > max_bytes) return false;
  for (char c : text) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

std::string DatasetRef::ToString() const {
  if (!version) return name;
  return name + "@" + std::to_string(*version);
}

Status ValidateDatasetName(std::string_view name) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("invalid dataset name " + QuotePrefix(name) + ": " + std::string(why));
  };
  if (name.empty()) return bad("it is empty");
  if (name.size() > kMaxNameLength) {
    return bad("it is longer than the limit of " + std::to_string(kMaxNameLength) + " characters");
  }
  for (char c : name) {
    if (c == '/' || c == '\\') return bad("it contains a path separator");
    if (!IsNameChar(c)) return bad("use only letters, digits, '.', '_' and '-'");
  }
  if (name.find("..") != std::string_view::npos) return bad("it contains '..'");
  if (name.front() == '.' || name.front() == '-') return bad("it must not start with '.' or '-'");
  return Status::OK();
}

Result<DatasetRef> ParseDatasetRef(std::string_view text) {
  STRATA_RETURN_IF_ERROR(CheckLength("a dataset reference", text, InputLimits::kMaxDatasetRefBytes));
  DatasetRef ref;
  const size_t at = text.rfind('@');
  std::string_view name = text.substr(0, at);
  STRATA_RETURN_IF_ERROR(ValidateDatasetName(name));
  ref.name = std::string(name);
  if (at != std::string_view::npos) {
    std::string_view v = text.substr(at + 1);
    uint64_t version = 0;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), version);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || version == 0 || version > kMaxDatasetVersion) {
      return Status::InvalidArgument("invalid dataset version in " + QuotePrefix(text) +
                                     ": expected name@N with 1 <= N <= " + std::to_string(kMaxDatasetVersion));
    }
    ref.version = version;
  }
  return ref;
}

Result<uint64_t> NextDatasetVersion(std::string_view name, uint64_t highest) {
  if (highest >= kMaxDatasetVersion) {
    return Status::FailedPrecondition("dataset '" + std::string(name) +
                                      "' has no version numbers left (its newest is " + std::to_string(highest) +
                                      "): ingest under a new name");
  }
  return highest + 1;
}

}  // namespace strata
