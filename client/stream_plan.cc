#include "client/stream_plan.h"

#include <grpcpp/grpcpp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/file_placement.h"
#include "common/file_util.h"
#include "common/grpc_status.h"
#include "common/serving_errors.h"
#include "common/unique_fd.h"
#include "plan/stratum_index.h"
#include "strata/v1/admin.grpc.pb.h"
#include "strata/v1/data.grpc.pb.h"

namespace strata::client_internal {

namespace {

std::unique_ptr<grpc::ClientContext> Context(std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

// The version's stratum index, read in ranges from the node into an
// anonymous file and verified whole (with the version's stratum counts)
// before the plan reads an id of it.
Result<std::shared_ptr<const StratumMembers>> FetchStratumIndex(const std::shared_ptr<grpc::Channel>& channel,
                                                                const v1::DatasetInfo& info,
                                                                std::chrono::milliseconds timeout) {
  const std::string name = info.name() + "@" + std::to_string(info.version());
  // The largest file a version of this shape can have (format 2, with block sums).
  const uint64_t samples = info.samples();
  const uint64_t limit = kStratumIndexHeaderSize +
                         8 * (uint64_t{static_cast<uint64_t>(info.stratum_counts_size())} + 1) + 8 * samples +
                         8 * ((samples + kStratumIndexBlockIds - 1) / kStratumIndexBlockIds) + kStratumIndexTrailerSize;
  UniqueFd fd(::memfd_create("strata.idx", MFD_CLOEXEC));
  if (!fd.valid()) return Status::IOError(std::string("memfd_create for the stratum index: ") + std::strerror(errno));
  const std::string path = "/proc/self/fd/" + std::to_string(fd.get());
  auto stub = v1::DataService::NewStub(channel);
  v1::StratumIndexRequest request;
  request.set_dataset(name);
  uint64_t offset = 0, checksum = 0;
  for (;;) {
    request.set_offset(offset);
    v1::StratumIndexChunk chunk;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(stub->ReadStratumIndex(Context(timeout).get(), request, &chunk)));
    if (chunk.file_bytes() > limit) {
      return Status::Internal("the node says the stratum index of " + name + " is " +
                              std::to_string(chunk.file_bytes()) + " bytes; a version of " + std::to_string(samples) +
                              " samples has at most " + std::to_string(limit));
    }
    if (chunk.data().empty() || offset + chunk.data().size() > chunk.file_bytes()) {
      if (offset == chunk.file_bytes() && chunk.data().empty()) break;
      return Status::Internal("the node sent the stratum index of " + name + " short or past its end (" +
                              std::to_string(offset) + " of " + std::to_string(chunk.file_bytes()) + " bytes)");
    }
    checksum = chunk.file_checksum();
    STRATA_RETURN_IF_ERROR(PWriteAllFd(fd.get(), chunk.data(), offset, path));
    offset += chunk.data().size();
    if (offset == chunk.file_bytes()) break;
  }
  StratumIndexExpect expect;
  expect.file_bytes = offset;
  expect.checksum = checksum;
  for (const auto& c : info.stratum_counts()) expect.counts.push_back(c.count());
  auto file = StratumIndexFile::Open(path, &expect, IndexCheck::kWhole);  // maps it: the descriptor may go
  if (!file.ok()) return file.status().WithContext("the stratum index of " + name + " from the node");
  return std::shared_ptr<const StratumMembers>(std::move(file).value());
}

}  // namespace

std::shared_ptr<const StratumMembers> StratumIndexCache::Find(const std::string& version) {
  MutexLock lock(&mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first != version) continue;
    entries_.splice(entries_.begin(), entries_, it);  // most recently used first
    return entries_.front().second;
  }
  return nullptr;
}

void StratumIndexCache::Put(const std::string& version, std::shared_ptr<const StratumMembers> members) {
  MutexLock lock(&mu_);
  entries_.remove_if([&](const auto& e) { return e.first == version; });
  entries_.emplace_front(version, std::move(members));
  if (entries_.size() > kCapacity) entries_.pop_back();
}

