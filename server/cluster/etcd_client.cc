#include "server/cluster/etcd_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/grpc_status.h"
#include "common/mutex.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  // etcd restarts in about a second; the default backoff (up to 120 s) would
  // keep a node away from it long after it is back.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Notice a dead connection under an idle watch. etcd refuses pings more
  // often than every 5 s (its --grpc-keepalive-min-time).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return grpc::CreateCustomChannel(address, credentials, args);
}

std::string StripScheme(const std::string& endpoint) {
  for (const char* scheme : {"http://", "https://"}) {
    const std::string s(scheme);
    if (endpoint.rfind(s, 0) == 0) return endpoint.substr(s.size());
  }
  return endpoint;
}

EtcdKeyValue FromProto(const mvccpb::KeyValue& kv) {
  EtcdKeyValue out;
  out.key = kv.key();
  out.value = kv.value();
  out.create_revision = kv.create_revision();
  out.mod_revision = kv.mod_revision();
  out.version = kv.version();
  out.lease = kv.lease();
  return out;
}

EtcdRange FromProto(const etcdserverpb::RangeResponse& r) {
  EtcdRange out;
  out.revision = r.header().revision();
  for (const auto& kv : r.kvs()) out.kvs.push_back(FromProto(kv));
  return out;
}

}  // namespace

// ---------------------------------------------------------------- EtcdClient

EtcdClient::EtcdClient(Options options) : options_(std::move(options)) {
  for (const auto& e : options_.endpoints) {
    Endpoint ep;
    ep.address = StripScheme(e);
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    if (e.rfind("https://", 0) == 0) {
      credentials = options_.https_credentials ? options_.https_credentials : grpc::SslCredentials({});
    }
    ep.channel = MakeChannel(ep.address, credentials);
    ep.kv = etcdserverpb::KV::NewStub(ep.channel);
    ep.lease = etcdserverpb::Lease::NewStub(ep.channel);
    ep.watch = etcdserverpb::Watch::NewStub(ep.channel);
    endpoints_.push_back(std::move(ep));
  }
}

std::string EtcdClient::EndpointList() const {
  std::string out;
  for (const auto& ep : endpoints_) out += (out.empty() ? "" : ",") + ep.address;
  return out;
}

std::string EtcdClient::PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

void EtcdClient::RotateEndpoint(size_t failed) {
  if (endpoints_.size() < 2) return;
  size_t expected = failed;
  current_.compare_exchange_strong(expected, (failed + 1) % endpoints_.size());
}

Status EtcdClient::Call(const char* what, const std::function<grpc::Status(Endpoint&, grpc::ClientContext*)>& call) {
  if (endpoints_.empty()) return Status::FailedPrecondition("etcd: no endpoints configured");
  const size_t start = current_.load();
  grpc::Status last;
  for (size_t k = 0; k < endpoints_.size(); ++k) {
    const size_t i = (start + k) % endpoints_.size();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
    last = call(endpoints_[i], &context);
    if (last.error_code() == grpc::StatusCode::UNAVAILABLE) continue;
    if (k != 0) current_.store(i);
    if (last.ok()) return Status::OK();
    return FromGrpcStatus(last).WithContext(std::string("etcd ") + what + " at " + endpoints_[i].address);
  }
  return Status::Unavailable(std::string("etcd ") + what + ": no endpoint reachable (" + EndpointList() +
                             "): " + last.error_message());
}

Result<EtcdRange> EtcdClient::Get(const std::string& key) {
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  etcdserverpb::RangeResponse resp;
  STRATA_RETURN_IF_ERROR(
      Call("get", [&](Endpoint& ep, grpc::ClientContext* c) { return ep.kv->Range(c, req, &resp); }));
  return FromProto(resp);
}

