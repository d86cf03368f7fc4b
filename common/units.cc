#include "common/units.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>

namespace strata {

namespace {

std::string Lower(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Splits "64mib" into 64 and "mib". InvalidArgument if no leading number.
Status SplitNumber(std::string_view text, std::string_view what, uint64_t* number, std::string* unit) {
  const std::string s = Lower(text);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *number);
  if (ec != std::errc() || ptr == s.data()) {
    return Status::InvalidArgument("invalid " + std::string(what) + " '" + std::string(text) + "'");
  }
  *unit = std::string(ptr, s.data() + s.size());
  return Status::OK();
}

Result<uint64_t> Scale(uint64_t n, uint64_t factor, std::string_view text) {
  if (factor != 0 && n > std::numeric_limits<uint64_t>::max() / factor) {
    return Status::InvalidArgument("'" + std::string(text) + "' is too large");
  }
  return n * factor;
}

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  uint64_t n = 0;
  std::string unit;
  STRATA_RETURN_IF_ERROR(SplitNumber(text, "size", &n, &unit));
  if (unit.empty() || unit == "b") return n;
  const char first = unit[0];
  const std::string rest = unit.substr(1);
  if (rest != "" && rest != "b" && rest != "ib") {
    return Status::InvalidArgument("invalid size unit in '" + std::string(text) + "' (use K, M, G or T)");
  }
  switch (first) {
    case 'k': return Scale(n, uint64_t{1} << 10, text);
    case 'm': return Scale(n, uint64_t{1} << 20, text);
    case 'g': return Scale(n, uint64_t{1} << 30, text);
    case 't': return Scale(n, uint64_t{1} << 40, text);
    default: return Status::InvalidArgument("invalid size unit in '" + std::string(text) + "' (use K, M, G or T)");
  }
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

Result<ByteThreshold> ParseByteThreshold(std::string_view text) {
  const std::string s = Lower(text);
  ByteThreshold t;
  if (!s.empty() && s.back() == '%') {
    uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size() - 1, n);
    if (ec != std::errc() || ptr != s.data() + s.size() - 1 || n < 1 || n > 100) {
      return Status::InvalidArgument("invalid share '" + std::string(text) + "' (use 1% to 100%)");
    }
    t.percent = static_cast<uint32_t>(n);
    return t;
  }
  auto bytes = ParseByteSize(text);
  if (!bytes.ok()) {
    return Status::InvalidArgument("invalid amount '" + std::string(text) +
                                   "' (use a size such as 1GiB or a share such as 5%)");
  }
  t.bytes = bytes.value();
  return t;
}

std::string FormatByteThreshold(const ByteThreshold& t) {
  return t.percent ? std::to_string(t.percent) + "%" : FormatBytes(t.bytes);
}

Result<uint64_t> ParseDurationSeconds(std::string_view text) {
  uint64_t n = 0;
  std::string unit;
  STRATA_RETURN_IF_ERROR(SplitNumber(text, "duration", &n, &unit));
  if (unit.empty() || unit == "s") return n;
  if (unit == "m" || unit == "min") return Scale(n, 60, text);
  if (unit == "h") return Scale(n, 3600, text);
  if (unit == "d") return Scale(n, 86400, text);
  if (unit == "w") return Scale(n, 7 * 86400, text);
  return Status::InvalidArgument("invalid duration unit in '" + std::string(text) + "' (use s, m, h, d or w)");
}

}  // namespace strata
