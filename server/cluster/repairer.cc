#include "server/cluster/repairer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/grpc_status.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "server/cluster/file_transfer.h"
#include "server/node.h"

namespace strata {

namespace {

constexpr std::chrono::seconds kRpcTimeout{5};
constexpr std::chrono::minutes kCopyTimeout{10};

std::unique_ptr<grpc::ClientContext> Context(std::chrono::milliseconds timeout) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + timeout);
  return c;
}

std::vector<const v1::NodeInfo*> UpPeers(const v1::ClusterMap& map, const std::string& self) {
  std::vector<const v1::NodeInfo*> out;
  for (const auto& n : map.nodes()) {
    if (n.id() != self && n.state() == v1::NODE_UP) out.push_back(&n);
  }
  return out;
}

}  // namespace

Repairer::Repairer(Node* node) : node_(node) {}

Repairer::~Repairer() { Stop(); }

void Repairer::Start() { thread_ = std::thread([this] { Run(); }); }

void Repairer::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Repairer::Kick() {
  {
    MutexLock lock(&mu_);
    kicked_ = true;
  }
  wake_.SignalAll();
}

bool Repairer::Stopping() const {
  MutexLock lock(&mu_);
  return stopping_;
}

v1::RepairProgress Repairer::Progress() const {
  v1::RepairProgress p;
  p.set_files_missing(files_missing_.load());
  p.set_files_copied(files_copied_.load());
  p.set_bytes_copied(bytes_copied_.load());
  p.set_files_released(files_released_.load());
  return p;
}

void Repairer::Run() {
  const auto period = std::chrono::milliseconds(node_->config().cluster.repair_interval_ms);
  MutexLock lock(&mu_);
  while (!stopping_) {
    kicked_ = false;
    lock.Unlock();
    Round();
    lock.Lock();
    wake_.WaitFor(&mu_, period, [this]() REQUIRES(mu_) { return stopping_ || kicked_; });
  }
}

void Repairer::Round() {
  const v1::ClusterMap map = node_->cluster_map();
  if (map.epoch() != last_epoch_) {
    last_epoch_ = map.epoch();
    map_changed_at_ = std::chrono::steady_clock::now();
  }
  SyncCatalog(map);
  if (Stopping()) return;
  PullMissing(map);
  if (Stopping()) return;
  ReleaseExtras(map);
}

void Repairer::SyncCatalog(const v1::ClusterMap& map) {
  for (const v1::NodeInfo* peer : UpPeers(map, node_->config().node_id)) {
    auto stub = node_->peers().Peer(peer->address());
    auto context = Context(kRpcTimeout);
    v1::ListVersionsRequest request;
    v1::ListVersionsReply reply;
    if (!stub->ListVersions(context.get(), request, &reply).ok()) continue;
    for (const auto& meta : reply.versions()) {
      v1::VersionRecord incoming;
      if (!incoming.ParseFromString(meta.version_record())) continue;
      const auto& info = incoming.info();
      auto local = node_->catalog().GetVersion(info.name(), info.version());
      if (local.ok() && (local->info().state() == v1::VERSION_SEALED || local->info().state() == info.state())) {
        continue;
      }
      // Fetch it whole, with its shard records.
      auto full_context = Context(kRpcTimeout);
      v1::ListVersionsRequest one;
      one.set_include_shards(true);
      one.set_dataset(info.name());
      one.set_version(info.version());
      v1::ListVersionsReply full;
      if (!stub->ListVersions(full_context.get(), one, &full).ok() || full.versions_size() != 1) continue;
      Status s = node_->ImportVersion(full.versions(0));
      if (s.ok()) {
        spdlog::info("anti-entropy: learned {}@{} ({}) from {}", info.name(), info.version(),
                     v1::VersionState_Name(info.state()), peer->id());
      } else {
        spdlog::warn("anti-entropy: importing {}@{} from {}: {}", info.name(), info.version(), peer->id(),
                     s.ToString());
      }
    }
  }
}

