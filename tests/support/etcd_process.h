// A real single-member etcd (the Debian etcd-server binary) on loopback, for
// tests of etcd membership. Each one has its own data directory and ports.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "tests/support/temp_dir.h"

namespace strata::testing {

class EtcdProcess {
 public:
  // Where the binary is expected (deploy/setup-debian.sh installs etcd-server).
  static constexpr const char* kBinary = "/usr/bin/etcd";

  // Empty if etcd can run here; otherwise why not, for GTEST_SKIP:
  //   if (auto why = EtcdProcess::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  static std::string Unavailable();

  // Starts etcd on free loopback ports and waits (up to 20 s) until it answers
  // a read. Returns nullptr (with a gtest failure) if it never does.
  static std::unique_ptr<EtcdProcess> Start();
  // Serving TLS on its client port, with client certificates required and
  // verified against tls.ca (etcd --client-cert-auth); `tls.client_*` is
  // what Answers presents.
  struct Tls {
    std::string cert, key, ca;
    std::string client_cert, client_key;
  };
  static std::unique_ptr<EtcdProcess> Start(const Tls& tls);
  ~EtcdProcess();  // SIGKILL; the data directory goes with it
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // HOST:PORT of the client API.
  const std::string& endpoint() const { return endpoint_; }
  // "https://HOST:PORT" when started with TLS, else endpoint().
  std::string url() const { return tls_.cert.empty() ? endpoint_ : "https://" + endpoint_; }
  pid_t pid() const { return pid_; }
  std::string Log() const;

  // SIGKILL and reap: etcd is gone, its data stays.
  void Kill();
  // Starts it again on the same ports and data (after Kill()), and waits until
  // it answers. False (with a gtest failure) if it does not.
  bool Restart();
  // SIGSTOP / SIGCONT: etcd hangs without closing its connections.
  void Pause();
  void Resume();

  // A loopback port nothing listens on now (for "etcd unreachable" tests).
  static int FreePort();

 private:
  EtcdProcess() = default;
  // Spawns etcd and waits until it answers; false if it exited or timed out.
  bool Launch(std::string* why);
  bool Answers();

  TempDir dir_;
  int client_port_ = 0;
  int peer_port_ = 0;
  std::string endpoint_;
  Tls tls_;  // empty: plaintext
  pid_t pid_ = -1;
  bool paused_ = false;
};

}  // namespace strata::testing