Result<std::shared_ptr<const StreamPlan>> StreamPlan::Load(const std::shared_ptr<grpc::Channel>& channel,
                                                           const v1::StreamRequest& request,
                                                           std::chrono::milliseconds timeout,
                                                           StratumIndexCache* indexes) {
  auto admin = v1::AdminService::NewStub(channel);
  v1::DescribeDatasetRequest describe;
  describe.set_dataset(request.dataset());
  v1::DescribeDatasetReply reply;
  STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin->DescribeDataset(Context(timeout).get(), describe, &reply)));
  auto plan = std::make_shared<StreamPlan>();
  plan->info_ = reply.dataset();
  const v1::DatasetInfo& info = plan->info_;
  const std::string name = info.name() + "@" + std::to_string(info.version());
  if (info.state() == v1::VERSION_DELETED) return VersionDeleted(info.name(), info.version());
  if (info.state() != v1::VERSION_SEALED) {
    return NotSealed(name, "state " + v1::VersionState_Name(info.state()) + "; only sealed versions can be streamed");
  }
  plan->shards_.assign(reply.shards().begin(), reply.shards().end());
  std::sort(plan->shards_.begin(), plan->shards_.end(),
            [](const v1::ShardInfo& a, const v1::ShardInfo& b) { return a.first_id() < b.first_id(); });
  uint64_t next = 0;
  for (const auto& s : plan->shards_) {
    if (s.first_id() != next || s.samples() == 0) {
      return Status::Internal("the node's shard list of " + name + " does not tile its ids (shard " +
                              std::to_string(s.seq()) + " starts at " + std::to_string(s.first_id()) + ", not " +
                              std::to_string(next) + ")");
    }
    next += s.samples();
  }
  if (next != info.samples()) {
    return Status::Internal("the node's shards of " + name + " hold " + std::to_string(next) + " samples, not " +
                            std::to_string(info.samples()));
  }
  plan->IndexShards();
  DatasetShape shape;
  shape.name = info.name();
  shape.version = info.version();
  shape.num_samples = info.samples();
  shape.strata.assign(info.stratum_counts().begin(), info.stratum_counts().end());
  if (request.sampler().kind() != v1::SamplerSpec::SHUFFLE) {
    if (indexes != nullptr) shape.members = indexes->Find(name);
    if (!shape.members) {
      auto members = FetchStratumIndex(channel, info, timeout);
      if (!members.ok()) return members.status();
      shape.members = std::move(members).value();
      if (indexes != nullptr) indexes->Put(name, shape.members);
    }
  }
  auto epoch_plan = EpochPlan::Create(shape, request.sampler(), request.seed(), request.epoch(), request.batch_size(),
                                      request.world(), request.remainder());
  if (!epoch_plan.ok()) return epoch_plan.status();
  plan->plan_.emplace(std::move(epoch_plan).value());
  return std::shared_ptr<const StreamPlan>(std::move(plan));
}

std::shared_ptr<const StreamPlan> StreamPlan::Make(v1::DatasetInfo info, std::vector<v1::ShardInfo> shards,
                                                   EpochPlan plan) {
  auto out = std::make_shared<StreamPlan>();
  out->info_ = std::move(info);
  out->shards_ = std::move(shards);
  out->IndexShards();
  out->plan_.emplace(std::move(plan));
  return out;
}

void StreamPlan::IndexShards() {
  std::vector<uint64_t> firsts;
  firsts.reserve(shards_.size());
  for (const v1::ShardInfo& s : shards_) firsts.push_back(s.first_id());
  ids_ = IdRanges(std::move(firsts));
}

size_t StreamPlan::ShardOf(uint64_t id) const { return ids_.Find(id); }

bool MatchesPlan(const v1::Batch& part, const std::vector<uint64_t>& ids) {
  if (part.batch_size() != ids.size() || part.slots_size() != part.ids_size()) return false;
  for (int i = 0; i < part.ids_size(); ++i) {
    if (part.slots(i) >= ids.size() || ids[part.slots(i)] != part.ids(i)) return false;
  }
  return true;
}

WorkPlanner::WorkPlanner(std::shared_ptr<const StreamPlan> plan, const v1::ClusterMap& map, const std::string& zone)
    : plan_(std::move(plan)), members_(PlacementMembers(map)), servers_(plan_->shards().size()) {
  for (const auto& n : map.nodes()) {
    node_ids_.push_back(n.id());
    if (!zone.empty() && n.zone() == zone) near_.push_back(n.id());
  }
  outstanding_.assign(node_ids_.size(), 0);
}

