// Private to libstrata: where the library's own messages go (a node failing
// over, a node back). The spdlog logger named "strata": the one the
// application registered under that name, if any (`strata` the CLI does), else
// one created on first use that writes to stderr. Never spdlog's default
// logger, which writes to stdout: a trainer keeps its stdout for its own
// output (metrics, a JSON line per step), and a library's warnings there break
// whatever reads it.
//
// Thread-safety: safe for concurrent use.
#pragma once

#include <spdlog/spdlog.h>

namespace strata::client_internal {

spdlog::logger& Log();

}  // namespace strata::client_internal
