#include "common/input_limits.h"

#include <cctype>
#include <cstdio>

namespace strata {

std::string QuotePrefix(std::string_view value) {
  std::string out = "'";
  const size_t shown = std::min(value.size(), InputLimits::kQuotedPrefixBytes);
  for (size_t i = 0; i < shown; ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\x%02x", c);
      out += esc;
    }
  }
  if (shown < value.size()) return out + "…' (" + std::to_string(value.size()) + " bytes)";
  return out + "'";
}

Status CheckLength(std::string_view what, std::string_view value, size_t limit) {
  if (value.size() <= limit) return Status::OK();
  return Status::InvalidArgument(std::string(what) + " is " + std::to_string(value.size()) +
                                 " bytes, over the limit of " + std::to_string(limit) + ": " + QuotePrefix(value));
}

Status CheckClusterName(std::string_view what, std::string_view name, size_t limit) {
  STRATA_RETURN_IF_ERROR(CheckLength(what, name, limit));
  for (char ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') {
      return Status::InvalidArgument(std::string(what) + " " + QuotePrefix(name) +
                                     ": use letters, digits, '-', '_' and '.'");
    }
  }
  return Status::OK();
}

Status CheckSampleBytes(std::string_view what, uint64_t bytes) {
  if (bytes <= InputLimits::kMaxSampleBytes) return Status::OK();
  return Status::InvalidArgument(std::string(what) + " is " + std::to_string(bytes >> 20) +
                                 " MiB; samples may be at most " + std::to_string(InputLimits::kMaxSampleBytes >> 20) +
                                 " MiB");
}

Status CheckCount(std::string_view what, size_t count, size_t limit) {
  if (count <= limit) return Status::OK();
  return Status::InvalidArgument(std::string(what) + " has " + std::to_string(count) + " entries, over the limit of " +
                                 std::to_string(limit));
}

}  // namespace strata