void WorkPlanner::SetExcluded(const std::vector<std::string>& excluded) {
  excluded_ = excluded;
  for (auto& s : servers_) s.reset();
  std::fill(outstanding_.begin(), outstanding_.end(), 0);
}

void WorkPlanner::Received(const std::string& node, uint64_t samples) {
  for (size_t i = 0; i < node_ids_.size(); ++i) {
    if (node_ids_[i] == node) outstanding_[i] -= std::min(outstanding_[i], samples);
  }
}

uint64_t WorkPlanner::outstanding(const std::string& node) const {
  for (size_t i = 0; i < node_ids_.size(); ++i) {
    if (node_ids_[i] == node) return outstanding_[i];
  }
  return 0;
}

const WorkPlanner::Servers& WorkPlanner::ServersOf(size_t shard) {
  std::optional<Servers>& s = servers_[shard];
  if (!s) {
    const v1::DatasetInfo& info = plan_->info();
    const v1::FileRef file = ShardRef(info.name(), info.version(), plan_->shards()[shard].seq());
    const std::vector<std::string> holders = FileHolders(info, file, members_);
    const std::vector<std::string> ranked = FileRanked(info, file, members_);
    s.emplace(Servers{ShardServers(holders, ranked, excluded_, near_), {}});
    for (const std::string& node : s->servers.nodes()) {
      s->index.push_back(
          static_cast<uint32_t>(std::find(node_ids_.begin(), node_ids_.end(), node) - node_ids_.begin()));
    }
  }
  return *s;
}

Status WorkPlanner::Plan(uint64_t from, uint64_t to, const std::map<uint64_t, std::vector<uint64_t>>& ids,
                         const Filled& filled, std::map<std::string, std::vector<v1::WorkStep>>* out) {
  out->clear();
  // Each node's entry of *out, by its index in node_ids_: looked up once per
  // node, not once per sample.
  std::vector<std::vector<v1::WorkStep>*> work_of(node_ids_.size(), nullptr);
  for (uint64_t step = from; step < to; ++step) {
    const std::vector<uint64_t>& step_ids = ids.at(step);
    const std::vector<bool>* done = filled(step);
    // The node the step's first sample went to keeps its samples while its
    // outstanding work stays within one step of the least (see the header).
    const uint64_t slack = step_ids.size();
    uint32_t keeper = UINT32_MAX;
    for (uint32_t slot = 0; slot < step_ids.size(); ++slot) {
      if (done != nullptr && slot < done->size() && (*done)[slot]) continue;
      const uint64_t id = step_ids[slot];
      const Servers& servers = ServersOf(plan_->ShardOf(id));
      const size_t n = servers.index.size();
      if (n == 0) return Status::Unavailable("every node of the cluster is excluded");
      // The least outstanding of the candidates, from the one the id hashes to.
      const size_t first = servers.servers.Pick(id);
      size_t best = first, kept = n;
      for (size_t k = 0, c = first; k < n; ++k, c = c + 1 == n ? 0 : c + 1) {  // c = (first + k) % n
        if (outstanding_[servers.index[c]] < outstanding_[servers.index[best]]) best = c;
        if (servers.index[c] == keeper) kept = c;
      }
      if (kept != n && outstanding_[keeper] <= outstanding_[servers.index[best]] + slack) best = kept;
      const uint32_t node = servers.index[best];
      if (keeper == UINT32_MAX) keeper = node;
      ++outstanding_[node];
      std::vector<v1::WorkStep>*& work = work_of[node];
      if (work == nullptr) {  // a node's work covers the whole range, one WorkStep a step
        work = &(*out)[node_ids_[node]];
        work->resize(to - from);
        for (uint64_t s = from; s < to; ++s) (*work)[s - from].set_step(s);
      }
      v1::WorkStep& w = (*work)[step - from];
      if (w.ids_size() == 0) {  // room for the rest of the step, which often all goes here
        w.mutable_slots()->Reserve(static_cast<int>(step_ids.size() - slot));
        w.mutable_ids()->Reserve(static_cast<int>(step_ids.size() - slot));
      }
      w.add_slots(slot);
      w.add_ids(id);
    }
  }
  return Status::OK();
}

}  // namespace strata::client_internal
