#include "server/cluster/ingest_coordinator.h"

#include "common/dataset_ref.h"
#include "common/placement.h"
#include "server/cluster/ingest_replication.h"
#include "server/cluster/membership.h"

namespace strata {

IngestCoordinator::IngestCoordinator(Deps deps, IngestLimits limits) : d_(deps), limits_(limits) {}

Status IngestCoordinator::CheckRoom(int samples) const {
  if (d_.disk == nullptr) return Status::OK();
  return d_.disk->CheckWritable(std::to_string(samples) + " more samples of an open ingest");
}

Result<std::unique_ptr<IngestSession>> IngestCoordinator::Start(const v1::IngestOptions& options) {
  auto ref = ParseDatasetRef(options.dataset());
  if (!ref.ok()) return ref.status();
  const std::string& self = d_.view->self_id();
  const v1::ClusterMap map = d_.view->Current();
  const std::vector<std::string> members = MapMembers(map);
  // One node numbers a dataset's versions: its home, the first member up.
  for (const std::string& id : RankMembers(DatasetHomeKey(ref->name), members)) {
    const v1::NodeInfo* n = FindNode(map, id);
    if (n == nullptr || n->state() != v1::NODE_UP) continue;
    if (id != self) {
      return Status::FailedPrecondition("ingests of dataset '" + ref->name + "' are coordinated by " + id + " at " +
                                        n->address() + "; send the ingest there");
    }
    break;
  }
  uint32_t up = 0;
  for (const auto& n : map.nodes()) up += n.state() == v1::NODE_UP;
  v1::IngestOptions o = options;
  if (!ref->version && d_.numbers != nullptr) {
    // A number no other node gives this dataset (version_numbers.h): the
    // session then creates exactly that version.
    auto number = d_.numbers->Next(ref->name, self);
    if (!number.ok()) return number.status();
    o.set_dataset(ref->name + "@" + std::to_string(number.value()));
  }
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
  const uint32_t need = ec                                     ? 1
                        : o.write_policy() == v1::WRITE_SYNC   ? o.replication()
                        : o.write_policy() == v1::WRITE_QUORUM ? o.write_quorum()
                                                               : 1;
  if (need > up) {
    return Status::Unavailable("the write policy needs " + std::to_string(need) + " durable copies but only " +
                               std::to_string(up) + " nodes are up");
  }
  if (d_.disk != nullptr) STRATA_RETURN_IF_ERROR(d_.disk->CheckWritable("the ingest of " + ref->name));
  std::set<std::string> full = d_.peer_disks != nullptr ? d_.peer_disks->Full() : std::set<std::string>{};
  full.erase(self);  // the coordinator writes its own copy; its low watermark is checked above
  auto observer = std::make_unique<IngestReplication>(d_.files, d_.replicator, d_.versions, map, o.replication(),
                                                      o.write_policy(), o.write_quorum(), std::move(full));
  if (ec) observer->SetErasureCode(d_.dir, o.ec_data(), o.ec_parity());
  observer->set_deleter(d_.deleter);
  return IngestSession::Open(o, d_.catalog, d_.dir, d_.metrics, limits_, std::move(observer), self);
}

}  // namespace strata
