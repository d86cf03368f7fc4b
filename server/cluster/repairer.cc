#include "server/cluster/repairer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/dataset_ref.h"
#include "common/grpc_status.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "server/cluster/ec_rebuild.h"
#include "server/cluster/file_placement.h"
#include "server/cluster/file_transfer.h"
#include "server/cluster/membership.h"
#include "server/cluster/shard_health.h"
#include "server/storage/ec_stripes.h"

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

Repairer::Repairer(Deps deps, boost::asio::any_io_executor background, std::chrono::milliseconds interval,
                   uint64_t bytes_per_sec)
    : d_(deps), interval_(interval), limiter_(bytes_per_sec), task_(std::move(background), [this] {
        Round();
        return interval_;
      }) {}

Repairer::~Repairer() { Stop(); }

void Repairer::Start() { task_.Start(); }

void Repairer::Stop() {
  stopping_ = true;  // before the limiter: a copy it cancels is seen as the stop's
  limiter_.Stop();   // copies waiting on the rate end now
  task_.Stop();
}

void Repairer::Kick() { task_.Kick(); }

bool Repairer::Stopping() const { return stopping_.load() || task_.stopping(); }

v1::RepairProgress Repairer::Progress() const {
  v1::RepairProgress p;
  p.set_files_missing(files_missing_.load());
  p.set_files_copied(files_copied_.load());
  p.set_bytes_copied(bytes_copied_.load());
  p.set_files_released(files_released_.load());
  return p;
}

void Repairer::Round() {
  const v1::ClusterMap map = d_.view->Current();
  if (map.epoch() != last_epoch_) {
    last_epoch_ = map.epoch();
    map_changed_at_ = std::chrono::steady_clock::now();
  }
  SyncCatalog(map);
  if (Stopping()) return;
  PullMissing(map);
  if (Stopping()) return;
  ReleaseExtras(map);
  // Copies off placement count where a holder is down; the nodes asked
  // for them are asked again at most every 30 s (and forgotten after 5 min),
  // and for at most 2 s a round (a node that is up but slow to answer must
  // not hold the repair loop): what was not asked counts as not held.
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(held_, [now](const auto& h) { return now - h.second.asked > std::chrono::minutes(5); });
  const auto asked_since = now - std::chrono::seconds(30);
  const auto ask_until = now + std::chrono::seconds(2);
  const ShardHealth health = CountShardHealth(
      *d_.catalog, *d_.files, d_.view->self_id(), map, [&](const std::string& id, const v1::FileRef& file) {
        const v1::NodeInfo* n = FindNode(map, id);
        return n != nullptr && d_.view->IsUp(id) && !Stopping() && Holds(*n, file, asked_since, ask_until);
      });
  d_.metrics->shards_under_replicated.Set(static_cast<double>(health.under_replicated));
  d_.metrics->shards_missing.Set(static_cast<double>(health.missing));
}

void Repairer::SyncCatalog(const v1::ClusterMap& map) {
  for (const v1::NodeInfo* peer : UpPeers(map, d_.view->self_id())) {
    auto changed = d_.versions->Pull(*peer, /*dataset=*/"", kRpcTimeout);
    if (changed.ok() && changed.value() > 0) Kick();  // another round soon: a version may give this node files
  }
}

