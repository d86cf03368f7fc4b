#include "tests/support/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/support/temp_dir.h"

namespace strata::testing {

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// fork+exec with stdout and stderr sent to files, and with an open-file limit
// of max_open_files unless it is 0.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path,
            uint64_t max_open_files = 0) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = err_path == out_path ? out : open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    setpgid(0, 0);
    if (max_open_files != 0) {
      const struct rlimit limit { max_open_files, max_open_files };
      if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Waits for pid up to timeout; returns its exit status or -1 (and kills it).
int WaitFor(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string TempPath(const std::string& stem) {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + stem + "-XXXXXX";
  const int fd = mkstemp(tmpl.data());
  if (fd >= 0) close(fd);
  return tmpl;
}

}  // namespace

std::string StratadBinary() { return STRATA_STRATAD_BINARY; }
std::string StrataCliBinary() { return STRATA_CLI_BINARY; }

CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_s) {
  const std::string out = TempPath("strata-cmd-out");
  const std::string err = TempPath("strata-cmd-err");
  CommandResult r;
  const pid_t pid = Spawn(argv, out, err);
  r.exit_code = WaitFor(pid, timeout_s);
  r.out = Slurp(out);
  r.err = Slurp(err);
  unlink(out.c_str());
  unlink(err.c_str());
  return r;
}

std::unique_ptr<StratadProcess> StratadProcess::Start(const Options& o) {
  std::unique_ptr<StratadProcess> p(new StratadProcess());
  p->log_path_ = TempPath("stratad-" + o.node_id + "-log");
  std::vector<std::string> argv = {o.binary.empty() ? StratadBinary() : o.binary,
                                   "--data-dir",
                                   o.data_dir,
                                   "--listen",
                                   o.listen,
                                   "--metrics-listen",
                                   o.metrics_listen,
                                   "--node-id",
                                   o.node_id};
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  // The default watermarks (5% and 10% free) are about the host's disk, not
  // the test: on a host with little free space every ingest would be
  // refused. A test that is about watermarks sets its own (a flag, or a
  // config file, which LocalCluster writes with the same values).
  const bool sets_disk = std::any_of(o.extra_args.begin(), o.extra_args.end(), [](const std::string& a) {
    return a.rfind("--disk-", 0) == 0 || a == "--config";
  });
  if (o.binary.empty() && !sets_disk) {
    argv.insert(argv.end(), {"--disk-low-watermark", "1MiB", "--disk-high-watermark", "2MiB"});
  }
  p->pid_ = Spawn(argv, p->log_path_, p->log_path_, o.max_open_files);
  static const std::regex kReady(R"(ready: grpc=(\S+) metrics=(\S+))");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string log = Slurp(p->log_path_);
    if (std::regex_search(log, m, kReady)) {
      p->address_ = m[1];
      p->metrics_address_ = m[2] == "off" ? "" : std::string(m[2]);
      return p;
    }
    int status = 0;
    if (waitpid(p->pid_, &status, WNOHANG) == p->pid_) {
      p->pid_ = -1;
      ADD_FAILURE() << "stratad exited before it was ready:\n" << log;
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "stratad was not ready within 20 s:\n" << Slurp(p->log_path_);
  return nullptr;
}

StratadProcess::~StratadProcess() {
  if (pid_ > 0) Kill();
  if (!log_path_.empty()) unlink(log_path_.c_str());
}

void StratadProcess::FailIfCrashed(int status) const {
  if (!WIFSIGNALED(status)) return;
  const int sig = WTERMSIG(status);
  if (sig != SIGSEGV && sig != SIGBUS && sig != SIGABRT && sig != SIGILL && sig != SIGFPE && sig != SIGSYS) return;
  const std::string log = Log();
  constexpr size_t kTail = 6000;
  ADD_FAILURE() << "stratad " << address_ << " crashed (" << strsignal(sig) << "); the end of its log:\n"
                << (log.size() > kTail ? log.substr(log.size() - kTail) : log);
}

std::string StratadProcess::Log() const { return Slurp(log_path_); }

int StratadProcess::Wait(int timeout_s) {
  const int code = WaitFor(pid_, timeout_s);
  pid_ = -1;
  return code;
}

int StratadProcess::Terminate(int timeout_s) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  return Wait(timeout_s);
}

void StratadProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  if (waitpid(pid_, &status, 0) == pid_) FailIfCrashed(status);
  pid_ = -1;
}

void StratadProcess::Signal(int signo) {
  if (pid_ > 0) kill(pid_, signo);
}

bool StratadProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    FailIfCrashed(status);
    pid_ = -1;
    return false;
  }
  return true;
}

}  // namespace strata::testing
