#include "server/cluster/peer_records.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <chrono>

#include "common/dataset_ref.h"
#include "common/input_limits.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "server/base/grpc_handoff.h"
#include "server/cluster/ec_rebuild.h"
#include "server/cluster/membership.h"
#include "server/storage/ec_stripes.h"

namespace strata {

PeerRecords::PeerRecords(const ClusterView* view, PeerClients* peers, DatasetCache* cache, DataDir* dir,
                         LocalFiles* files, Repairer* repairer, Metrics* metrics, boost::asio::any_io_executor rebuilds)
    : view_(view),
      peers_(peers),
      cache_(cache),
      dir_(dir),
      files_(files),
      repairer_(repairer),
      metrics_(metrics),
      rebuilds_(std::move(rebuilds)) {}

Status PeerRecords::ReadLocal(const v1::FileRef& shard, uint64_t index, std::string* raw) {
  if (!files_->Has(shard)) return Status::NotFound(FileName(shard) + " is not held by " + view_->self_id());
  DatasetRef ref{shard.dataset(), shard.version()};
  auto version = cache_->Open(ref);
  if (!version.ok()) return version.status();
  const std::optional<size_t> at = version.value()->IndexOf(shard.seq());
  if (!at) return Status::NotFound("no shard " + FileName(shard));
  const auto& info = version.value()->shard(*at).info();
  if (index >= info.samples())
    return Status::OutOfRange("record " + std::to_string(index) + " past the end of " + FileName(shard));
  Status s = version.value()->ReadRaw(info.first_id() + index, raw);
  if (s.IsCorruption()) {
    metrics_->checksum_failures.Increment();
    Quarantine(shard);
    version.value()->Invalidate(*at);
  }
  return s;
}

std::vector<std::string> PeerRecords::Ranked(const v1::FileRef& shard, const v1::ClusterMap& map,
                                             std::shared_ptr<const OpenVersion>* version, bool* ec) {
  auto open = cache_->Open(DatasetRef{shard.dataset(), shard.version()});
  *ec = open.ok() && IsErasureCoded(open.value()->record().info());
  if (open.ok()) *version = open.value();
  return *ec ? FileRanked((*version)->record().info(), shard, PlacementSet(PlacementMembers(map)))
             : RankMembers(ShardFileKey(shard.dataset(), shard.version(), shard.seq()), PlacementMembers(map));
}

Status PeerRecords::DegradedRead(const OpenVersion& version, const v1::FileRef& shard,
                                 std::span<const uint64_t> indexes, std::vector<std::string>* raw) {
  // No node serves the shard, so it is rebuilt here from K chunks of its
  // stripe (one rebuild at a time; a stream waiting for the same shard then
  // finds it here).
  Status rebuilt;
  {
    MutexLock lock(&rebuild_mu_);
    if (!files_->Has(shard)) {
      std::vector<v1::ShardInfo> shards;
      for (size_t i = 0; i < version.num_shards(); ++i) shards.push_back(version.shard(i).info());
      auto read = RebuildChunk(RebuildDeps{view_, peers_, dir_, files_}, version.record().info(), shards, shard,
                               /*limiter=*/nullptr);
      rebuilt = read.status();
      if (read.ok()) metrics_->degraded_rebuilds.Increment();
    }
  }
  if (rebuilt.ok()) rebuilt = ReadAllLocal(shard, indexes, raw);
  if (!rebuilt.ok()) raw->clear();
  return rebuilt;
}

// One FetchAsync: the holders still to ask, the call to the current one.
struct PeerRecords::AsyncFetch {
  v1::FileRef shard;
  std::vector<uint64_t> indexes;
  FetchDone done;
  v1::ClusterMap map;
  std::vector<std::string> ranked;
  size_t next = 0;  // in ranked
  std::shared_ptr<const OpenVersion> version;
  bool ec = false;
  std::string errors;
  std::vector<std::string> got;                  // the records of indexes' first got.size(), verified
  v1::ReadRecordsRequest request;                // the rest
  std::unique_ptr<grpc::ClientContext> context;  // one per call
  v1::ReadRecordsReply reply;
};

void PeerRecords::FetchAsync(const v1::FileRef& shard, std::vector<uint64_t> indexes, FetchDone done) {
  // A peer reads at most kMaxRecordsPerRead records a call (it refuses more,
  // and so would every holder): more are asked in pieces, all at once, and
  // answered together, in order.
  constexpr size_t kPiece = InputLimits::kMaxRecordsPerRead;
  if (indexes.size() > kPiece) {
    struct Pieces {
      Mutex mu;
      size_t pending GUARDED_BY(mu) = 0;
      Status failed GUARDED_BY(mu);
      std::vector<std::vector<std::string>> raw GUARDED_BY(mu);
      FetchDone done;
    };
    auto pieces = std::make_shared<Pieces>();
    const size_t n = (indexes.size() + kPiece - 1) / kPiece;
    {
      MutexLock lock(&pieces->mu);
      pieces->pending = n;
      pieces->raw.resize(n);
    }
    pieces->done = std::move(done);
    for (size_t p = 0; p < n; ++p) {
      const auto begin = indexes.begin() + static_cast<std::ptrdiff_t>(p * kPiece);
      const auto end = indexes.begin() + static_cast<std::ptrdiff_t>(std::min(indexes.size(), (p + 1) * kPiece));
      FetchAsync(shard, std::vector<uint64_t>(begin, end), [pieces, p](Status s, std::vector<std::string> raw) {
        std::vector<std::string> all;
        Status failed;
        {
          MutexLock lock(&pieces->mu);
          if (!s.ok() && pieces->failed.ok()) pieces->failed = std::move(s);
          pieces->raw[p] = std::move(raw);
          if (--pieces->pending > 0) return;
          failed = pieces->failed;
          if (failed.ok()) {
            for (auto& piece : pieces->raw) {
              for (auto& record : piece) all.push_back(std::move(record));
            }
          }
        }
        pieces->done(failed, failed.ok() ? std::move(all) : std::vector<std::string>());
      });
    }
    return;
  }
  auto f = std::make_shared<AsyncFetch>();
  f->shard = shard;
  f->indexes = std::move(indexes);
  f->done = std::move(done);
  f->map = view_->Current();
  f->ranked = Ranked(shard, f->map, &f->version, &f->ec);
  std::vector<std::string> raw;
  // Erasure coded: a shard rebuilt here by an earlier degraded read serves
  // from here (a local read, as the caller's own would be).
  if (f->ec && files_->Has(shard) && ReadAllLocal(shard, f->indexes, &raw).ok()) {
    return f->done(Status::OK(), std::move(raw));
  }
  *f->request.mutable_file() = shard;
  for (uint64_t i : f->indexes) f->request.add_indexes(i);
  AskNext(std::move(f));
}

void PeerRecords::AskNext(std::shared_ptr<AsyncFetch> f) {
  // The members the view has up, in rank order; then, before giving up, those
  // it has down, briefly: the view lags a node that answers again (a missed
  // heartbeat or two on a loaded machine), and a node that is really down
  // refuses the connection at once.
  const size_t n_ranked = f->ranked.size();
  while (f->next < 2 * n_ranked) {
    const bool last_resort = f->next >= n_ranked;
    const std::string& id = f->ranked[f->next++ % n_ranked];
    const v1::NodeInfo* n = FindNode(f->map, id);
    if (id == view_->self_id() || n == nullptr || (n->state() == v1::NODE_UP) == last_resort) continue;
    f->context = std::make_unique<grpc::ClientContext>();
    f->context->set_deadline(std::chrono::system_clock::now() +
                             (last_resort ? std::chrono::seconds(2) : std::chrono::seconds(10)));
    f->reply.Clear();
    AsyncFetch* call = f.get();
    HandOffToGrpc(call);
    peers_->Peer(*n)->async()->ReadRecords(
        call->context.get(), &call->request, &call->reply, [this, f = std::move(f), id](grpc::Status s) mutable {
          TakeBackFromGrpc(f.get());
          const int asked = f->request.indexes_size();
          const int answered = f->reply.records_size();
          if (s.ok() && answered <= asked && (answered > 0 || asked == 0)) {
            for (auto& r : *f->reply.mutable_records()) f->got.push_back(std::move(r));
            if (answered == asked) return f->done(Status::OK(), std::move(f->got));
            // A prefix (the holder bounds its reply's bytes): the same
            // holder is asked for the rest.
            auto* rest = f->request.mutable_indexes();
            rest->erase(rest->begin(), rest->begin() + answered);
            --f->next;
            return AskNext(std::move(f));
          }
          f->errors +=
              " " + id + ": " +
              (s.ok() ? "a reply of " + std::to_string(answered) + " records to " + std::to_string(asked) + " asked"
                      : s.error_message()) +
              ";";
          AskNext(std::move(f));
        });
    return;
  }
  if (f->errors.empty()) {
    // Nobody was asked: say whom the map names, and why not them.
    f->errors = " no holder but this node was in the cluster map (holders:";
    for (const std::string& id : f->ranked) f->errors += " " + id;
    f->errors += ");";
  }
  if (!f->ec) {
    return f->done(Status::Unavailable("no node could provide records of " + FileName(f->shard) + ":" + f->errors), {});
  }
  // A degraded read blocks (K chunk reads and the decode): on its executor,
  // never on the gRPC thread that ran the last call's callback.
  boost::asio::post(rebuilds_, [this, f = std::move(f)] {
    std::vector<std::string> raw;
    Status rebuilt = DegradedRead(*f->version, f->shard, std::span(f->indexes).subspan(f->got.size()), &raw);
    if (rebuilt.ok()) {
      for (auto& r : raw) f->got.push_back(std::move(r));
      return f->done(Status::OK(), std::move(f->got));
    }
    f->done(Status::Unavailable("no node could provide records of " + FileName(f->shard) + ":" + f->errors +
                                " degraded read: " + rebuilt.ToString() + ";"),
            {});
  });
}

Status PeerRecords::ReadAllLocal(const v1::FileRef& shard, std::span<const uint64_t> indexes,
                                 std::vector<std::string>* raw) {
  for (uint64_t i : indexes) {
    std::string record;
    STRATA_RETURN_IF_ERROR(ReadLocal(shard, i, &record));
    raw->push_back(std::move(record));
  }
  return Status::OK();
}

void PeerRecords::Quarantine(const v1::FileRef& file) {
  if (!files_->Has(file)) return;
  metrics_->corruptions_found.Increment();
  if (view_->Current().nodes_size() <= 1) {
    // No other node could replace it: keep the file, whose intact records
    // still serve; every read of a damaged record fails its checksum.
    spdlog::error("{} is damaged and there is no other copy in the cluster; kept in place", FileName(file));
    return;
  }
  Status s = dir_->Quarantine(file);
  files_->Remove(file);
  spdlog::error("quarantined {}: {}", FileName(file), s.ok() ? "a good copy will be fetched" : s.ToString());
  repairer_->Kick();
}

}  // namespace strata
