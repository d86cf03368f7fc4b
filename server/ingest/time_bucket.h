// Timestamps and time buckets for time-aware strata (--time-bucket FIELD:WIDTH).
//
// A timestamp attribute may be
//  - unix seconds: an integer or a decimal number ("1700000000", "-86400",
//    "1700000000.25", "1.7e9"); fractions are floored to whole seconds;
//  - ISO-8601: "YYYY-MM-DD", or a date and time "YYYY-MM-DDTHH:MM[:SS[.fff]]"
//    ('T' or a space between them), optionally followed by "Z" or an offset
//    "+HH:MM", "+HHMM" or "+HH" (also '-'); without one the time is UTC.
// Years 0000 to 9999.
//
// A bucket is floor(ts / width) * width, aligned to the unix epoch (so a 1w
// bucket starts on a Thursday), written as ISO-8601 UTC: the date alone
// ("2024-01-01") when width is a whole number of days, else the instant
// ("2024-01-01T06:00:00Z"). Both forms sort in time order as text.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace strata {

// Seconds since 1970-01-01T00:00:00Z. InvalidArgument (quoting the text) for
// anything else.
Result<int64_t> ParseTimestampSeconds(std::string_view text);

// The bucket of `ts` as ISO-8601 UTC text. REQUIRES: width > 0.
std::string FormatTimeBucket(int64_t ts, uint64_t width);

}  // namespace strata
