#include "server/cluster/ingest_coordinator.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <set>

#include "common/dataset_ref.h"
#include "common/grpc_status.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "server/base/grpc_handoff.h"
#include "server/cluster/ingest_replication.h"
#include "server/cluster/membership.h"
#include "server/cluster/multi_ingest.h"
#include "server/cluster/peer_clients.h"
#include "server/cluster/request_validation.h"

namespace strata {

namespace {

// How long a writer's node waits for the home's answer to a join, a commit
// (the last one seals: it records every shard and builds the index) or an abort.
constexpr std::chrono::seconds kJoinTimeout{30};
constexpr std::chrono::minutes kCommitTimeout{10};
constexpr std::chrono::seconds kAbortTimeout{30};
// How long a home waits for the other nodes to say whether an ingest it does
// not know is open at one of them: well within the client's wait for its
// ingest to be accepted (ClientOptions::connect_timeout_ms, 5 s by default).
// A node that answers later is taken not to hold it.
constexpr std::chrono::seconds kProbeTimeout{2};

// One call to the home in flight, alive until its callback has run.
template <typename Request, typename Reply>
struct HomeCall {
  grpc::ClientContext context;
  Request request;
  Reply reply;
};

}  // namespace

IngestCoordinator::IngestCoordinator(Deps deps, IngestLimits limits) : d_(deps), limits_(limits) {}

Status IngestCoordinator::CheckRoom(int samples) const {
  if (d_.disk == nullptr) return Status::OK();
  return d_.disk->CheckWritable(std::to_string(samples) + " more samples of an open ingest");
}

Result<const v1::NodeInfo*> DatasetHome(const std::string& name, const v1::ClusterMap& map) {
  for (const std::string& id : RankMembers(DatasetHomeKey(name), MapMembers(map))) {
    const v1::NodeInfo* n = FindNode(map, id);
    if (n != nullptr && n->state() == v1::NODE_UP) return n;
  }
  return Status::Unavailable("no node is up to coordinate dataset '" + name + "'");
}

Result<v1::IngestOptions> ResolveIngestOptions(const v1::IngestOptions& options, const v1::ClusterMap& map,
                                               const std::string& self) {
  const std::vector<std::string> members = MapMembers(map);
  std::set<std::string> full = FullNodes(map);
  full.erase(self);
  uint32_t up = 0, usable = 0;
  for (const auto& n : map.nodes()) {
    up += n.state() == v1::NODE_UP;
    usable += n.state() == v1::NODE_UP && !full.count(n.id());
  }
  v1::IngestOptions o = options;
  const bool ec = o.ec_data() != 0 || o.ec_parity() != 0;
  if (ec) {
    // Erasure coded (ec:K+M): each stripe's K+M chunks on distinct nodes.
    // sync waits for all K+M chunks of every stripe at their holders,
    // quorum for the K data shards (parity follows), async for none.
    if (o.replication() != 0) {
      return Status::InvalidArgument("a version is either replicated or erasure coded (--redundancy), not both");
    }
    if (o.ec_data() < 1 || o.ec_parity() < 1 || o.ec_data() + o.ec_parity() > 32) {
      return Status::InvalidArgument("erasure code ec:" + std::to_string(o.ec_data()) + "+" +
                                     std::to_string(o.ec_parity()) + " needs K >= 1, M >= 1 and K + M <= 32");
    }
    if (o.ec_data() + o.ec_parity() > members.size()) {
      return Status::InvalidArgument(
          "erasure code ec:" + std::to_string(o.ec_data()) + "+" + std::to_string(o.ec_parity()) + " needs at least " +
          std::to_string(o.ec_data() + o.ec_parity()) + " nodes; the cluster has " + std::to_string(members.size()));
    }
    if (o.write_policy() == v1::WRITE_QUORUM && o.write_quorum() != 0 && o.write_quorum() != o.ec_data()) {
      return Status::InvalidArgument(
          "with erasure coding, quorum waits for the K data shards of each stripe: "
          "--write-quorum must be " +
          std::to_string(o.ec_data()) + " or left out");
    }
  }
  if (!ec && o.replication() == 0) o.set_replication(DefaultReplication(members.size()));
  if (!ec && o.replication() > members.size()) {
    return Status::InvalidArgument("replication " + std::to_string(o.replication()) +
                                   " needs at least that many nodes; "
                                   "the cluster has " +
                                   std::to_string(members.size()));
  }
  if (!ec && o.write_policy() == v1::WRITE_QUORUM && (o.write_quorum() < 1 || o.write_quorum() > o.replication())) {
    return Status::InvalidArgument("write quorum must be between 1 and the replication factor (" +
                                   std::to_string(o.replication()) + ")");
  }
  // Erasure coded: sync needs every chunk of a stripe on a node of its own
  // (chunks handed to one node would not survive its loss), quorum the K
  // data shards.
  const uint32_t copies = ec ? o.ec_data() + o.ec_parity() : o.replication();
  const uint32_t need = o.write_policy() == v1::WRITE_SYNC     ? copies
                        : o.write_policy() == v1::WRITE_QUORUM ? (ec ? o.ec_data() : o.write_quorum())
                                                               : 1;
  if (need > usable) {
    // Too few up: Unavailable (the client retries while nodes come back).
    // Up but full: ResourceExhausted, at once (room comes back by hand).
    const std::string why = "the write policy needs " + std::to_string(need) + " durable " +
                            (ec ? "chunks of each stripe on distinct nodes" : "copies") + " but only " +
                            std::to_string(usable) + " of the cluster's " + std::to_string(map.nodes_size()) +
                            " nodes can take one: " + PassedOverForCopies(map, full);
    return need > up ? Status::Unavailable(why) : Status::ResourceExhausted(why);
  }
  return o;
}

std::unique_ptr<IngestReplication> IngestCoordinator::Observer(const v1::IngestOptions& o) const {
  std::set<std::string> full = d_.peer_disks != nullptr ? d_.peer_disks->Full() : std::set<std::string>{};
  full.erase(d_.view->self_id());  // a node writes its own copy; its low watermark is checked before
  auto observer = std::make_unique<IngestReplication>(d_.files, d_.replicator, d_.versions, d_.view, o.replication(),
                                                      o.write_policy(), o.write_quorum(), std::move(full));
  if (o.ec_data() != 0) observer->SetErasureCode(d_.dir, o.ec_data(), o.ec_parity());
  observer->set_deleter(d_.deleter);
  return observer;
}

Result<std::unique_ptr<IngestSession>> IngestCoordinator::Start(const v1::IngestOptions& options) {
  auto ref = ParseDatasetRef(options.dataset());
  if (!ref.ok()) return ref.status();
  const std::string& self = d_.view->self_id();
  const v1::ClusterMap map = d_.view->Current();
  // One node numbers a dataset's versions: its home, the first member up.
  auto home = DatasetHome(ref->name, map);
  if (home.ok() && (*home)->id() != self) {
    return Status::FailedPrecondition("ingests of dataset '" + ref->name + "' are coordinated by " + (*home)->id() +
                                      " at " + (*home)->address() + "; send the ingest there");
  }
  auto resolved = ResolveIngestOptions(options, map, self);
  if (!resolved.ok()) return resolved.status();
  v1::IngestOptions o = std::move(resolved).value();
  if (!ref->version && d_.numbers != nullptr) {
    // A number no other node gives this dataset (version_numbers.h), above
    // every version the nodes that are up know of: the session then creates
    // exactly that version.
    if (d_.versions != nullptr) d_.versions->CatchUp(ref->name);
    auto number = d_.numbers->Next(ref->name, self);
    if (!number.ok()) return number.status();
    o.set_dataset(ref->name + "@" + std::to_string(number.value()));
  } else if (ref->version && d_.deleter != nullptr) {
    // An explicit number below the newest: retention would not keep it.
    STRATA_RETURN_IF_ERROR(d_.deleter->CheckRetention(ref->name, *ref->version, o.keep_versions()));
  }
  if (d_.disk != nullptr) STRATA_RETURN_IF_ERROR(d_.disk->CheckWritable("the ingest of " + ref->name));
  return IngestSession::Open(o, d_.catalog, d_.dir, d_.metrics, limits_, Observer(o), self);
}

void IngestCoordinator::StartPart(const v1::IngestOptions& options,
                                  std::function<void(Result<std::unique_ptr<IngestSession>>)> done) {
  if (d_.multi == nullptr || d_.peers == nullptr || d_.pool == nullptr) {
    return done(Status::Unimplemented("this node does not take ingests with several writers"));
  }
  if (!ValidIngestId(options.ingest_id())) {
    return done(Status::InvalidArgument("an ingest id is 1 to 128 letters, digits, '.', '_' or '-'"));
  }
  auto ref = ParseDatasetRef(options.dataset());
  if (!ref.ok()) return done(ref.status());
  if (d_.disk != nullptr) {
    if (Status room = d_.disk->CheckWritable("the ingest of " + ref->name); !room.ok()) return done(room);
  }
  const v1::ClusterMap map = d_.view->Current();
  auto found = DatasetHome(ref->name, map);
  if (!found.ok()) return done(found.status());
  const v1::NodeInfo home = **found;
  // Running here from before the join: a home that asks once it has taken the
  // join hears so (its watch would take the part for lost otherwise).
  std::shared_ptr<const void> running = PartStarts(options.ingest_id(), options.writer());
  // Opens the part once the home has answered.
  auto open = [this, name = ref->name, ingest_id = options.ingest_id(), writer = options.writer(), home, running,
               done](Result<v1::JoinIngestReply> joined) {
    if (!joined.ok()) return done(joined.status());
    auto at = Coordinator(*joined, home);
    if (!at.ok()) return done(at.status());
    const v1::NodeInfo coordinator = std::move(at).value();
    v1::IngestOptions o = joined->options();
    o.set_dataset(name + "@" + std::to_string(joined->version()));
    IngestPartOptions part;
    part.ingest_id = ingest_id;
    part.writer = writer;
    part.writers = joined->options().writers();
    part.home = coordinator;
    part.on_abort = [this, coordinator, ingest_id](const std::string& why, std::function<void()> told) {
      AbortAtHome(coordinator, ingest_id, why, std::move(told));
    };
    part.on_withdraw = [this, coordinator, ingest_id, writer](const std::string& why, std::function<void()> told) {
      WithdrawAtHome(coordinator, ingest_id, writer, why, std::move(told));
    };
    part.running = running;
    done(IngestSession::OpenPart(o, d_.catalog, d_.dir, d_.metrics, limits_, Observer(o), std::move(part)));
  };
  if (home.id() == d_.view->self_id()) return JoinAsHome(options, d_.view->self_id(), open);
  auto call = std::make_shared<HomeCall<v1::JoinIngestRequest, v1::JoinIngestReply>>();
  *call->request.mutable_options() = options;
  call->request.set_writer_node(d_.view->self_id());
  call->context.set_deadline(std::chrono::system_clock::now() + kJoinTimeout);
  const std::string home_id = home.id();
  HandOffToGrpc(call.get());
  d_.peers->Peer(home)->async()->JoinIngest(
      &call->context, &call->request, &call->reply, [call, open, home_id](grpc::Status s) {
        TakeBackFromGrpc(call.get());
        Status status = FromGrpcStatus(s);
        if (!status.ok()) return open(status.WithContext("joining the ingest at its coordinator " + home_id));
        open(std::move(call->reply));
      });
}

std::vector<v1::NodeInfo> IngestCoordinator::OthersUp() const {
  const std::string& self = d_.view->self_id();
  const v1::ClusterMap map = d_.view->Current();
  std::vector<v1::NodeInfo> others;
  for (const auto& n : map.nodes()) {
    if (n.state() == v1::NODE_UP && n.id() != self) others.push_back(n);
  }
  return others;
}

std::shared_ptr<const void> IngestCoordinator::PartStarts(const std::string& ingest_id, uint32_t writer) {
  auto key = std::make_pair(ingest_id, writer);
  {
    MutexLock lock(&parts_->mu);
    ++parts_->running[key];
  }
  return std::shared_ptr<const void>(nullptr, [parts = parts_, key](const void*) {
    MutexLock lock(&parts->mu);
    if (--parts->running[key] <= 0) parts->running.erase(key);
  });
}

bool IngestCoordinator::PartRunsHere(const std::string& ingest_id, uint32_t writer) const {
  MutexLock lock(&parts_->mu);
  return parts_->running.count(std::make_pair(ingest_id, writer)) != 0;
}

void IngestCoordinator::JoinAsHome(v1::IngestOptions options, std::string writer_node,
                                   std::function<void(Result<v1::JoinIngestReply>)> done) {
  if (d_.multi == nullptr || d_.peers == nullptr || d_.pool == nullptr) {
    return done(Status::Unimplemented("this node does not take ingests with several writers"));
  }
  auto here = d_.multi->Join(options, MultiIngests::JoinMode::kOpenOnly, writer_node);
  if (here.status().code() != Code::kNotFound) return done(std::move(here));
  // Unknown here. The home may have moved since the first writer joined (a
  // node that ranks first came up): the ingest then stays open at the home
  // it began at, and this writer joins it there.
  const std::vector<v1::NodeInfo> others = OthersUp();
  auto create = [this, options, writer_node, done] {
    boost::asio::post(*d_.pool, [this, options, writer_node, done] {
      done(d_.multi->Join(options, MultiIngests::JoinMode::kOpenOrCreate, writer_node));
    });
  };
  if (others.empty()) return create();
  struct Probe {
    Mutex mu;
    size_t pending GUARDED_BY(mu) = 0;
    bool answered GUARDED_BY(mu) = false;
  };
  auto probe = std::make_shared<Probe>();
  {
    MutexLock lock(&probe->mu);
    probe->pending = others.size();
  }
  for (const v1::NodeInfo& node : others) {
    auto call = std::make_shared<HomeCall<v1::JoinIngestRequest, v1::JoinIngestReply>>();
    *call->request.mutable_options() = options;
    call->request.set_writer_node(writer_node);
    call->context.set_deadline(std::chrono::system_clock::now() + kProbeTimeout);
    HandOffToGrpc(call.get());
    d_.peers->Peer(node)->async()->JoinOpenIngest(
        &call->context, &call->request, &call->reply, [call, probe, node, done, create](grpc::Status s) {
          TakeBackFromGrpc(call.get());
          Status status = FromGrpcStatus(s);
          // Open there: joined (or refused: aborted, sealed, other options).
          // Not open there, or no answer (down, or a node from before
          // JoinOpenIngest): it is not there.
          const bool there =
              status.ok() || (status.code() != Code::kNotFound && status.code() != Code::kUnavailable &&
                              status.code() != Code::kDeadlineExceeded && status.code() != Code::kUnimplemented &&
                              status.code() != Code::kCancelled);
          bool last = false;
          {
            MutexLock lock(&probe->mu);
            if (probe->answered) return;
            last = --probe->pending == 0;
            if (!there && !last) return;
            probe->answered = true;
          }
          if (!there) return create();
          if (!status.ok()) return done(status.WithContext("joining ingest at " + node.id() + ", where it is open"));
          *call->reply.mutable_coordinator() = node;
          done(std::move(call->reply));
        });
  }
}

Result<v1::NodeInfo> IngestCoordinator::Coordinator(const v1::JoinIngestReply& reply, const v1::NodeInfo& home) const {
  if (!reply.has_coordinator()) return home;
  // Named by the network: only a member of this node's map, at the address the map gives.
  const v1::ClusterMap map = d_.view->Current();
  const v1::NodeInfo* n = FindNode(map, reply.coordinator().id());
  if (n == nullptr) {
    return Status::Unavailable("the ingest is open at " + reply.coordinator().id().substr(0, 128) +
                               ", which is not in this node's cluster map");
  }
  return *n;
}

void IngestCoordinator::CommitPart(const v1::NodeInfo& home, v1::IngestPart part,
                                   std::function<void(Result<v1::CommitPartReply>)> done) {
  // The home the writer joined at, not the map's home now: only it knows the ingest.
  if (home.id() == d_.view->self_id()) return CommitAsHome(std::move(part), std::move(done));
  auto call = std::make_shared<HomeCall<v1::IngestPart, v1::CommitPartReply>>();
  call->request = std::move(part);
  call->context.set_deadline(std::chrono::system_clock::now() + kCommitTimeout);
  const std::string home_id = home.id();
  HandOffToGrpc(call.get());
  d_.peers->Peer(home)->async()->CommitPart(
      &call->context, &call->request, &call->reply, [call, done, home_id](grpc::Status s) {
        TakeBackFromGrpc(call.get());
        Status status = FromGrpcStatus(s);
        if (!status.ok()) {
          return done(status.WithContext("committing the part at its coordinator " + home_id));
        }
        done(std::move(call->reply));
      });
}

void IngestCoordinator::CommitAsHome(v1::IngestPart part, std::function<void(Result<v1::CommitPartReply>)> done) {
  if (d_.multi == nullptr || d_.peers == nullptr || d_.pool == nullptr) {
    return done(Status::Unimplemented("this node does not take ingests with several writers"));
  }
  auto commit = [this, done](v1::IngestPart p) {
    boost::asio::post(*d_.pool, [this, done, p = std::move(p)] { done(d_.multi->Commit(p)); });
  };
  const std::vector<v1::NodeInfo> others = OthersUp();
  if (others.empty()) return commit(std::move(part));
  struct Search {
    Mutex mu;
    size_t pending GUARDED_BY(mu) = 0;
    std::vector<std::pair<v1::NodeInfo, v1::FindIngestReply>> open GUARDED_BY(mu);
    v1::IngestPart part;
  };
  auto search = std::make_shared<Search>();
  search->part = std::move(part);
  {
    MutexLock lock(&search->mu);
    search->pending = others.size();
  }
  const std::string ingest_id = search->part.ingest_id();
  for (const v1::NodeInfo& node : others) {
    auto call = std::make_shared<HomeCall<v1::FindIngestRequest, v1::FindIngestReply>>();
    call->request.set_ingest_id(ingest_id);
    call->context.set_deadline(std::chrono::system_clock::now() + kProbeTimeout);
    HandOffToGrpc(call.get());
    d_.peers->Peer(node)->async()->FindIngest(
        &call->context, &call->request, &call->reply, [this, call, search, node, commit, done](grpc::Status s) {
          TakeBackFromGrpc(call.get());
          // No answer (down, or a node from before FindIngest): not open there.
          std::vector<std::pair<v1::NodeInfo, v1::FindIngestReply>> open;
          {
            MutexLock lock(&search->mu);
            if (s.ok() && call->reply.open()) search->open.emplace_back(node, call->reply);
            if (--search->pending != 0) return;
            open = std::move(search->open);
          }
          if (open.empty()) return commit(std::move(search->part));
          const v1::IngestPart& p = search->part;
          std::string why = "ingest " + p.ingest_id() + " was begun by two nodes at once as the cluster changed (" +
                            d_.view->self_id() + ": " + p.dataset() + "@" + std::to_string(p.version());
          for (const auto& [n, found] : open) {
            why += "; " + n.id() + ": " + found.dataset().substr(0, 200) + "@" + std::to_string(found.version());
          }
          why +=
              "), so no version could ever take every writer's part: both were aborted; write it again with a "
              "new ingest id";
          for (const auto& [n, found] : open) AbortAtHome(n, p.ingest_id(), why);
          boost::asio::post(*d_.pool, [this, done, ingest_id = p.ingest_id(), why] {
            d_.multi->Abort(ingest_id, why).IgnoreError();
            done(Status::FailedPrecondition(why));
          });
        });
  }
}

void IngestCoordinator::AbortAtHome(const v1::NodeInfo& home, const std::string& ingest_id, const std::string& why,
                                    std::function<void()> told) const {
  v1::AbortIngestRequest request;
  request.set_ingest_id(ingest_id);
  request.set_why(why.substr(0, 1000));
  TellHome(home, std::move(request), std::move(told));
}

void IngestCoordinator::WithdrawAtHome(const v1::NodeInfo& home, const std::string& ingest_id, uint32_t writer,
                                       const std::string& why, std::function<void()> told) const {
  v1::AbortIngestRequest request;
  request.set_ingest_id(ingest_id);
  request.set_why(why.substr(0, 1000));
  request.set_withdraw(true);
  request.set_writer(writer);
  TellHome(home, std::move(request), std::move(told));
}

void IngestCoordinator::TellHome(const v1::NodeInfo& home, v1::AbortIngestRequest request,
                                 std::function<void()> told) const {
  auto call = std::make_shared<HomeCall<v1::AbortIngestRequest, v1::AbortIngestReply>>();
  call->request = std::move(request);
  call->context.set_deadline(std::chrono::system_clock::now() + kAbortTimeout);
  HandOffToGrpc(call.get());
  d_.peers->Peer(home)->async()->AbortIngest(
      &call->context, &call->request, &call->reply, [call, told = std::move(told)](grpc::Status s) {
        TakeBackFromGrpc(call.get());
        if (!s.ok()) {
          spdlog::warn("ingest {}: telling its coordinator of {}: {}", call->request.ingest_id(),
                       call->request.withdraw() ? "a withdrawal" : "an abort", s.error_message());
        }
        if (told) told();
      });
}

}  // namespace strata
