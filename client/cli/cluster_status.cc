#include "client/cli/cluster_status.h"

#include <google/protobuf/util/json_util.h>

#include <future>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

#include "client/cli/format.h"
#include "client/proto_convert.h"
#include "common/file_placement.h"

namespace strata::cli {

namespace {

std::string NodeStateName(NodeState s) { return s == NodeState::kUp ? "up" : s == NodeState::kDown ? "down" : "?"; }

nlohmann::json ProtoJson(const google::protobuf::Message& m) {
  std::string text;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(m, &text, o).ok()) return nullptr;
  return nlohmann::json::parse(text);
}

using Copies = std::map<std::tuple<std::string, uint64_t, int, uint32_t>, int>;

// The seqs of version `d`'s shards. Most versions number them 0..n-1, and
// when the nodes hold exactly those that is the answer; a version written by
// several writers numbers each writer's from its own base (0, 333333, ...),
// so otherwise the version's own list says (Describe).
std::vector<uint32_t> ShardSeqs(Client& client, const DatasetInfo& d, const Copies& copies) {
  std::vector<uint32_t> dense(d.shards);
  for (uint32_t seq = 0; seq < d.shards; ++seq) dense[seq] = seq;
  const int kind = static_cast<int>(FileRef::Kind::kShard);
  auto it = copies.lower_bound({d.name, d.version, kind, 0});
  uint32_t held = 0;
  bool only_dense = true;
  for (; it != copies.end() && std::get<0>(it->first) == d.name && std::get<1>(it->first) == d.version &&
         std::get<2>(it->first) == kind;
       ++it) {
    ++held;
    only_dense = only_dense && std::get<3>(it->first) < d.shards;
  }
  if (only_dense && held == d.shards) return dense;
  auto described = client.Describe(d.name + "@" + std::to_string(d.version));
  if (!described.ok()) return dense;
  std::vector<uint32_t> seqs;
  for (const auto& s : described->shards) seqs.push_back(s.seq);
  return seqs;
}

}  // namespace

Result<ClusterStatus> GatherClusterStatus(Client& client) {
  ClusterStatus out;
  auto map = client.GetClusterMap();
  if (!map.ok()) return map.status();
  out.map = std::move(map).value();
  // Every node is asked, whatever the map says, all at once: a node that
  // does not answer shows as unreachable at once, not after the others, and
  // before membership's failure timeout marks it down.
  std::vector<std::future<Result<NodeStatus>>> asked;
  for (const auto& n : out.map.nodes) {
    asked.push_back(
        std::async(std::launch::async, [&client, address = n.address] { return client.GetNodeStatus(address); }));
  }
  for (auto& a : asked) out.nodes.push_back(a.get());
  // Copies of each file, counted over the nodes that answer.
  std::vector<std::future<Result<std::vector<FileRef>>>> listed;
  for (size_t i = 0; i < out.map.nodes.size(); ++i) {
    if (!out.nodes[i].ok()) continue;
    listed.push_back(std::async(
        std::launch::async, [&client, address = out.map.nodes[i].address] { return client.ListNodeFiles(address); }));
  }
  Copies copies;
  for (auto& l : listed) {
    auto files = l.get();
    if (!files.ok()) continue;
    for (const auto& f : files.value()) ++copies[{f.dataset, f.version, static_cast<int>(f.kind), f.seq}];
  }
  auto datasets = client.ListDatasets();
  if (!datasets.ok()) return datasets.status();
  const auto copies_of = [&](const std::string& name, uint64_t version, FileRef::Kind kind, uint32_t seq) {
    auto it = copies.find({name, version, static_cast<int>(kind), seq});
    return it == copies.end() ? 0 : it->second;
  };
  for (const auto& d : datasets.value()) {
    ReplicaHealth h;
    h.dataset = d.name + "@" + std::to_string(d.version);
    h.shards = d.shards;
    if (d.ec_data != 0 && d.ec_parity != 0) {
      h.ec_data = d.ec_data;
      h.ec_parity = d.ec_parity;
      const uint32_t k = d.ec_data, m = d.ec_parity;
      for (uint32_t g = 0; g < StripeCount(d.shards, k); ++g) {
        uint64_t data = 0;    // the stripe's data shards
        uint32_t chunks = 0;  // its chunks with a copy (an empty chunk past the last shard has nothing to lose)
        for (uint32_t c = 0; c < k + m; ++c) {
          const v1::FileRef file = StripeFile(d.name, d.version, g, c, k, m);
          if (c < k && file.seq() >= d.shards) {
            ++chunks;
            continue;
          }
          data += c < k;
          const auto kind = c < k ? FileRef::Kind::kShard : FileRef::Kind::kParity;
          chunks += copies_of(d.name, d.version, kind, file.seq()) > 0;
        }
        (chunks == k + m ? h.healthy : chunks >= k ? h.under_replicated : h.missing) += data;
      }
    } else {
      h.replication = d.replication ? d.replication : static_cast<uint32_t>(std::min<size_t>(3, out.map.nodes.size()));
      for (uint32_t seq : ShardSeqs(client, d, copies)) {
        const int n = copies_of(d.name, d.version, FileRef::Kind::kShard, seq);
        (n == 0 ? h.missing : static_cast<uint32_t>(n) < h.replication ? h.under_replicated : h.healthy) += 1;
      }
    }
    h.index_copies = static_cast<uint64_t>(copies_of(d.name, d.version, FileRef::Kind::kStrataIndex, 0));
    out.datasets.push_back(h);
  }
  return out;
}

