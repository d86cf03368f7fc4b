// RunStratad: stratad's command line, logging and signal handling.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <functional>
#include <iostream>

#include "common/units.h"
#include "server/base/open_files.h"
#include "server/daemon/server.h"
#include "server/daemon/systemd_notify.h"

namespace strata {

namespace {

void SetUpLogging(const NodeConfig& config) {
  auto logger = spdlog::stderr_color_mt("stratad");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ [" + config.node_id + "] %v");
  logger->set_level(spdlog::level::from_str(config.log_level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace

int RunStratad(int argc, char** argv) {
  CLI::App app{
      "stratad: a strata shard server. Stores datasets as checksummed shards with metadata in RocksDB and "
      "streams balanced minibatches over gRPC.\n\nEvery setting can come from a YAML file (--config); a flag "
      "overrides the file. SIGTERM drains open streams and exits 0."};
  NodeFlags flags;
  app.add_option("--config", flags.config_file, "YAML config file (see config/single-node.yaml)")
      ->check(CLI::ExistingFile);
  AddConfigFlags(app, &flags);
  bool print_reference = false;
  app.add_flag("--print-config-reference", print_reference,
               "print the table of settings (key, flag, default, meaning) in Markdown, as README.md has it, and exit");
  SecurityConfig security;  // the files come from the config (tls.*, auth_tokens); the opt-out only from here
  app.add_flag("--insecure", security.insecure,
               "serve a non-loopback address without TLS and tokens (anyone who reaches the port can read, write "
               "and delete data); a flag only, never a config file's setting")
      ->group("Security");
  // Test only (hidden from --help): report this many bytes free on the data
  // directory's file system, so tests can cross the disk watermarks without
  // filling a disk.
  std::string test_disk_free;
  app.add_option("--test-disk-free-bytes", test_disk_free)->group("");
  app.set_version_flag("--version", std::string("stratad ") + STRATA_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // usage errors exit 2
  }
  if (print_reference) {
    std::cout << ConfigReferenceMarkdown();
    return 0;
  }

  auto config = LoadNodeConfig(flags);
  if (!config.ok()) {
    std::cerr << "stratad: " << config.status().ToString() << "\n";
    return 2;
  }
  if (!test_disk_free.empty()) {
    auto bytes = ParseByteSize(test_disk_free);
    if (!bytes.ok() || bytes.value() == 0) {
      std::cerr << "stratad: --test-disk-free-bytes: expected a size above 0, got '" << test_disk_free << "'\n";
      return 2;
    }
    config->test_disk_free_bytes = bytes.value();
  }
  security.tls.cert = config->tls_cert;
  security.tls.key = config->tls_key;
  security.tls.client_ca = config->tls_client_ca;
  security.auth_tokens = config->auth_tokens;
  SetUpLogging(config.value());
  const OpenFileLimit files = RaiseOpenFileLimit();
  if (!files.error.empty()) {
    spdlog::warn("open files: the soft limit stays {} ({}); raise LimitNOFILE or `ulimit -n`", files.now, files.error);
  } else if (files.now != files.before) {
    spdlog::info("open files: soft limit raised from {} to {}", files.before,
                 files.now == 0 ? std::string("unlimited") : std::to_string(files.now));
  }

  // A peer or scraper that closes a connection stratad writes to must not
  // kill it: SIGPIPE would end the process without a log line or a core file.
  // (gRPC and civetweb avoid it on their own sockets; this covers the rest.)
  std::signal(SIGPIPE, SIG_IGN);
  // Block the signals before any thread starts, so that only the signal_set
  // (via asio's own handling) ever sees them.
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  boost::asio::signal_set hangups(io, SIGHUP);

  auto server = Server::Start(config.value(), security);
  if (!server.ok()) {
    spdlog::error("cannot start: {}", server.status().ToString());
    return 1;
  }
  spdlog::info("ready: grpc={} metrics={} data_dir={}{}", server.value()->address(),
               server.value()->metrics_address().empty() ? "off" : server.value()->metrics_address(), config->data_dir,
               server.value()->peer_address().empty() ? "" : " peer=" + server.value()->peer_address());

  SystemdNotifier systemd;  // Type=notify: ready now; watchdog pings while the process is not wedged
  systemd.Ready("serving on " + server.value()->address(), [s = server.value().get()] {
    (void)s->NotReadyReason();  // takes the locks a wedged node would hold
    return true;
  });

  int exit_code = 0;
  std::function<void()> on_hangup = [&] {
    hangups.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      // Logs what it re-read and what it kept.
      server.value()->Reload().IgnoreError();
      on_hangup();
    });
  };
  on_hangup();
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("received {}; shutting down", signo == SIGTERM ? "SIGTERM" : "SIGINT");
    systemd.Stopping("draining open streams");
    hangups.cancel();
    Status stopped = server.value()->Stop();
    if (!stopped.ok()) exit_code = 1;
  });
  io.run();
  systemd.StopWatchdog();  // it asks the server, which goes next
  server.value().reset();
  return exit_code;
}

}  // namespace strata
