#include "client/cli/format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <limits>
#include <ostream>
#include <utility>

namespace strata::cli {

namespace {

std::string Lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "1.5 GiB" -> number "1.5", unit "gib". False when there is no number.
bool SplitQuantity(std::string_view text, std::string_view* number, std::string* unit) {
  auto trim = [](std::string_view t) {
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    return t;
  };
  text = trim(text);
  size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
  if (end == 0) return false;
  *number = text.substr(0, end);
  *unit = Lowercase(trim(text.substr(end)));
  return true;
}

// number * multiplier as a whole number: integers exactly, fractions rounded
// down. False on a malformed number or overflow.
bool Scale(std::string_view number, uint64_t multiplier, uint64_t* out) {
  const char* first = number.data();
  const char* last = number.data() + number.size();
  if (number.find('.') == std::string_view::npos) {
    uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(first, last, n);
    if (ec != std::errc() || ptr != last) return false;
    if (n != 0 && multiplier > std::numeric_limits<uint64_t>::max() / n) return false;
    *out = n * multiplier;
    return true;
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last) return false;
  const double scaled = value * static_cast<double>(multiplier);
  if (!(scaled < 18446744073709551616.0)) return false;  // 2^64
  *out = static_cast<uint64_t>(scaled);
  return true;
}

}  // namespace

std::string FormatCount(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  // Three significant digits; 1023.5 KiB would print as "1024 KiB": move up.
  if (value >= 999.95 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  const int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
  return FormatFixed(value, decimals) + " " + kUnits[unit];
}

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0)) seconds = 0;
  if (seconds < 1) return std::to_string(static_cast<int>(seconds * 1000)) + "ms";
  if (seconds < 60) return FormatFixed(seconds, 1) + "s";
  const auto total = static_cast<uint64_t>(seconds);
  char buf[64];
  if (total < 3600) {
    std::snprintf(buf, sizeof(buf), "%llum%02llus", static_cast<unsigned long long>(total / 60),
                  static_cast<unsigned long long>(total % 60));
  } else if (total < 86400) {
    std::snprintf(buf, sizeof(buf), "%lluh%02llum", static_cast<unsigned long long>(total / 3600),
                  static_cast<unsigned long long>(total % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llud%02lluh", static_cast<unsigned long long>(total / 86400),
                  static_cast<unsigned long long>(total % 86400 / 3600));
  }
  return buf;
}

std::string FormatFixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string FormatPercent(double fraction) { return FormatFixed(fraction * 100, 1) + "%"; }

std::string FormatTimeUtc(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "-";
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

Result<uint64_t> ParseSize(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("invalid size '" + std::string(text) +
                                   "': expected a number with an optional unit (B, K/KiB, M/MiB, G/GiB, T/TiB, "
                                   "KB, MB, GB, TB), e.g. 64MiB");
  };
  std::string_view number;
  std::string unit;
  if (!SplitQuantity(text, &number, &unit)) return bad();
  static const std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", 1ull << 10},
      {"kib", 1ull << 10},
      {"kb", 1000},
      {"m", 1ull << 20},
      {"mib", 1ull << 20},
      {"mb", 1000 * 1000},
      {"g", 1ull << 30},
      {"gib", 1ull << 30},
      {"gb", 1000 * 1000 * 1000},
      {"t", 1ull << 40},
      {"tib", 1ull << 40},
      {"tb", 1000ull * 1000 * 1000 * 1000},
  };
  for (const auto& [name, multiplier] : kUnits) {
    if (unit != name) continue;
    uint64_t bytes = 0;
    if (!Scale(number, multiplier, &bytes)) return bad();
    return bytes;
  }
  return bad();
}

Result<uint64_t> ParseDurationSeconds(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("invalid duration '" + std::string(text) +
                                   "': expected a whole number of seconds or a number with a unit "
                                   "s, m, h, d or w, e.g. 3600, 15m, 1h");
  };
  std::string_view number;
  std::string unit;
  if (!SplitQuantity(text, &number, &unit) || number.find('.') != std::string_view::npos) return bad();
  static const std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400},
  };
  for (const auto& [name, multiplier] : kUnits) {
    if (unit != name) continue;
    uint64_t seconds = 0;
    if (!Scale(number, multiplier, &seconds) || seconds == 0) return bad();
    return seconds;
  }
  return bad();
}

void Table::Print(std::ostream& out, std::string_view indent) const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].title.size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < columns_.size() && c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](auto cell_of) {
    std::string text(indent);
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cell_of(c);
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      const bool last = c + 1 == columns_.size();
      if (columns_[c].align == Align::kRight) {
        text += pad + cell;
      } else {
        text += cell;
        if (!last) text += pad;
      }
      if (!last) text += "  ";
    }
    out << text << '\n';
  };
  line([&](size_t c) -> const std::string& { return columns_[c].title; });
  static const std::string kEmpty;
  for (const auto& row : rows_) {
    line([&](size_t c) -> const std::string& { return c < row.size() ? row[c] : kEmpty; });
  }
}

void PrintFields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields,
                 std::string_view indent) {
  size_t width = 0;
  for (const auto& field : fields) width = std::max(width, field.first.size());
  for (const auto& [key, value] : fields) {
    out << indent << key << std::string(width - key.size() + 2, ' ') << value << '\n';
  }
}

void PrintCounts(std::ostream& out, std::string_view key_title, Counts counts, size_t max_rows,
                 std::string_view indent) {
  if (counts.empty()) {
    out << indent << "(none)\n";
    return;
  }
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  uint64_t total = 0;
  for (const auto& entry : counts) total += entry.second;
  Table table({{std::string(key_title)}, {"SAMPLES", Table::Align::kRight}, {"SHARE", Table::Align::kRight}});
  for (size_t i = 0; i < counts.size() && i < max_rows; ++i) {
    const auto& [key, count] = counts[i];
    const double share = total == 0 ? 0 : static_cast<double>(count) / static_cast<double>(total);
    table.AddRow({key.empty() ? "(none)" : key, FormatCount(count), FormatPercent(share)});
  }
  table.Print(out, indent);
  if (counts.size() > max_rows) out << indent << "... and " << counts.size() - max_rows << " more\n";
}

}  // namespace strata::cli