void PrintClusterStatus(std::ostream& out, const ClusterStatus& s) {
  out << "\ncluster " << (s.map.cluster.empty() ? "-" : s.map.cluster) << " (" << s.map.membership
      << " membership, map epoch " << s.map.epoch << ")\n";
  // MAP is membership's view; ANSWER whether the node answered just now.
  Table nodes({{"NODE"},
               {"MAP"},
               {"ANSWER"},
               {"ADDRESS"},
               {"STREAMS", Table::Align::kRight},
               {"DISK", Table::Align::kRight},
               {"FREE", Table::Align::kRight},
               {"DISK STATE"},
               {"UNDER-REPL", Table::Align::kRight},
               {"MISSING", Table::Align::kRight},
               {"REPAIR MISSING", Table::Align::kRight},
               {"COPIED", Table::Align::kRight},
               {"RELEASED", Table::Align::kRight},
               {"BACKLOG", Table::Align::kRight},
               {"SCRUBBED", Table::Align::kRight},
               {"CORRUPT", Table::Align::kRight}});
  for (size_t i = 0; i < s.map.nodes.size(); ++i) {
    const auto& n = s.map.nodes[i];
    const auto& st = s.nodes[i];
    if (!st.ok()) {
      nodes.AddRow({n.id, NodeStateName(n.state), "unreachable", n.address, "-", "-", "-", "-", "-", "-", "-", "-", "-",
                    "-", "-", "-"});
      continue;
    }
    const auto& r = st->repair;
    const std::string free =
        st->disk_total_bytes == 0 ? "-" : FormatBytes(st->disk_free_bytes) + " of " + FormatBytes(st->disk_total_bytes);
    nodes.AddRow({n.id, NodeStateName(n.state), "ok", n.address, FormatCount(st->active_streams),
                  FormatBytes(st->disk_bytes), free, st->disk_state.empty() ? "-" : st->disk_state,
                  FormatCount(st->shards_under_replicated), FormatCount(st->shards_missing),
                  FormatCount(r.files_missing), FormatCount(r.files_copied) + " (" + FormatBytes(r.bytes_copied) + ")",
                  FormatCount(r.files_released), FormatBytes(r.replication_backlog_bytes),
                  FormatBytes(r.bytes_scrubbed), FormatCount(r.corruptions_found)});
  }
  nodes.Print(out, "  ");
  if (s.datasets.empty()) return;
  out << "\nreplica health\n";
  Table health({{"DATASET"},
                {"R", Table::Align::kRight},
                {"SHARDS", Table::Align::kRight},
                {"HEALTHY", Table::Align::kRight},
                {"UNDER-REPLICATED", Table::Align::kRight},
                {"MISSING", Table::Align::kRight},
                {"INDEX COPIES", Table::Align::kRight}});
  for (const auto& h : s.datasets) {
    const std::string redundancy = h.ec_data != 0
                                       ? "ec:" + std::to_string(h.ec_data) + "+" + std::to_string(h.ec_parity)
                                       : std::to_string(h.replication);
    health.AddRow({h.dataset, redundancy, FormatCount(h.shards), FormatCount(h.healthy),
                   FormatCount(h.under_replicated), FormatCount(h.missing), FormatCount(h.index_copies)});
  }
  health.Print(out, "  ");
}

nlohmann::json ClusterStatusJson(const ClusterStatus& s) {
  nlohmann::json j;
  j["map"] = ProtoJson(client_internal::ToProto(s.map));
  j["nodes"] = nlohmann::json::array();
  // A node that did not answer is {"unreachable": "<why>"}.
  for (const auto& n : s.nodes) {
    j["nodes"].push_back(n.ok() ? ProtoJson(client_internal::ToProto(*n))
                                : nlohmann::json{{"unreachable", n.status().ToString()}});
  }
  j["datasets"] = nlohmann::json::array();
  for (const auto& h : s.datasets) {
    j["datasets"].push_back({{"dataset", h.dataset},
                             {"replication", h.replication},
                             {"ec_data", h.ec_data},
                             {"ec_parity", h.ec_parity},
                             {"shards", h.shards},
                             {"healthy", h.healthy},
                             {"under_replicated", h.under_replicated},
                             {"missing", h.missing},
                             {"index_copies", h.index_copies}});
  }
  return j;
}

}  // namespace strata::cli