Result<EtcdRange> EtcdClient::GetPrefix(const std::string& prefix) {
  etcdserverpb::RangeRequest req;
  req.set_key(prefix);
  req.set_range_end(PrefixEnd(prefix));
  etcdserverpb::RangeResponse resp;
  STRATA_RETURN_IF_ERROR(
      Call("get prefix", [&](Endpoint& ep, grpc::ClientContext* c) { return ep.kv->Range(c, req, &resp); }));
  return FromProto(resp);
}

Result<int64_t> EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  etcdserverpb::PutRequest req;
  req.set_key(key);
  req.set_value(value);
  req.set_lease(lease);
  etcdserverpb::PutResponse resp;
  STRATA_RETURN_IF_ERROR(Call("put", [&](Endpoint& ep, grpc::ClientContext* c) { return ep.kv->Put(c, req, &resp); }));
  return resp.header().revision();
}

Result<int64_t> EtcdClient::Delete(const std::string& key) {
  etcdserverpb::DeleteRangeRequest req;
  req.set_key(key);
  etcdserverpb::DeleteRangeResponse resp;
  STRATA_RETURN_IF_ERROR(
      Call("delete", [&](Endpoint& ep, grpc::ClientContext* c) { return ep.kv->DeleteRange(c, req, &resp); }));
  return resp.deleted();
}

Result<EtcdCasResult> EtcdClient::CompareAndSwap(const std::string& key, int64_t expected_mod_revision,
                                                 const std::string& value, int64_t lease) {
  etcdserverpb::TxnRequest req;
  auto* cmp = req.add_compare();
  cmp->set_key(key);
  cmp->set_target(etcdserverpb::Compare::MOD);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_mod_revision(expected_mod_revision);
  auto* put = req.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  put->set_lease(lease);
  req.add_failure()->mutable_request_range()->set_key(key);
  etcdserverpb::TxnResponse resp;
  STRATA_RETURN_IF_ERROR(
      Call("compare-and-swap", [&](Endpoint& ep, grpc::ClientContext* c) { return ep.kv->Txn(c, req, &resp); }));
  EtcdCasResult out;
  out.swapped = resp.succeeded();
  out.revision = resp.header().revision();  // a successful put's revision is the txn's
  if (!out.swapped && resp.responses_size() == 1 && resp.responses(0).has_response_range()) {
    const auto& range = resp.responses(0).response_range();
    if (range.kvs_size() > 0) out.current = FromProto(range.kvs(0));
  }
  return out;
}

Result<EtcdLease> EtcdClient::LeaseGrant(int64_t ttl_s) {
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(ttl_s);
  etcdserverpb::LeaseGrantResponse resp;
  STRATA_RETURN_IF_ERROR(
      Call("lease grant", [&](Endpoint& ep, grpc::ClientContext* c) { return ep.lease->LeaseGrant(c, req, &resp); }));
  if (!resp.error().empty()) return Status::Unavailable("etcd lease grant: " + resp.error());
  return EtcdLease{resp.id(), resp.ttl()};
}

Status EtcdClient::LeaseRevoke(int64_t id) {
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(id);
  etcdserverpb::LeaseRevokeResponse resp;
  return Call("lease revoke",
              [&](Endpoint& ep, grpc::ClientContext* c) { return ep.lease->LeaseRevoke(c, req, &resp); });
}

Result<int64_t> EtcdClient::LeaseTimeToLive(int64_t id) {
  etcdserverpb::LeaseTimeToLiveRequest req;
  req.set_id(id);
  etcdserverpb::LeaseTimeToLiveResponse resp;
  STRATA_RETURN_IF_ERROR(Call("lease time to live", [&](Endpoint& ep, grpc::ClientContext* c) {
    return ep.lease->LeaseTimeToLive(c, req, &resp);
  }));
  return resp.ttl();
}

std::unique_ptr<EtcdKeepAlive> EtcdClient::KeepAlive(EtcdLease lease, std::function<void(const Status&)> on_lost) {
  return std::unique_ptr<EtcdKeepAlive>(new EtcdKeepAlive(this, lease, std::move(on_lost)));
}

