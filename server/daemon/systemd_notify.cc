#include "server/daemon/systemd_notify.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <chrono>
#include <utility>

namespace strata {

namespace {

void Notify(const std::string& state) {
  const int r = sd_notify(0, state.c_str());
  if (r < 0) spdlog::warn("sd_notify: {}", -r);  // systemd is there but the message was lost
}

}  // namespace

void SystemdNotifier::StopWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SystemdNotifier::Ready(const std::string& status, std::function<bool()> healthy) {
  Notify("READY=1\nSTATUS=" + status);
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0 && !thread_.joinable()) {
    spdlog::info("systemd watchdog: pinging every {} ms", usec / 2000);
    // Owner: this notifier (joined by Stop). Purpose: the systemd watchdog
    // ping, which must go on when the Asio pools are busy or stuck (that is
    // what the watchdog detects), so it is not one of their timers.
    thread_ = std::thread([this, usec, healthy = std::move(healthy)] { Watchdog(usec / 2, healthy); });
  }
}

void SystemdNotifier::Stopping(const std::string& status) { Notify("STOPPING=1\nSTATUS=" + status); }

void SystemdNotifier::Watchdog(uint64_t period_usec, std::function<bool()> healthy) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (healthy()) sd_notify(0, "WATCHDOG=1");
    wake_.wait_for(lock, std::chrono::microseconds(period_usec), [this] { return stop_; });
  }
}

}  // namespace strata
