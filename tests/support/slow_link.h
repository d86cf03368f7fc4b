// SlowLink: a TCP relay on loopback that holds every chunk of bytes for a
// fixed delay before passing it on, in both directions, so that a connection
// through it has at least twice that delay as its round trip. Tests put it
// between two stratad processes to stand for a slow network link (the
// kernel's netem qdisc, which would do this without a relay, is not built on
// these machines). The bytes pass unchanged.
//
// Thread-safety: the relay runs on its own threads; the object's methods are
// called from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::testing {

class SlowLink {
 public:
  // Listens on a free loopback port and relays each connection to `target`
  // ("127.0.0.1:PORT"), delaying each chunk by `delay`.
  SlowLink(const std::string& target, std::chrono::milliseconds delay);
  // Closes the listener and every relayed connection, and joins the threads.
  ~SlowLink();
  SlowLink(const SlowLink&) = delete;
  SlowLink& operator=(const SlowLink&) = delete;

  // "127.0.0.1:PORT": where to connect instead of the target.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Bytes relayed so far, both directions.
  uint64_t bytes() const { return bytes_.load(); }

 private:
  void Accept();
  // Copies from one socket to the other, each chunk `delay_` after it was read.
  void Pipe(int from, int to);

  const int target_port_;
  const std::chrono::milliseconds delay_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> bytes_{0};
  std::mutex mu_;
  std::vector<int> fds_;              // GUARDED_BY(mu_): every relayed socket, closed by the destructor
  std::vector<std::thread> threads_;  // GUARDED_BY(mu_)
  std::thread acceptor_;
};

}  // namespace strata::testing
