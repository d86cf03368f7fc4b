// /healthz and /readyz on the metrics port, beside prometheus-cpp's /metrics.
//
// prometheus-cpp's Exposer serves only collectables, but takes CivetWeb
// callbacks: its begin_request hook answers these two paths before CivetWeb
// routes the request, so no second port or HTTP server is needed.
//   GET /healthz  200 "ok": the process serves HTTP (liveness).
//   GET /readyz   200 "ready", or 503 and the reason it is not (readiness).
// A process may run several exposers (tests start servers side by side); each
// registers under its bound port.
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <functional>
#include <string>

struct CivetCallbacks;

namespace strata {

// The callbacks to hand to prometheus::Exposer. Static storage; never null.
const CivetCallbacks* HealthCallbacks();

// Answers /readyz on `port` with `not_ready()`: "" means ready, anything else
// is the reason for a 503. Until a port is registered its /readyz says
// "starting". Replaces an earlier registration of the port.
void RegisterReadiness(int port, std::function<std::string()> not_ready);
// After it returns, `not_ready` of the port is no longer called.
void UnregisterReadiness(int port);

}  // namespace strata
