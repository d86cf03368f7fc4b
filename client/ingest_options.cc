#include <string>

#include "strata/dataset.h"

namespace strata {

Status SetRedundancy(std::string_view text, IngestOptions* options) {
  const auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("invalid redundancy '" + std::string(text) + "': " + why);
  };
  constexpr std::string_view prefix = "ec:";
  const size_t plus = text.find('+');
  if (!text.starts_with(prefix) || plus == std::string_view::npos || plus == prefix.size() || plus + 1 == text.size() ||
      text.find_first_not_of("0123456789", prefix.size()) != plus ||
      text.find_first_not_of("0123456789", plus + 1) != std::string_view::npos || plus - prefix.size() > 2 ||
      text.size() - plus - 1 > 2) {
    return bad("expected ec:K+M, e.g. ec:4+2 (use replication R for copies)");
  }
  const uint32_t k = static_cast<uint32_t>(std::stoul(std::string(text.substr(prefix.size(), plus - prefix.size()))));
  const uint32_t m = static_cast<uint32_t>(std::stoul(std::string(text.substr(plus + 1))));
  if (k < 1 || m < 1) return bad("K and M must be at least 1");
  if (k + m > 32) return bad("K + M must be at most 32");
  options->ec_data = k;
  options->ec_parity = m;
  return Status::OK();
}

}  // namespace strata