void Repairer::PullMissing(const v1::ClusterMap& map) {
  const std::string& self = d_.view->self_id();
  const PlacementSet members(PlacementMembers(map));
  std::vector<v1::FileRef> missing;
  for (const v1::FileRef& file : DesiredFiles(*d_.catalog, self, map)) {
    if (!d_.files->Has(file)) missing.push_back(file);
  }
  files_missing_ = missing.size();
  d_.metrics->repair_files_pending.Set(static_cast<double>(missing.size()));
  if (!missing.empty() && d_.disk != nullptr && d_.disk->BelowHigh()) {
    if (!skipped_for_disk_) {
      spdlog::warn("repair: not pulling {} files: {} free, below the high watermark ({})", missing.size(),
                   FormatBytes(d_.disk->Last().free_bytes), FormatBytes(d_.disk->HighBytes()));
    }
    skipped_for_disk_ = true;
    return;
  }
  skipped_for_disk_ = false;
  d_.metrics->repair_pass_queued.Set(static_cast<double>(missing.size()));
  d_.metrics->repair_pass_done.Set(0);
  for (const v1::FileRef& file : missing) {
    if (Stopping()) return;
    auto record = d_.catalog->GetVersion(file.dataset(), file.version());
    const bool ec = record.ok() && IsErasureCoded(record->info()) && file.kind() != v1::FileRef::STRATA_INDEX;
    std::vector<std::string> sources;
    if (ec || file.kind() == v1::FileRef::PARITY) {
      if (record.ok()) sources = FileRanked(record->info(), file, members);
    } else {
      sources =
          members.RankIds(file.kind() == v1::FileRef::SHARD ? ShardFileKey(file.dataset(), file.version(), file.seq())
                                                            : StrataIndexFileKey(file.dataset(), file.version()));
    }
    bool copied = false, dead = false;
    for (const std::string& source : sources) {
      const v1::NodeInfo* info = FindNode(map, source);
      // The live view too: the round's map may have missed a holder going down.
      if (source == self || info == nullptr || info->state() != v1::NODE_UP || !d_.view->IsUp(source)) continue;
      // Tracked: a holder that stops answering mid-copy is let go once the
      // view has it down, and the next one tried (the pull would otherwise
      // hold the repair loop, and every copy after it, for kCopyTimeout).
      auto context = Context(kCopyTimeout);
      const PeerClients::Tracked tracked = d_.peers->Track(info->id(), context.get());
      auto pulled = PullFile(d_.peers->Peer(*info).get(), *d_.dir, file, &limiter_, context.get());
      if (pulled.ok()) {
        d_.files->Add(file);
        if ((dead = d_.versions->DropIfDead(file))) break;  // deleted while it was copied
        if (pulled.value() == 0) {                          // it was here all along: the inventory had missed it
          copied = true;
          break;
        }
        ++files_copied_;
        bytes_copied_ += pulled.value();
        d_.metrics->repair_files_copied.Increment();
        d_.metrics->repair_bytes_copied.Increment(static_cast<double>(pulled.value()));
        d_.metrics->repair_pass_done.Increment();
        spdlog::info("repair: copied {} from {} ({} bytes)", FileName(file), source, pulled.value());
        copied = true;
        break;
      }
      if (Stopping()) return;
      if (pulled.status().code() == Code::kCancelled) {
        spdlog::warn("repair: {} went down while {} was copied from it; trying the next holder", source,
                     FileName(file));
      } else if (!pulled.status().IsNotFound()) {
        spdlog::warn("repair: copying {} from {}: {}", FileName(file), source, pulled.status().ToString());
      }
    }
    if (!copied && !dead && ec && !Stopping()) {
      // No node holds a copy of this chunk: rebuilt here from K others of
      // its stripe, throttled like a copy.
      std::vector<v1::ShardInfo> shards;
      for (const auto& s : d_.catalog->ListShards(file.dataset(), file.version()).value_or({})) {
        shards.push_back(s.info());
      }
      auto rebuilt =
          RebuildChunk(RebuildDeps{d_.view, d_.peers, d_.dir, d_.files}, record->info(), shards, file, &limiter_);
      // Deleted while it was rebuilt (the tombstone's removal ran before the file was there): dropped now.
      if (rebuilt.ok() && d_.versions->DropIfDead(file)) {
        continue;
      }
      if (rebuilt.ok()) {
        ++files_copied_;
        bytes_copied_ += rebuilt.value();
        d_.metrics->repair_files_copied.Increment();
        d_.metrics->repair_bytes_copied.Increment(static_cast<double>(rebuilt.value()));
        d_.metrics->degraded_rebuilds.Increment();
        d_.metrics->repair_pass_done.Increment();
        copied = true;
      } else {
        spdlog::warn("repair: rebuilding {}: {}", FileName(file), rebuilt.status().ToString());
      }
    }
    if (copied && files_missing_ > 0) {
      --files_missing_;
      d_.metrics->repair_files_pending.Set(static_cast<double>(files_missing_.load()));
    }
  }
}

