#include "server/ingest/time_bucket.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace strata {

namespace {

constexpr int64_t kSecondsPerDay = 86400;
constexpr int64_t kMinSeconds = -62167219200;  // 0000-01-01T00:00:00Z
constexpr int64_t kMaxSeconds = 253402300799;  // 9999-12-31T23:59:59Z

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int64_t* m, int64_t* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yoe + era * 400 + (*m <= 2);
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Reads exactly `digits` decimal digits at text[*at].
bool Digits(std::string_view text, size_t* at, int digits, int64_t* out) {
  if (text.size() - *at < static_cast<size_t>(digits)) return false;
  int64_t v = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = text[*at + static_cast<size_t>(i)];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *at += static_cast<size_t>(digits);
  *out = v;
  return true;
}

bool ParseIso(std::string_view t, int64_t* out) {
  size_t at = 0;
  int64_t y, mo, d, h = 0, mi = 0, s = 0;
  if (!Digits(t, &at, 4, &y) || at >= t.size() || t[at++] != '-' || !Digits(t, &at, 2, &mo) || at >= t.size() ||
      t[at++] != '-' || !Digits(t, &at, 2, &d)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo)) return false;
  int64_t offset = 0;
  if (at < t.size()) {
    if (t[at] != 'T' && t[at] != 't' && t[at] != ' ') return false;
    ++at;
    if (!Digits(t, &at, 2, &h) || at >= t.size() || t[at++] != ':' || !Digits(t, &at, 2, &mi)) return false;
    if (at < t.size() && t[at] == ':') {
      ++at;
      if (!Digits(t, &at, 2, &s)) return false;
      if (at < t.size() && (t[at] == '.' || t[at] == ',')) {
        ++at;
        const size_t start = at;
        while (at < t.size() && t[at] >= '0' && t[at] <= '9') ++at;
        if (at == start) return false;  // fractions are dropped: floor to the second
      }
    }
    if (h > 23 || mi > 59 || s > 60) return false;  // 60: a leap second
    if (at < t.size()) {
      if ((t[at] == 'Z' || t[at] == 'z') && at + 1 == t.size()) {
        ++at;
      } else if (t[at] == '+' || t[at] == '-') {
        const int64_t sign = t[at++] == '-' ? -1 : 1;
        int64_t oh = 0, om = 0;
        if (!Digits(t, &at, 2, &oh)) return false;
        if (at < t.size() && t[at] == ':') ++at;
        if (at < t.size() && !Digits(t, &at, 2, &om)) return false;
        if (oh > 23 || om > 59) return false;
        offset = sign * (oh * 3600 + om * 60);
      } else {
        return false;
      }
    }
  }
  if (at != t.size()) return false;
  *out = DaysFromCivil(y, mo, d) * kSecondsPerDay + h * 3600 + mi * 60 + s - offset;
  return true;
}

bool ParseUnix(std::string_view t, int64_t* out) {
  if (t.empty()) return false;
  const char* begin = t.data();
  const char* end = t.data() + t.size();
  int64_t whole = 0;
  auto [p, ec] = std::from_chars(begin, end, whole);
  if (ec == std::errc() && p == end) {
    *out = whole;
    return true;
  }
  // A decimal or exponent form. from_chars for double accepts no leading '+'.
  for (char c : t) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) return false;
  }
  double v = 0;
  auto [q, ec2] = std::from_chars(begin, end, v);
  if (ec2 != std::errc() || q != end || !std::isfinite(v)) return false;
  v = std::floor(v);
  if (v < static_cast<double>(kMinSeconds) || v > static_cast<double>(kMaxSeconds)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

}  // namespace

Result<int64_t> ParseTimestampSeconds(std::string_view text) {
  int64_t seconds = 0;
  const bool iso = text.size() >= 10 && text[4] == '-';
  if (!(iso ? ParseIso(text, &seconds) : ParseUnix(text, &seconds)) || seconds < kMinSeconds || seconds > kMaxSeconds) {
    return Status::InvalidArgument("'" + std::string(text.substr(0, 80)) +
                                   "' is not a timestamp (unix seconds, or ISO-8601 such as 2024-01-31 or "
                                   "2024-01-31T12:00:00Z, years 0000-9999)");
  }
  return seconds;
}

std::string FormatTimeBucket(int64_t ts, uint64_t width) {
  const int64_t w = static_cast<int64_t>(width);
  const int64_t start = FloorDiv(ts, w) * w;
  const int64_t days = FloorDiv(start, kSecondsPerDay);
  const int64_t secs = start - days * kSecondsPerDay;
  int64_t y, m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[128];
  // A bucket of a time early in year 0 may start in year -1: written as ISO
  // 8601's expanded year, "-0001", never as "-001".
  const char* sign = y < 0 ? "-" : "";
  const long long year = y < 0 ? -y : y;
  if (width % kSecondsPerDay == 0) {
    std::snprintf(buf, sizeof(buf), "%s%04lld-%02lld-%02lld", sign, year, static_cast<long long>(m),
                  static_cast<long long>(d));
  } else {
    std::snprintf(buf, sizeof(buf), "%s%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", sign, year,
                  static_cast<long long>(m), static_cast<long long>(d), static_cast<long long>(secs / 3600),
                  static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60));
  }
  return buf;
}

}  // namespace strata