std::unique_ptr<EtcdWatch> EtcdClient::Watch(const std::string& key, bool prefix, int64_t start_revision,
                                             EtcdWatch::Callback fn) {
  return std::unique_ptr<EtcdWatch>(
      new EtcdWatch(this, key, prefix ? PrefixEnd(key) : std::string(), start_revision, std::move(fn)));
}

// ------------------------------------------------------------- EtcdKeepAlive

EtcdKeepAlive::EtcdKeepAlive(EtcdClient* client, EtcdLease lease, std::function<void(const Status&)> on_lost)
    : client_(client), lease_(lease), on_lost_(std::move(on_lost)) {
  // Owner: this keep-alive (joined by Stop). Purpose: the lease's refresh
  // loop over a LeaseKeepAlive stream; it blocks in the synchronous stream's
  // Write and, through the reader thread RunStream starts, its Read, so it is
  // kept off the shared executors.
  thread_ = std::thread([this] { Run(); });
}

EtcdKeepAlive::~EtcdKeepAlive() { Stop(); }

void EtcdKeepAlive::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void EtcdKeepAlive::Run() {
  const auto ttl = std::chrono::seconds(std::max<int64_t>(lease_.ttl_s, 1));
  const auto retry = std::chrono::milliseconds(std::clamp<int64_t>(lease_.ttl_s * 1000 / 3, 100, 500));
  auto last_ok = Clock::now();  // the lease was just granted
  while (true) {
    Status status = RunStream(&last_ok);
    MutexLock lock(&mu_);
    if (stopping_) return;
    if (status.ok() && Clock::now() - last_ok >= ttl) {
      status = Status::DeadlineExceeded("no keep-alive answered for the lease's TTL (" + std::to_string(lease_.ttl_s) +
                                        " s) at " + client_->EndpointList());
    }
    if (!status.ok()) {
      lost_ = true;
      lock.Unlock();
      on_lost_(status);
      return;
    }
    cv_.WaitUntil(&mu_, std::min(Clock::now() + retry, last_ok + ttl), [this]() REQUIRES(mu_) { return stopping_; });
  }
}

Status EtcdKeepAlive::RunStream(Clock::time_point* last_ok) {
  const auto interval = std::chrono::milliseconds(std::max<int64_t>(lease_.ttl_s * 1000 / 3, 100));
  const auto ttl = std::chrono::seconds(std::max<int64_t>(lease_.ttl_s, 1));
  const size_t index = client_->CurrentIndex();
  grpc::ClientContext context;
  {
    MutexLock lock(&mu_);
    if (stopping_) return Status::OK();
    context_ = &context;
  }
  auto stream = client_->endpoints_[index].lease->LeaseKeepAlive(&context);
  const auto stream_start = Clock::now();
  bool reader_done = false;  // under mu_ (a local: the analysis checks members only)
  bool gone = false;         // under mu_
  // Owner: this RunStream call (joined before it returns). Purpose: the
  // stream's blocking Read of the refresh answers while the caller writes.
  std::thread reader([&] {
    etcdserverpb::LeaseKeepAliveResponse resp;
    while (stream->Read(&resp)) {
      MutexLock lock(&mu_);
      if (resp.ttl() <= 0) {
        gone = true;
        break;
      }
      *last_ok = Clock::now();
    }
    MutexLock lock(&mu_);
    reader_done = true;
    cv_.SignalAll();
  });

  etcdserverpb::LeaseKeepAliveRequest req;
  req.set_id(lease_.id);
  MutexLock lock(&mu_);
  bool healthy = true;
  while (!stopping_ && !reader_done && !gone) {
    const auto sent = Clock::now();
    lock.Unlock();
    const bool wrote = stream->Write(req);
    lock.Lock();
    if (!wrote) {
      healthy = false;
      break;
    }
    // Wake for the next refresh, or when the lease runs out unrefreshed.
    cv_.WaitUntil(&mu_, std::min(sent + interval, *last_ok + ttl),
                  [&]() REQUIRES(mu_) { return stopping_ || reader_done || gone; });
    const auto now = Clock::now();
    if (now - *last_ok >= ttl) break;  // Run() reports the loss
    // Two refreshes unanswered: the stream (or etcd) is stuck; try another.
    if (now - std::max(*last_ok, stream_start) > 2 * interval) {
      healthy = false;
      break;
    }
  }
  if (reader_done && !gone) healthy = false;
  const bool lease_gone = gone;
  context_ = nullptr;
  lock.Unlock();
  context.TryCancel();
  reader.join();
  const grpc::Status finished = stream->Finish();
  if (lease_gone) return Status::NotFound("etcd lease " + std::to_string(lease_.id) + " expired or was revoked");
  if (!healthy) {
    spdlog::debug("etcd keep-alive stream to {} ended: {}", client_->endpoints_[index].address,
                  finished.error_message());
    client_->RotateEndpoint(index);
  }
  return Status::OK();
}

