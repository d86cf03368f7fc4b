#include "client/cli/progress.h"

#include <unistd.h>

#include <algorithm>

#include "client/cli/format.h"

namespace strata::cli {

namespace {

constexpr std::chrono::steady_clock::duration kTerminalInterval = std::chrono::milliseconds(100);
constexpr std::chrono::steady_clock::duration kLogInterval = std::chrono::seconds(2);
constexpr int kBarWidth = 24;

}  // namespace

std::string ProgressLine(const ProgressSnapshot& s, double elapsed_s, bool bar) {
  const bool known = s.fraction >= 0;
  const double fraction = std::clamp(s.fraction, 0.0, 1.0);
  std::string line;
  if (bar) {
    const int done = known ? static_cast<int>(fraction * kBarWidth) : 0;
    line += "[" + std::string(static_cast<size_t>(done), '#') +
            std::string(static_cast<size_t>(kBarWidth - done), known ? '.' : ' ') + "] ";
  }
  if (known) line += FormatPercent(fraction) + "  ";
  if (!s.position.empty()) line += s.position + "  ";
  line += FormatCount(s.samples) + " samples  " + FormatBytes(s.bytes);
  if (elapsed_s > 0) {
    line += "  " + FormatFixed(static_cast<double>(s.bytes) / 1e6 / elapsed_s, 1) + " MB/s  " +
            FormatCount(static_cast<uint64_t>(static_cast<double>(s.samples) / elapsed_s)) + " samples/s";
  }
  if (known && fraction > 0 && fraction < 1) {
    line += "  ETA " + FormatDuration(elapsed_s * (1 - fraction) / fraction);
  }
  return line;
}

Progress::Progress(bool enabled, std::FILE* out)
    : enabled_(enabled),
      out_(out),
      tty_(isatty(fileno(out)) != 0),
      start_(Clock::now()),
      next_draw_(start_ + (tty_ ? kTerminalInterval : kLogInterval)) {}

bool Progress::Due() { return enabled_ && Clock::now() >= next_draw_; }

double Progress::elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void Progress::Draw(const ProgressSnapshot& snapshot) {
  if (!enabled_) return;
  next_draw_ = Clock::now() + (tty_ ? kTerminalInterval : kLogInterval);
  const std::string line = ProgressLine(snapshot, elapsed_s(), tty_);
  if (tty_) {
    // Blank what a longer previous line leaves behind.
    const std::string blank(last_width_ > line.size() ? last_width_ - line.size() : 0, ' ');
    std::fprintf(out_, "\r%s%s", line.c_str(), blank.c_str());
    last_width_ = line.size();
    drawn_ = true;
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void Progress::Finish(const ProgressSnapshot& snapshot) {
  if (!enabled_ || !tty_) return;
  Draw(snapshot);
  Abandon();
}

void Progress::Abandon() {
  if (!enabled_ || !drawn_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace strata::cli
