#include "server/cluster/etcd_membership.h"

#include <google/protobuf/util/message_differencer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>

#include "common/input_limits.h"
#include "common/mutex.h"
#include "common/wall_clock.h"
#include "server/base/config.h"
#include "server/base/security_config.h"
#include "server/cluster/etcd_membership_impl.h"

namespace strata {

namespace {

// A CAS lost to another node is retried at once with a fresh read; past this
// many in one pass, the next pass tries again.
constexpr int kMaxCasAttempts = 8;

// Equal apart from the epoch.
bool SameContent(const v1::ClusterMap& a, const v1::ClusterMap& b) {
  v1::ClusterMap x = a;
  v1::ClusterMap y = b;
  x.set_epoch(0);
  y.set_epoch(0);
  return google::protobuf::util::MessageDifferencer::Equals(x, y);
}

const char* StateName(v1::NodeState s) {
  switch (s) {
    case v1::NODE_UP: return "up";
    case v1::NODE_DOWN: return "down";
    default: return "unknown";
  }
}

// "node-2 down, node-3 removed", for the log.
std::string Changes(const v1::ClusterMap& from, const v1::ClusterMap& to) {
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  for (const auto& n : to.nodes()) {
    const v1::NodeInfo* old = FindNode(from, n.id());
    if (old == nullptr) {
      add(n.id() + " joined (" + StateName(n.state()) + ")");
    } else if (old->state() != n.state()) {
      add(n.id() + " " + StateName(n.state()));
    } else if (old->address() != n.address()) {
      add(n.id() + " moved to " + n.address());
    }
  }
  for (const auto& n : from.nodes()) {
    if (FindNode(to, n.id()) == nullptr) add(n.id() + " removed");
  }
  return out.empty() ? "no node changes" : out;
}

// Who a node is, as it registers under nodes/<id> (RegistrationNow adds how
// full its disk is).
v1::NodeInfo Registration(const v1::NodeInfo& self) {
  v1::NodeInfo reg;
  reg.set_id(self.id());
  reg.set_address(self.address());
  reg.set_peer_address(self.peer_address());
  reg.set_metrics_address(self.metrics_address());
  reg.set_zone(self.zone());
  reg.set_rack(self.rack());
  return reg;
}

// A registration's names and addresses, checked as a node's config checks its
// own: whoever can write to etcd can write one, and every node places shards
// by these names and prints them.
Status CheckRegistration(const std::string& id, const v1::NodeInfo& info) {
  using L = InputLimits;
  STRATA_RETURN_IF_ERROR(CheckClusterName("the node id", id, L::kMaxNodeIdBytes));
  STRATA_RETURN_IF_ERROR(CheckClusterName("the zone", info.zone(), L::kMaxDomainNameBytes));
  STRATA_RETURN_IF_ERROR(CheckClusterName("the rack", info.rack(), L::kMaxDomainNameBytes));
  for (const std::string* address : {&info.address(), &info.peer_address(), &info.metrics_address()}) {
    if (address->empty() && address != &info.address()) continue;  // only the address is required
    STRATA_RETURN_IF_ERROR(CheckLength("an address", *address, L::kMaxAddressBytes));
    std::string host;
    int port = 0;
    STRATA_RETURN_IF_ERROR(ParseHostPort(*address, &host, &port));
  }
  return Status::OK();
}

// Disk figures worth writing again: across the watermark, another total, or
// free space moved by 1% of the total.
bool DiskMoved(const v1::NodeInfo& was, const v1::NodeInfo& now) {
  const uint64_t step = std::max<uint64_t>(now.disk_total_bytes() / 100, 1);
  const uint64_t a = was.disk_free_bytes();
  const uint64_t b = now.disk_free_bytes();
  return was.disk_full() != now.disk_full() || was.disk_total_bytes() != now.disk_total_bytes() ||
         (a > b ? a - b : b - a) >= step;
}

}  // namespace

std::unique_ptr<Membership> NewEtcdMembership(const NodeConfig& config, const v1::NodeInfo& self,
                                              boost::asio::any_io_executor executor, const DiskSpace* disk) {
  EtcdMembershipOptions options;
  options.disk = disk;
  return std::make_unique<EtcdMembership>(config, self, std::move(executor), options);
}

EtcdMembership::EtcdMembership(const NodeConfig& config, const v1::NodeInfo& self,
                               boost::asio::any_io_executor executor, EtcdMembershipOptions options)
    : config_(config.cluster),
      self_(Registration(self)),
      options_(options),
      prefix_("/strata/" + config.cluster.name + "/"),
      nodes_prefix_(prefix_ + "nodes/"),
      node_key_(nodes_prefix_ + self.id()),
      map_key_(prefix_ + "map"),
      client_(EtcdClient::Options{config.cluster.etcd_endpoints, options.call_timeout, PeerChannelCredentials()}),
      task_(std::move(executor), [this] { return Step(); }) {
  map_.set_membership("etcd");
  map_.set_cluster(config_.name);
  v1::NodeInfo* me = map_.add_nodes();
  *me = self_;
  me->set_state(v1::NODE_UP);
}

EtcdMembership::~EtcdMembership() { Stop(); }

v1::ClusterMap EtcdMembership::Current() const {
  MutexLock lock(&mu_);
  return WithDisks(map_);
}

v1::ClusterMap EtcdMembership::WithDisks(const v1::ClusterMap& map) const {
  v1::ClusterMap out = map;
  for (auto& n : *out.mutable_nodes()) {
    if (n.id() == self_.id() && options_.disk != nullptr) {
      SetDisk(*options_.disk, &n);
    } else if (auto it = disks_.find(n.id()); it != disks_.end()) {
      CopyDisk(it->second, &n);
    }
  }
  return out;
}

v1::NodeInfo EtcdMembership::RegistrationNow() const {
  v1::NodeInfo reg = self_;
  if (options_.disk != nullptr) SetDisk(*options_.disk, &reg);
  return reg;
}

void EtcdMembership::Subscribe(std::function<void(const v1::ClusterMap&)> fn) {
  MutexLock lock(&mu_);
  subs_.push_back(std::move(fn));
}

Status EtcdMembership::Start() {
  {
    MutexLock lock(&mu_);
    if (started_ || stopped_) return Status::FailedPrecondition("etcd membership: Start() called twice");
    started_ = true;
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  // A registration of this id at another address that outlives the time its
  // lease had left when first seen is kept alive by a second process with
  // this id: taking it over would drop the live node from the map.
  std::optional<std::chrono::steady_clock::time_point> id_deadline;
  Result<int64_t> revision = Status::Unavailable("not tried");
  while (true) {
    int64_t held_lease = 0;
    const Status free = CheckIdFree(&held_lease);
    if (free.code() == Code::kFailedPrecondition) {
      if (!id_deadline) {
        const int64_t left = client_.LeaseTimeToLive(held_lease).value_or(config_.lease_ttl_s);
        id_deadline =
            std::chrono::steady_clock::now() + std::chrono::seconds(std::max<int64_t>(left, config_.lease_ttl_s) + 1);
      }
      if (std::chrono::steady_clock::now() >= *id_deadline) return free.WithContext("etcd membership");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    revision = free.ok() ? Register(0) : Result<int64_t>(free);
    if (revision.ok()) break;
    const Code code = revision.status().code();
    const bool transient = code == Code::kUnavailable || code == Code::kDeadlineExceeded;
    if (!transient) return revision.status().WithContext("etcd membership: registering " + self_.id());
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable("etcd membership: etcd unreachable at " + client_.EndpointList() + " for " +
                                 std::to_string(options_.start_timeout.count()) +
                                 " ms: " + revision.status().message());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  spdlog::info("membership: registered {} in etcd at {} (lease {:x}, ttl {} s)", self_.id(), client_.EndpointList(),
               lease_.id, lease_.ttl_s);
  auto on_change = [this](const std::vector<EtcdEvent>&, int64_t) { task_.Kick(); };
  nodes_watch_ = client_.Watch(nodes_prefix_, /*prefix=*/true, *revision + 1, on_change);
  map_watch_ = client_.Watch(map_key_, /*prefix=*/false, *revision + 1, on_change);
  task_.Start();
  // Return with the map read (and brought up to date) once.
  MutexLock lock(&mu_);
  cv_.Wait(&mu_, [this]() REQUIRES(mu_) { return first_pass_ || stopping_; });
  return Status::OK();
}

Status EtcdMembership::CheckIdFree(int64_t* held_lease) {
  auto held = client_.Get(node_key_);
  if (!held.ok()) return held.status();
  if (held->kvs.empty()) return Status::OK();
  *held_lease = held->kvs[0].lease;
  v1::NodeInfo other;
  if (!other.ParseFromString(held->kvs[0].value) || other.address() == self_.address()) return Status::OK();
  return Status::FailedPrecondition("node id '" + self_.id() + "' is registered by a live node at " +
                                    other.address().substr(0, 300) + " (this one is at " + self_.address() +
                                    "): another stratad runs with this id. Give each node its own " +
                                    "--node-id, or stop that one");
}

Result<int64_t> EtcdMembership::Register(int64_t previous_lease) {
  auto lease = client_.LeaseGrant(std::max<int64_t>(config_.lease_ttl_s, 1));
  if (!lease.ok()) return lease.status();
  const v1::NodeInfo reg = RegistrationNow();
  auto revision = client_.Put(node_key_, reg.SerializeAsString(), lease->id);
  if (!revision.ok()) {
    client_.LeaseRevoke(lease->id).IgnoreError();  // best effort: it expires anyway
    return revision.status();
  }
  keep_alive_ = client_.KeepAlive(*lease, [this](const Status& why) {
    spdlog::warn("membership: lost the etcd lease of {}: {}", self_.id(), why.ToString());
    {
      MutexLock lock(&mu_);
      lease_lost_ = true;
    }
    task_.Kick();
  });
  // The key has moved to the new lease; the old one (if etcd still has it)
  // holds nothing now.
  if (previous_lease != 0) client_.LeaseRevoke(previous_lease).IgnoreError();
  lease_ = *lease;
  registered_ = true;
  registered_as_ = reg;
  return *revision;
}

std::chrono::milliseconds EtcdMembership::Step() {
  bool lost = false;
  {
    MutexLock lock(&mu_);
    lost = lease_lost_;
    lease_lost_ = false;
  }
  if (lost || !registered_) {
    if (registered_) {
      keep_alive_.reset();  // its thread has ended, or is about to
      registered_ = false;
    }
    const int64_t previous = lease_.id;
    auto revision = Register(previous);
    if (revision.ok()) {
      spdlog::info("membership: {} registered again in etcd (lease {:x})", self_.id(), lease_.id);
    } else {
      spdlog::debug("membership: registering {} again: {}", self_.id(), revision.status().ToString());
    }
  }
  if (registered_ && options_.disk != nullptr) {
    // The disk figures moved: the same registration with the new ones, under the same lease.
    const v1::NodeInfo reg = RegistrationNow();
    if (DiskMoved(registered_as_, reg)) {
      auto put = client_.Put(node_key_, reg.SerializeAsString(), lease_.id);
      if (put.ok()) {
        registered_as_ = reg;
      } else {
        spdlog::debug("membership: writing the disk figures of {}: {}", self_.id(), put.status().ToString());
      }
    }
  }
  bool again = false;
  if (!Reconcile() && registered_) {
    spdlog::warn("membership: the registration of {} vanished from etcd; registering again", self_.id());
    keep_alive_.reset();
    registered_ = false;
    again = true;  // at once, not after a whole interval
  }
  {
    MutexLock lock(&mu_);
    first_pass_ = true;
  }
  cv_.SignalAll();
  return again ? std::chrono::milliseconds(0) : options_.reconcile_interval;
}

bool EtcdMembership::Reconcile() {
  const int64_t grace_ms = int64_t{config_.grace_period_s} * 1000;
  for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
    auto read = client_.GetPrefix(prefix_);
    if (!read.ok()) {
      if (etcd_ok_) spdlog::warn("membership: cannot read the cluster from etcd: {}", read.status().ToString());
      etcd_ok_ = false;
      return true;  // nothing known either way
    }
    if (!etcd_ok_) spdlog::info("membership: etcd at {} answers again", client_.EndpointList());
    etcd_ok_ = true;

    std::map<std::string, v1::NodeInfo> registered;
    std::map<std::string, v1::NodeInfo> disks;  // the registrations' disk figures, kept out of the map
    v1::ClusterMap current;
    int64_t map_revision = 0;
    for (const auto& kv : read->kvs) {
      if (kv.key == map_key_) {
        if (!current.ParseFromString(kv.value)) {
          spdlog::error("membership: {} does not hold a ClusterMap; rewriting it", map_key_);
          current.Clear();
        }
        map_revision = kv.mod_revision;
      } else if (kv.key.rfind(nodes_prefix_, 0) == 0) {
        const std::string id = kv.key.substr(nodes_prefix_.size());
        v1::NodeInfo info;
        if (id.empty() || !info.ParseFromString(kv.value)) {
          spdlog::warn("membership: ignoring malformed registration of node {}", QuotePrefix(id));
          continue;
        }
        // Names every node places by and prints: checked as this node's own config is.
        if (Status bad = CheckRegistration(id, info); !bad.ok()) {
          spdlog::warn("membership: ignoring the registration of node {}: {}", QuotePrefix(id), bad.message());
          continue;
        }
        info.set_id(id);
        info.set_state(v1::NODE_UP);
        info.set_down_since_unix_ms(0);
        if (info.disk_total_bytes() != 0) CopyDisk(info, &disks[id]);  // 0: none reported
        ClearDisk(&info);
        registered[id] = std::move(info);
      }
    }
    const bool self_present = registered.count(self_.id()) > 0;
    current.set_epoch(static_cast<uint64_t>(map_revision));
    PublishDisks(std::move(disks));
    if (map_revision != 0) Publish(current);

    // The map as it should be: registered nodes up; the others down since the
    // first time someone saw them gone, and out once that is grace_ms ago.
    const int64_t now = UnixNowMs();
    std::map<std::string, v1::NodeInfo> nodes = registered;
    for (const auto& n : current.nodes()) {
      if (nodes.count(n.id()) > 0) continue;
      v1::NodeInfo down = n;
      if (down.state() != v1::NODE_DOWN || down.down_since_unix_ms() == 0) {
        down.set_state(v1::NODE_DOWN);
        down.set_down_since_unix_ms(now);
      }
      if (now - down.down_since_unix_ms() >= grace_ms) continue;
      nodes.emplace(n.id(), std::move(down));
    }
    v1::ClusterMap desired;
    desired.set_membership("etcd");
    desired.set_cluster(config_.name);
    for (auto& [id, n] : nodes) *desired.add_nodes() = std::move(n);  // std::map: sorted by id
    if (map_revision != 0 && SameContent(desired, current)) return self_present;

    auto cas = client_.CompareAndSwap(map_key_, map_revision, desired.SerializeAsString());
    if (!cas.ok()) {
      spdlog::warn("membership: writing the cluster map: {}", cas.status().ToString());
      return self_present;
    }
    if (cas->swapped) {
      desired.set_epoch(static_cast<uint64_t>(cas->revision));
      spdlog::info("membership: {} wrote cluster map epoch {}: {}", self_.id(), cas->revision,
                   Changes(current, desired));
      Publish(desired);
      return self_present;
    }
    // Another node wrote first: read again and see whether anything is left to do.
  }
  return true;
}

void EtcdMembership::Publish(const v1::ClusterMap& map) {
  std::vector<std::function<void(const v1::ClusterMap&)>> subs;
  v1::ClusterMap published;
  {
    MutexLock lock(&mu_);
    if (map.epoch() <= map_.epoch()) return;  // already seen (or older)
    // The first map read replaces the placeholder of Start(): always news.
    const bool changed = map_.epoch() == 0 || !SameContent(map, map_);
    map_ = map;
    if (!changed) return;
    subs = subs_;
    published = WithDisks(map_);
  }
  for (const auto& fn : subs) fn(published);
}

void EtcdMembership::PublishDisks(std::map<std::string, v1::NodeInfo> disks) {
  std::vector<std::function<void(const v1::ClusterMap&)>> subs;
  v1::ClusterMap published;
  {
    MutexLock lock(&mu_);
    const bool changed =
        disks.size() != disks_.size() ||
        !std::equal(disks.begin(), disks.end(), disks_.begin(), [](const auto& a, const auto& b) {
          return a.first == b.first && google::protobuf::util::MessageDifferencer::Equals(a.second, b.second);
        });
    disks_ = std::move(disks);
    if (!changed || map_.epoch() == 0) return;  // before the first map read, Publish tells
    subs = subs_;
    published = WithDisks(map_);
  }
  for (const auto& fn : subs) fn(published);
}

void EtcdMembership::Stop() { Shutdown(/*revoke=*/true); }

void EtcdMembership::CrashForTesting() { Shutdown(/*revoke=*/false); }

void EtcdMembership::Shutdown(bool revoke) {
  {
    MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  cv_.SignalAll();
  task_.Stop();
  nodes_watch_.reset();
  map_watch_.reset();
  keep_alive_.reset();
  if (revoke && registered_) {
    // Deletes nodes/<self> now, so the others mark this node down at once.
    const Status s = client_.LeaseRevoke(lease_.id);
    if (!s.ok() && !s.IsNotFound()) spdlog::warn("membership: revoking the etcd lease: {}", s.ToString());
    spdlog::info("membership: {} left the cluster", self_.id());
  }
  registered_ = false;
}

}  // namespace strata
