#include "client/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace strata::client_internal {

spdlog::logger& Log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    if (auto registered = spdlog::get("strata")) return registered;
    try {
      auto created = spdlog::stderr_color_mt("strata");
      created->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
      return created;
    } catch (const spdlog::spdlog_ex&) {  // registered by another thread meanwhile
      return spdlog::get("strata");
    }
  }();
  return *logger;
}

}  // namespace strata::client_internal
