// Real processes for integration tests: a stratad on loopback, and commands
// (the strata CLI, curl) run to completion with their output captured.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace strata::testing {

// Paths of the binaries under test, set by the build.
std::string StratadBinary();
std::string StrataCliBinary();

struct CommandResult {
  int exit_code = -1;  // -1 if it did not exit normally
  std::string out;     // stdout
  std::string err;     // stderr
};

// Runs argv[0] with the arguments, waiting at most timeout_s seconds (then SIGKILL).
CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_s = 120);

// A stratad child process. The destructor kills it if it is still running.
class StratadProcess {
 public:
  struct Options {
    std::string data_dir;
    std::string node_id = "node-1";
    std::string listen = "127.0.0.1:0";  // port 0: stratad picks a free one and logs it
    std::string metrics_listen = "127.0.0.1:0";
    std::vector<std::string> extra_args;
    std::string binary;  // empty: the stratad of this build (StratadBinary())
    // Its open-file limit, soft and hard (RLIMIT_NOFILE); 0: this process's.
    uint64_t max_open_files = 0;
  };

  // Starts stratad and waits (up to 20 s) for its "ready:" log line. Returns
  // nullptr (with a gtest failure) if it exits or never becomes ready.
  static std::unique_ptr<StratadProcess> Start(const Options& options);
  ~StratadProcess();

  const std::string& address() const { return address_; }
  const std::string& metrics_address() const { return metrics_address_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  std::string Log() const;

  // SIGTERM, then waits up to timeout_s. Returns the exit status, or -1 if it
  // did not exit normally (then it is killed).
  int Terminate(int timeout_s = 30);
  // SIGKILL and reap. Here, in Running() and in the destructor, a process
  // found dead of a crash (SIGSEGV, SIGABRT, ...: a signal no test sends)
  // fails the test with the end of its log, whatever the test checks.
  void Kill();
  // Sends `signo` (SIGSTOP, SIGCONT...) without waiting.
  void Signal(int signo);
  bool Running();

 private:
  StratadProcess() = default;
  int Wait(int timeout_s);
  void FailIfCrashed(int status) const;

  pid_t pid_ = -1;
  std::string log_path_;
  std::string address_;
  std::string metrics_address_;
};

}  // namespace strata::testing
