// stratad under systemd (Type=notify, WatchdogSec=): tells the service
// manager when it is ready and when it stops, and pings the watchdog.
// Outside systemd (no $NOTIFY_SOCKET) every call does nothing.
//
// Thread-safety: one SystemdNotifier per process, used from the main thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace strata {

class SystemdNotifier {
 public:
  SystemdNotifier() = default;
  ~SystemdNotifier() { StopWatchdog(); }

  // READY=1 with a STATUS= line; starts pinging the watchdog (WATCHDOG=1 at
  // half of $WATCHDOG_USEC) when systemd asked for one. `healthy` is asked
  // before each ping: a server that stopped being healthy stops pinging, and
  // systemd restarts it when WatchdogSec passes.
  void Ready(const std::string& status, std::function<bool()> healthy);
  // STOPPING=1 with a STATUS= line (the drain begins); the watchdog keeps
  // pinging through the drain.
  void Stopping(const std::string& status);
  // Stops the watchdog thread (no more calls of `healthy`). Idempotent.
  void StopWatchdog();

 private:
  void Watchdog(uint64_t period_usec, std::function<bool()> healthy);

  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace strata
