// Human-readable numbers for the strata CLI, and parsing of the sizes and
// durations its flags take.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace strata::cli {

// "12,345"
std::string FormatCount(uint64_t n);
// Binary units with three significant digits: "512 B", "1.50 KiB", "64.0 MiB", "1.21 GiB".
std::string FormatBytes(uint64_t bytes);
// "850ms", "12.3s", "4m05s", "2h03m", "3d04h".
std::string FormatDuration(double seconds);
// `value` with `decimals` digits after the point: "98.5".
std::string FormatFixed(double value, int decimals);
// A fraction in [0, 1] as "42.0%".
std::string FormatPercent(double fraction);
// Unix milliseconds as "2024-05-01 12:00:00 UTC"; "-" for 0.
std::string FormatTimeUtc(int64_t unix_ms);

// A byte size: a number (decimals allowed) with an optional unit, case-insensitive.
// K, M, G, T and KiB, MiB, GiB, TiB are binary (1K = 1024); KB, MB, GB, TB are
// decimal (1KB = 1000); B or none is bytes. "64MiB", "1G", "1.5GB", "4096".
// InvalidArgument on anything else or on overflow.
Result<uint64_t> ParseSize(std::string_view text);

// A duration in whole seconds: a number with an optional unit s, m, h, d or w
// (none: seconds). "3600", "30s", "15m", "1h", "1d", "1w". InvalidArgument on
// anything else, on 0, or on overflow.
Result<uint64_t> ParseDurationSeconds(std::string_view text);

// A plain-text table with aligned columns.
class Table {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // REQUIRES: cells.size() == number of columns.
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  size_t rows() const { return rows_.size(); }

  // Writes the title row and every row, each line starting with `indent`.
  void Print(std::ostream& out, std::string_view indent = "") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "key   value" lines with the values aligned.
void PrintFields(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& fields,
                 std::string_view indent = "");

// Per-key sample counts (labels, strata).
using Counts = std::vector<std::pair<std::string, uint64_t>>;

// Prints a `key_title` / SAMPLES / SHARE table sorted by count descending,
// then key; at most `max_rows` rows, then a line saying how many more.
void PrintCounts(std::ostream& out, std::string_view key_title, Counts counts, size_t max_rows,
                 std::string_view indent = "");

}  // namespace strata::cli