void Repairer::PullMissing(const v1::ClusterMap& map) {
  const std::string& self = node_->config().node_id;
  const std::vector<std::string> members = MapMembers(map);
  std::vector<v1::FileRef> missing;
  for (const v1::FileRef& file : node_->DesiredFiles(map)) {
    if (!node_->local_files().Has(file)) missing.push_back(file);
  }
  files_missing_ = missing.size();
  for (const v1::FileRef& file : missing) {
    if (Stopping()) return;
    const std::string key = file.kind() == v1::FileRef::SHARD ? ShardFileKey(file.dataset(), file.version(), file.seq())
                                                               : StrataIndexFileKey(file.dataset(), file.version());
    bool copied = false;
    for (const std::string& source : RankMembers(key, members)) {
      const v1::NodeInfo* info = FindNode(map, source);
      if (source == self || info == nullptr || info->state() != v1::NODE_UP) continue;
      auto pulled = PullFile(node_->peers().Peer(info->address()).get(), node_->data_dir(), file,
                             node_->repair_limiter(), kCopyTimeout);
      if (pulled.ok()) {
        node_->local_files().Add(file);
        if (pulled.value() == 0) {  // it was here all along: the inventory had missed it
          copied = true;
          break;
        }
        ++files_copied_;
        bytes_copied_ += pulled.value();
        node_->metrics().repair_files_copied.Increment();
        node_->metrics().repair_bytes_copied.Increment(static_cast<double>(pulled.value()));
        spdlog::info("repair: copied {} from {} ({} bytes)", FileName(file), source, pulled.value());
        copied = true;
        break;
      }
      if (!pulled.status().IsNotFound()) {
        spdlog::warn("repair: copying {} from {}: {}", FileName(file), source, pulled.status().ToString());
      }
    }
    if (copied && files_missing_ > 0) --files_missing_;
  }
}

void Repairer::ReleaseExtras(const v1::ClusterMap& map) {
  const bool all_up = std::all_of(map.nodes().begin(), map.nodes().end(),
                                  [](const auto& n) { return n.state() == v1::NODE_UP; });
  const auto settle = std::chrono::milliseconds(4 * node_->config().cluster.repair_interval_ms);
  if (!all_up || std::chrono::steady_clock::now() - map_changed_at_ < settle) return;
  // What each holder holds, per version, asked at most once per round.
  std::map<std::pair<std::string, std::string>, std::set<LocalFiles::Key>> held;  // (node, dataset@version)
  auto holds = [&](const v1::NodeInfo& node, const v1::FileRef& file) {
    const auto key = std::make_pair(node.id(), file.dataset() + "@" + std::to_string(file.version()));
    auto it = held.find(key);
    if (it == held.end()) {
      std::set<LocalFiles::Key> files;
      auto context = Context(kRpcTimeout);
      v1::ListLocalFilesRequest request;
      request.set_dataset(file.dataset());
      request.set_version(file.version());
      v1::ListLocalFilesReply reply;
      if (node_->peers().Peer(node.address())->ListLocalFiles(context.get(), request, &reply).ok()) {
        for (const auto& f : reply.files()) files.insert(LocalFiles::KeyOf(f.file()));
      }
      it = held.emplace(key, std::move(files)).first;
    }
    return it->second.count(LocalFiles::KeyOf(file)) > 0;
  };
  for (const v1::FileRef& file : node_->ExtraFiles(map)) {
    if (Stopping()) return;
    const auto holders = Holders(ShardFileKey(file.dataset(), file.version(), file.seq()), MapMembers(map),
                                 node_->ReplicationOf(file.dataset(), file.version(), map));
    const bool safe = std::all_of(holders.begin(), holders.end(), [&](const std::string& id) {
      const v1::NodeInfo* n = FindNode(map, id);
      return n != nullptr && holds(*n, file);
    });
    if (!safe) continue;
    if (node_->ReleaseFile(file).ok()) {
      ++files_released_;
      node_->metrics().files_released.Increment();
      spdlog::info("rebalance: released {} (its {} holders have it)", FileName(file), holders.size());
    }
  }
}

}  // namespace strata