bool Repairer::Holds(const v1::NodeInfo& node, const v1::FileRef& file,
                     std::chrono::steady_clock::time_point asked_since,
                     std::chrono::steady_clock::time_point ask_until) {
  const auto key = std::make_pair(node.id(), file.dataset() + "@" + std::to_string(file.version()));
  auto it = held_.find(key);
  if (it == held_.end() || it->second.asked < asked_since) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= ask_until) return false;
    Held h{now, {}};
    auto context = Context(std::min<std::chrono::milliseconds>(
        kRpcTimeout, std::chrono::duration_cast<std::chrono::milliseconds>(ask_until - now)));
    v1::ListLocalFilesRequest request;
    request.set_dataset(file.dataset());
    request.set_version(file.version());
    v1::ListLocalFilesReply reply;
    if (d_.peers->Peer(node)->ListLocalFiles(context.get(), request, &reply).ok()) {
      for (const auto& f : reply.files()) h.files.insert(LocalFiles::KeyOf(f.file()));
    }
    it = held_.insert_or_assign(key, std::move(h)).first;
  }
  return it->second.files.count(LocalFiles::KeyOf(file)) > 0;
}

void Repairer::ReleaseExtras(const v1::ClusterMap& map) {
  const bool all_up =
      std::all_of(map.nodes().begin(), map.nodes().end(), [](const auto& n) { return n.state() == v1::NODE_UP; });
  const auto settle = 4 * interval_;
  if (!all_up || std::chrono::steady_clock::now() - map_changed_at_ < settle) return;
  // What each holder holds, per version, asked at most once this round.
  const PlacementSet members(PlacementMembers(map));
  const auto round_start = std::chrono::steady_clock::now();
  auto holds = [&](const v1::NodeInfo& node, const v1::FileRef& file) {
    return Holds(node, file, round_start, std::chrono::steady_clock::time_point::max());
  };
  const std::vector<v1::FileRef> extras = ExtraFiles(*d_.catalog, *d_.files, d_.view->self_id(), map);
  d_.metrics->rebalance_pass_queued.Set(static_cast<double>(extras.size()));
  d_.metrics->rebalance_pass_done.Set(0);
  for (const v1::FileRef& file : extras) {
    if (Stopping()) return;
    auto record = d_.catalog->GetVersion(file.dataset(), file.version());
    if (!record.ok()) continue;
    const auto holders = FileHolders(record->info(), file, members);
    const bool safe = std::all_of(holders.begin(), holders.end(), [&](const std::string& id) {
      const v1::NodeInfo* n = FindNode(map, id);
      return n != nullptr && holds(*n, file);
    });
    if (!safe) continue;
    if (ReleaseFile(file).ok()) {
      ++files_released_;
      d_.metrics->files_released.Increment();
      d_.metrics->rebalance_pass_done.Increment();
      spdlog::info("rebalance: released {} (its {} holders have it)", FileName(file), holders.size());
    }
  }
}

Status Repairer::ReleaseFile(const v1::FileRef& file) {
  d_.files->Remove(file);
  auto version = d_.cache->Open(DatasetRef{file.dataset(), file.version()});
  if (version.ok() && file.kind() == v1::FileRef::SHARD) {
    if (const auto at = version.value()->IndexOf(file.seq())) version.value()->Invalidate(*at);
  }
  return d_.dir->RemoveFile(file);
}

}  // namespace strata
