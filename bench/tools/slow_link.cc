// strata-slow-link: a loopback relay that holds every chunk of bytes for a
// fixed delay in each direction (tests/support/slow_link.h), for benchmarks
// of a far node on a machine whose kernel has no netem. Prints the address to
// connect to, then relays until SIGINT or SIGTERM.
#include "tests/support/slow_link.h"

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  CLI::App app("strata-slow-link: relay TCP on loopback with an added delay each way");
  std::string target;
  int delay_ms = 1;
  app.add_option("--target", target, "127.0.0.1:PORT to relay to")->required();
  app.add_option("--delay-ms", delay_ms, "delay each chunk this long, each way (a round trip of at least twice it)")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the relay's threads start: they inherit it
  try {
    strata::testing::SlowLink link(target, std::chrono::milliseconds(delay_ms));
    std::printf("address=%s\n", link.address().c_str());
    std::fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-slow-link: %s\n", e.what());
    return 1;
  }
  return 0;
}
