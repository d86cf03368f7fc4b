// A small synchronous client for the part of etcd's v3 API that membership
// uses (proto/etcd/api): reads, writes, a compare-and-swap, leases with a
// keep-alive loop, and watches. The one place strata talks to etcd; gRPC
// errors become strata::Status here.
//
// Endpoints are tried in turn: a call that fails with Unavailable moves on to
// the next endpoint (at most once round the list). Every unary call has a
// deadline (Options::call_timeout).
//
// Thread-safety: an EtcdClient is safe for concurrent use. EtcdKeepAlive and
// EtcdWatch each run one thread of their own; their callbacks run there and
// must not destroy the object that runs them. The client must outlive every
// keep-alive and watch it created.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "etcd/api/etcdserverpb/rpc.grpc.pb.h"

namespace strata {

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;  // 0: none
};

struct EtcdRange {
  std::vector<EtcdKeyValue> kvs;  // in key order
  int64_t revision = 0;           // the store's revision the read saw
};

struct EtcdCasResult {
  bool swapped = false;
  int64_t revision = 0;                 // swapped: the key's new mod_revision; else the store's revision
  std::optional<EtcdKeyValue> current;  // not swapped: the key as it is now (nullopt: absent)
};

struct EtcdLease {
  int64_t id = 0;
  int64_t ttl_s = 0;  // as granted; etcd may raise a small TTL to its minimum
};

struct EtcdEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  EtcdKeyValue kv;  // kDelete: key and mod_revision (the delete's revision) only
};

class EtcdClient;

// Keeps a lease alive: a LeaseKeepAlive stream that refreshes every TTL/3,
// reopened (on the next endpoint) when it breaks or stops answering. When the
// lease is lost -- etcd says it no longer exists, or no refresh succeeded for a
// whole TTL -- it calls on_lost once and stops; the owner registers anew.
class EtcdKeepAlive {
 public:
  ~EtcdKeepAlive();  // Stop()
  EtcdKeepAlive(const EtcdKeepAlive&) = delete;
  EtcdKeepAlive& operator=(const EtcdKeepAlive&) = delete;

  // Stops refreshing (the lease is not revoked). Idempotent. REQUIRES: not
  // called from on_lost.
  void Stop();
  bool lost() const { return lost_.load(); }

 private:
  friend class EtcdClient;
  EtcdKeepAlive(EtcdClient* client, EtcdLease lease, std::function<void(const Status&)> on_lost);
  void Run();
  // One stream's life. Returns non-OK when the lease is gone.
  Status RunStream(std::chrono::steady_clock::time_point* last_ok);

  EtcdClient* const client_;
  const EtcdLease lease_;
  const std::function<void(const Status&)> on_lost_;
  std::atomic<bool> lost_{false};

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ GUARDED_BY(mu_) = nullptr;  // the open stream's
  std::thread thread_;
};

// Follows a key or a prefix from a revision on, reconnecting (from the
// revision after the last event seen) when the stream breaks. If etcd has
// compacted the history it needs, it starts again from the present and calls
// `on_events` with no events, meaning "re-read; events may have been missed".
class EtcdWatch {
 public:
  using Callback = std::function<void(const std::vector<EtcdEvent>& events, int64_t revision)>;

  ~EtcdWatch();  // Stop()
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  // Stops the thread. Idempotent. REQUIRES: not called from the callback.
  void Stop();

 private:
  friend class EtcdClient;
  EtcdWatch(EtcdClient* client, std::string key, std::string range_end, int64_t start_revision, Callback fn);
  void Run();

  EtcdClient* const client_;
  const std::string key_;
  const std::string range_end_;
  const Callback fn_;
  int64_t next_revision_;  // only the watch thread touches it

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

class EtcdClient {
 public:
  struct Options {
    std::vector<std::string> endpoints;            // HOST:PORT (an "http://" prefix is accepted); non-empty
    std::chrono::milliseconds call_timeout{2000};  // deadline of every unary call
    // For "https://" endpoints: TLS with these credentials (stratad: the
    // node's own, server/base/security_config.h); null: TLS with the system's
    // roots and no client certificate. Other endpoints are plaintext.
    std::shared_ptr<grpc::ChannelCredentials> https_credentials;
  };

  explicit EtcdClient(Options options);
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // "host1:2379,host2:2379", for messages.
  std::string EndpointList() const;

  // The key, if present (0 or 1 kvs).
  Result<EtcdRange> Get(const std::string& key);
  // Every key that starts with `prefix`, in key order.
  Result<EtcdRange> GetPrefix(const std::string& prefix);
  // Returns the revision of the write. lease 0: none.
  Result<int64_t> Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // Returns the number of keys deleted (0 or 1).
  Result<int64_t> Delete(const std::string& key);
  // If the key's mod_revision is `expected_mod_revision` (0: the key is absent),
  // writes `value`; otherwise reads the key. One transaction.
  Result<EtcdCasResult> CompareAndSwap(const std::string& key, int64_t expected_mod_revision, const std::string& value,
                                       int64_t lease = 0);

  Result<EtcdLease> LeaseGrant(int64_t ttl_s);
  // Deletes every key attached to the lease. NotFound if it no longer exists.
  Status LeaseRevoke(int64_t id);
  // Seconds lease `id` has left (-1: it has expired or never was).
  Result<int64_t> LeaseTimeToLive(int64_t id);

  // Starts keeping `lease` alive; see EtcdKeepAlive.
  std::unique_ptr<EtcdKeepAlive> KeepAlive(EtcdLease lease, std::function<void(const Status&)> on_lost);
  // Watches `key` (prefix: every key starting with it) from `start_revision`
  // (inclusive; 0: from now). See EtcdWatch.
  std::unique_ptr<EtcdWatch> Watch(const std::string& key, bool prefix, int64_t start_revision, EtcdWatch::Callback fn);

  // The range_end that makes [prefix, range_end) every key with the prefix.
  static std::string PrefixEnd(const std::string& prefix);

 private:
  friend class EtcdKeepAlive;
  friend class EtcdWatch;

  struct Endpoint {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  };

  // Runs `call(endpoint, context)` on each endpoint in turn from the current
  // one, moving on after Unavailable. `what` names the call in errors.
  Status Call(const char* what, const std::function<grpc::Status(Endpoint&, grpc::ClientContext*)>& call);
  // The endpoint streams use now; RotateEndpoint() moves on from `failed`
  // (unless another caller already has).
  size_t CurrentIndex() const { return current_.load(); }
  void RotateEndpoint(size_t failed);

  const Options options_;
  std::vector<Endpoint> endpoints_;  // fixed after construction
  std::atomic<size_t> current_{0};
};

}  // namespace strata
