// The progress line of long commands (ingest, stream), on stderr.
//
// On a terminal the line is redrawn in place with '\r' at most ~10 times a
// second; otherwise (a log file, a pipe) a plain line is printed every 2 s.
//
// Thread-safety: used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace strata::cli {

struct ProgressSnapshot {
  double fraction = -1;  // done, in [0, 1]; negative when unknown
  std::string position;  // optional, e.g. "step 120/500"
  uint64_t samples = 0;
  uint64_t bytes = 0;
};

// The text of one progress line after `elapsed_s` seconds: percentage,
// position, samples, bytes, MB/s, samples/s and ETA; with a bar when `bar`.
std::string ProgressLine(const ProgressSnapshot& snapshot, double elapsed_s, bool bar);

class Progress {
 public:
  // `enabled` false prints nothing (--quiet). Writes to `out` (stderr by default).
  explicit Progress(bool enabled, std::FILE* out = stderr);

  // Cheap; true when a line is due. Callers build a snapshot only then.
  bool Due();
  // Draws `snapshot` now.
  void Draw(const ProgressSnapshot& snapshot);
  // Draws the last state and ends the line on a terminal; prints nothing
  // otherwise (the command's summary follows).
  void Finish(const ProgressSnapshot& snapshot);
  // Ends a terminal line without redrawing, so an error message starts on a new line.
  void Abandon();

  double elapsed_s() const;

 private:
  using Clock = std::chrono::steady_clock;

  const bool enabled_;
  std::FILE* const out_;
  const bool tty_;
  const Clock::time_point start_;
  Clock::time_point next_draw_;
  bool drawn_ = false;     // a terminal line is on screen
  size_t last_width_ = 0;  // of the line on screen, to blank leftovers
};

}  // namespace strata::cli
