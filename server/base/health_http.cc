#include "server/base/health_http.h"

#include <CivetServer.h>
#include <civetweb.h>

#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace strata {

namespace {

std::mutex& ReadinessChecksMutex() {
  static std::mutex mu;
  return mu;
}

// GUARDED_BY(ReadinessChecksMutex())
std::map<int, std::function<std::string()>>& ReadinessChecks() {
  static auto* checks = new std::map<int, std::function<std::string()>>();
  return *checks;
}

// HEAD gets the headers alone.
void Reply(mg_connection* conn, bool head, int code, const char* reason, const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            code, reason, body.size() + 1);
  if (head) return;
  mg_write(conn, body.data(), body.size());
  mg_write(conn, "\n", 1);
}

// Returns 1 when it answered the request, 0 to let CivetWeb route it (/metrics).
int BeginRequest(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info == nullptr || info->local_uri == nullptr) return 0;
  const bool healthz = std::strcmp(info->local_uri, "/healthz") == 0;
  const bool readyz = std::strcmp(info->local_uri, "/readyz") == 0;
  if (!healthz && !readyz) return 0;
  const bool head = info->request_method != nullptr && std::strcmp(info->request_method, "HEAD") == 0;
  const bool get = info->request_method != nullptr && std::strcmp(info->request_method, "GET") == 0;
  if (!get && !head) {
    Reply(conn, head, 405, "Method Not Allowed", "use GET");
    return 405;
  }
  if (healthz) {
    Reply(conn, head, 200, "OK", "ok");
    return 200;
  }
  std::string reason = "starting";
  {
    std::lock_guard<std::mutex> lock(ReadinessChecksMutex());
    auto it = ReadinessChecks().find(info->server_port);
    if (it != ReadinessChecks().end()) reason = it->second();
  }
  if (reason.empty()) {
    Reply(conn, head, 200, "OK", "ready");
    return 200;
  }
  Reply(conn, head, 503, "Service Unavailable", "not ready: " + reason);
  return 503;
}

}  // namespace

const CivetCallbacks* HealthCallbacks() {
  static const CivetCallbacks callbacks = [] {
    CivetCallbacks c{};
    c.begin_request = &BeginRequest;
    return c;
  }();
  return &callbacks;
}

void RegisterReadiness(int port, std::function<std::string()> not_ready) {
  std::lock_guard<std::mutex> lock(ReadinessChecksMutex());
  ReadinessChecks()[port] = std::move(not_ready);
}

void UnregisterReadiness(int port) {
  std::lock_guard<std::mutex> lock(ReadinessChecksMutex());
  ReadinessChecks().erase(port);
}

}  // namespace strata
