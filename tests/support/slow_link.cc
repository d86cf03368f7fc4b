#include "tests/support/slow_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <stdexcept>

namespace strata::testing {

namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("SlowLink: no port in " + address);
  return std::stoi(address.substr(colon + 1));
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

SlowLink::SlowLink(const std::string& target, std::chrono::milliseconds delay)
    : target_port_(PortOf(target)), delay_(delay) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof(a);
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(listener_, 16) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    throw std::runtime_error(std::string("SlowLink: cannot listen: ") + std::strerror(errno));
  }
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
}

SlowLink::~SlowLink() {
  stopping_ = true;
  ::shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  ::close(listener_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  for (int fd : fds_) ::close(fd);
}

void SlowLink::Accept() {
  for (;;) {
    pollfd p{listener_, POLLIN, 0};
    if (::poll(&p, 1, 100) < 0 || stopping_) return;
    if ((p.revents & POLLIN) == 0) continue;
    const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (stopping_) return;
      continue;
    }
    const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in a = Loopback(target_port_);
    if (server < 0 || ::connect(server, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(client);  // the target is down: so is the link
      if (server >= 0) ::close(server);
      continue;
    }
    const int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(client);
    fds_.push_back(server);
    threads_.emplace_back([this, client, server] { Pipe(client, server); });
    threads_.emplace_back([this, client, server] { Pipe(server, client); });
  }
}

void SlowLink::Pipe(int from, int to) {
  // Chunks wait in order, each until `delay_` after it arrived; reading goes
  // on meanwhile, so the delay adds latency, not a cap on throughput.
  using Clock = std::chrono::steady_clock;
  std::deque<std::pair<Clock::time_point, std::string>> held;
  bool open = true;
  char buf[16384];
  while (open || !held.empty()) {
    int wait_ms = -1;
    if (!held.empty()) {
      const auto due = held.front().first + delay_;
      wait_ms = static_cast<int>(
          std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now()).count() + 1));
    }
    if (open) {
      pollfd p{from, POLLIN, 0};
      if (::poll(&p, 1, wait_ms) < 0) break;
      if (p.revents != 0) {
        const ssize_t n = ::recv(from, buf, sizeof(buf), 0);
        if (n <= 0) {
          open = false;
        } else {
          held.emplace_back(Clock::now(), std::string(buf, static_cast<size_t>(n)));
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    }
    while (!held.empty() && held.front().first + delay_ <= Clock::now()) {
      if (!WriteAll(to, held.front().second.data(), held.front().second.size())) return;
      bytes_ += held.front().second.size();
      held.pop_front();
    }
  }
  ::shutdown(to, SHUT_WR);
}

}  // namespace strata::testing