// ----------------------------------------------------------------- EtcdWatch

EtcdWatch::EtcdWatch(EtcdClient* client, std::string key, std::string range_end, int64_t start_revision, Callback fn)
    : client_(client),
      key_(std::move(key)),
      range_end_(std::move(range_end)),
      fn_(std::move(fn)),
      next_revision_(start_revision) {
  // Owner: this watch (joined by Stop, which cancels the stream). Purpose:
  // the Watch stream's blocking Read, which can wait for hours between
  // events: a thread of its own, never a thread of a shared executor.
  thread_ = std::thread([this] { Run(); });
}

EtcdWatch::~EtcdWatch() { Stop(); }

void EtcdWatch::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void EtcdWatch::Run() {
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    const size_t index = client_->CurrentIndex();
    grpc::ClientContext context;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      context_ = &context;
    }
    auto stream = client_->endpoints_[index].watch->Watch(&context);
    etcdserverpb::WatchRequest req;
    auto* create = req.mutable_create_request();
    create->set_key(key_);
    create->set_range_end(range_end_);
    create->set_start_revision(next_revision_);
    bool created = false;
    if (stream->Write(req)) {
      etcdserverpb::WatchResponse resp;
      while (stream->Read(&resp)) {
        if (resp.created()) {
          created = true;
          backoff = std::chrono::milliseconds(100);
        }
        if (resp.canceled()) {
          if (resp.compact_revision() > 0) {
            // The history from next_revision_ is gone: follow on from the
            // oldest revision etcd still has, and tell the owner to re-read.
            spdlog::warn("etcd watch on {}: revision {} compacted; resuming at {}", key_, next_revision_,
                         resp.compact_revision());
            next_revision_ = resp.compact_revision();
            fn_({}, resp.header().revision());
          } else {
            spdlog::warn("etcd watch on {} canceled: {}", key_, resp.cancel_reason());
          }
          break;
        }
        if (resp.events_size() == 0) continue;
        std::vector<EtcdEvent> events;
        events.reserve(resp.events_size());
        for (const auto& e : resp.events()) {
          EtcdEvent ev;
          ev.type = e.type() == mvccpb::Event::DELETE ? EtcdEvent::Type::kDelete : EtcdEvent::Type::kPut;
          ev.kv = FromProto(e.kv());
          events.push_back(std::move(ev));
        }
        next_revision_ = events.back().kv.mod_revision + 1;
        fn_(events, resp.header().revision());
      }
    }
    {
      MutexLock lock(&mu_);
      context_ = nullptr;
    }
    context.TryCancel();
    const grpc::Status finished = stream->Finish();
    MutexLock lock(&mu_);
    if (stopping_) return;
    spdlog::debug("etcd watch on {} at {} ended: {}", key_, client_->endpoints_[index].address,
                  finished.error_message());
    if (!created) client_->RotateEndpoint(index);
    cv_.WaitFor(&mu_, backoff, [this]() REQUIRES(mu_) { return stopping_; });
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace strata
