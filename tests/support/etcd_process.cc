#include "tests/support/etcd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "etcd/api/etcdserverpb/rpc.grpc.pb.h"

namespace strata::testing {

namespace {

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(log, 1);
    dup2(log, 2);
    setpgid(0, 0);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

std::string EtcdProcess::Unavailable() {
  if (access(kBinary, X_OK) != 0) {
    return std::string(kBinary) + " is not installed (Debian package etcd-server; deploy/setup-debian.sh installs it)";
  }
  return "";
}

namespace {

// Binds a loopback TCP socket to `port` (0: any); returns the port bound, or 0.
int BindLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  int bound = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    bound = ntohs(addr.sin_port);
  }
  close(fd);
  return bound;
}

}  // namespace

int EtcdProcess::FreePort() {
  // Below the kernel's ephemeral range: a port bind(0) hands out (another
  // node's metrics listener, a client's outgoing connection) could be taken
  // between this check and the server's bind, which then fails.
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  // Never the same port twice in one process: a cluster picks every node's
  // port before any node binds, and gRPC binds with SO_REUSEPORT, so two
  // nodes given one port both start, and the port answers for the one that
  // was killed (seen once in CI: a killed node's status read "ok").
  static std::mutex mu;
  static std::set<int> given;
  static std::mt19937 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  if (low > 10000) {
    std::uniform_int_distribution<int> pick(10000, low - 1);
    for (int attempt = 0; attempt < 100; ++attempt) {
      const int candidate = pick(rng);
      if (given.count(candidate) != 0) continue;
      if (const int port = BindLoopback(candidate); port != 0) {
        given.insert(port);
        return port;
      }
    }
  }
  const int port = BindLoopback(0);
  given.insert(port);
  return port;
}

std::unique_ptr<EtcdProcess> EtcdProcess::Start() { return Start(Tls{}); }

std::unique_ptr<EtcdProcess> EtcdProcess::Start(const Tls& tls) {
  std::unique_ptr<EtcdProcess> p(new EtcdProcess());
  p->tls_ = tls;
  // etcd cannot bind port 0, so pick free ports and retry if another process
  // takes one before etcd binds it.
  std::string why;
  for (int attempt = 0; attempt < 5; ++attempt) {
    p->client_port_ = FreePort();
    p->peer_port_ = FreePort();
    if (p->client_port_ == 0 || p->peer_port_ == 0 || p->client_port_ == p->peer_port_) continue;
    p->endpoint_ = "127.0.0.1:" + std::to_string(p->client_port_);
    if (p->Launch(&why)) return p;
    std::error_code ec;
    std::filesystem::remove_all(p->dir_.Join("data"), ec);  // it names the old ports
  }
  ADD_FAILURE() << "etcd did not start: " << why << "\n" << p->Log();
  return nullptr;
}

bool EtcdProcess::Launch(std::string* why) {
  const std::string client_url = (tls_.cert.empty() ? "http://" : "https://") + endpoint_;
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port_);
  std::vector<std::string> argv = {
      kBinary,
      "--name",
      "strata-test",
      "--data-dir",
      dir_.Join("data"),
      "--listen-client-urls",
      client_url,
      "--advertise-client-urls",
      client_url,
      "--listen-peer-urls",
      peer_url,
      "--initial-advertise-peer-urls",
      peer_url,
      "--initial-cluster",
      "strata-test=" + peer_url,
      "--initial-cluster-token",
      "strata-test-" + std::to_string(getpid()) + "-" + std::to_string(client_port_),
      "--log-level",
      "warn",
  };
  if (!tls_.cert.empty()) {
    argv.insert(argv.end(),
                {"--cert-file", tls_.cert, "--key-file", tls_.key, "--trusted-ca-file", tls_.ca, "--client-cert-auth"});
  }
  pid_ = Spawn(argv, dir_.Join("etcd.log"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      *why = "etcd exited during startup (port taken?)";
      return false;
    }
    if (Answers()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  *why = "etcd did not answer within 20 s";
  Kill();
  return false;
}

bool EtcdProcess::Answers() {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!tls_.cert.empty()) {
    auto slurp = [](const std::string& path) {
      std::ifstream in(path, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      return ss.str();
    };
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = slurp(tls_.ca);
    ssl.pem_cert_chain = slurp(tls_.client_cert);
    ssl.pem_private_key = slurp(tls_.client_key);
    credentials = grpc::SslCredentials(ssl);
  }
  auto channel = grpc::CreateChannel(endpoint_, credentials);
  auto kv = etcdserverpb::KV::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  etcdserverpb::RangeRequest req;
  req.set_key("/strata-test/ping");
  etcdserverpb::RangeResponse resp;
  return kv->Range(&context, req, &resp).ok();
}

EtcdProcess::~EtcdProcess() { Kill(); }

std::string EtcdProcess::Log() const {
  std::ifstream in(dir_.Join("etcd.log"), std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void EtcdProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  paused_ = false;
}

bool EtcdProcess::Restart() {
  Kill();
  std::string why;
  if (Launch(&why)) return true;
  ADD_FAILURE() << "etcd did not restart: " << why << "\n" << Log();
  return false;
}

void EtcdProcess::Pause() {
  if (pid_ <= 0 || paused_) return;
  kill(pid_, SIGSTOP);
  paused_ = true;
}

void EtcdProcess::Resume() {
  if (pid_ <= 0 || !paused_) return;
  kill(pid_, SIGCONT);
  paused_ = false;
}

}  // namespace strata::testing
