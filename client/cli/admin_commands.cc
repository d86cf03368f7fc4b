// strata ls | describe | status | rm: what a server holds, how it is doing,
// and deleting a version.
#include <google/protobuf/util/json_util.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>

#include "client/cli/cluster_status.h"
#include "client/cli/command.h"
#include "client/cli/format.h"
#include "client/cli/shard_holders.h"
#include "client/proto_convert.h"
#include "common/dataset_ref.h"
#include "common/wall_clock.h"
#include "strata/v1/admin.pb.h"

namespace strata::cli {

namespace {

std::string VersionStateName(VersionState state) {
  switch (state) {
    case VersionState::kIngesting: return "ingesting";
    case VersionState::kSealed: return "sealed";
    case VersionState::kAborted: return "aborted";
    case VersionState::kDeleted: return "deleted";
    default: return "unknown";
  }
}

Counts ToCounts(const std::vector<StratumCount>& counts) {
  Counts out;
  for (const StratumCount& c : counts) out.emplace_back(c.key, c.count);
  return out;
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

std::string JoinKeys(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// ---- ls

struct LsArgs {
  std::vector<std::string> servers;
  bool all = false;
  bool json = false;
};

int RunLs(const LsArgs& args) {
  auto client = ConnectToServer(args.servers);
  if (!client.ok()) return PrintError(client.status());
  auto datasets = (*client)->ListDatasets(args.all);
  if (!datasets.ok()) return PrintError(datasets.status());
  if (args.json) {
    v1::ListDatasetsReply reply;
    for (const DatasetInfo& info : *datasets) *reply.add_datasets() = client_internal::ToProto(info);
    return PrintJson(reply);
  }
  if (datasets->empty()) {
    std::cout << "no datasets on " << (*client)->address() << "\n";
    return 0;
  }
  using A = Table::Align;
  Table table({{"DATASET"},
               {"STATE"},
               {"SAMPLES", A::kRight},
               {"PAYLOAD", A::kRight},
               {"ON DISK", A::kRight},
               {"SHARDS", A::kRight},
               {"SEALED"}});
  for (const DatasetInfo& d : *datasets) {
    table.AddRow({d.name + "@" + std::to_string(d.version), VersionStateName(d.state), FormatCount(d.samples),
                  FormatBytes(d.bytes), FormatBytes(d.file_bytes), FormatCount(d.shards),
                  FormatTimeUtc(d.sealed_unix_ms)});
  }
  table.Print(std::cout);
  return 0;
}

// ---- describe

struct DescribeArgs {
  std::vector<std::string> servers;
  std::string dataset;
  bool shards = false;
  bool json = false;
};

// "0.31 (3.2x smaller)": shard bytes (headers, checksums and footers
// included) over the payload ingested.
std::string StoredRatio(uint64_t stored, uint64_t logical) {
  if (logical == 0) return "-";
  const double ratio = static_cast<double>(stored) / static_cast<double>(logical);
  char text[64];
  if (ratio < 1) {
    std::snprintf(text, sizeof text, "%.3f (%.1fx smaller)", ratio, 1 / ratio);
  } else {
    std::snprintf(text, sizeof text, "%.3f", ratio);
  }
  return text;
}

// "replication 3", or "ec 4+2 (...)" for an erasure-coded version.
std::string RedundancyText(const DatasetInfo& d) {
  if (d.ec_data != 0) {
    const uint32_t n = d.ec_data + d.ec_parity;
    char overhead[32];
    std::snprintf(overhead, sizeof overhead, "%.2f", static_cast<double>(n) / d.ec_data);
    return "ec " + std::to_string(d.ec_data) + "+" + std::to_string(d.ec_parity) + " (stripes of " +
           std::to_string(d.ec_data) + " shards + " + std::to_string(d.ec_parity) + " parity files on " +
           std::to_string(n) + " nodes; about " + overhead + "x the shards on disk)";
  }
  return d.replication != 0 ? "replication " + std::to_string(d.replication)
                            : "replication min(3, nodes) (the default)";
}

// `holders`: per shard, with --shards (else empty).
void PrintDescription(const DatasetDescription& reply, bool with_shards,
                      const std::vector<std::vector<ShardHolder>>& holders) {
  const DatasetInfo& d = reply.dataset;
  std::cout << d.name << "@" << d.version << " (" << VersionStateName(d.state) << ")\n";
  std::vector<std::pair<std::string, std::string>> fields = {
      {"samples", FormatCount(d.samples)},
      {"redundancy", RedundancyText(d)},
      {"compression", d.compression == Compression::kZstd ? "zstd level " + std::to_string(d.compression_level) +
                                                                ", blocks of " + FormatBytes(d.compression_block_bytes)
                                                          : "none"},
      {"payload", FormatBytes(d.bytes) + " (logical)"},
      {"on disk", FormatBytes(d.file_bytes) + " in " + FormatCount(d.shards) +
                      (d.ec_data != 0 ? " shards (data shards, without parity)" : " shards (one replica)")},
      {"stored/logical", StoredRatio(d.file_bytes, d.bytes)},
      {"stratify by", d.stratify_by.empty() ? "label" : JoinKeys(d.stratify_by, ", ")},
  };
  if (!d.time_bucket_field.empty()) {
    fields.emplace_back("time bucket",
                        d.time_bucket_field + " every " + FormatDuration(static_cast<double>(d.time_bucket_seconds)));
  }
  if (d.keep_versions != 0)
    fields.emplace_back("retention", "keeps the newest " + std::to_string(d.keep_versions) + " versions");
  fields.emplace_back("duplicates", FormatCount(d.duplicate_samples) + " exact duplicate samples");
  fields.emplace_back("created", FormatTimeUtc(d.created_unix_ms));
  fields.emplace_back("sealed", FormatTimeUtc(d.sealed_unix_ms));
  PrintFields(std::cout, fields, "  ");

  constexpr size_t kAll = std::numeric_limits<size_t>::max();
  std::cout << "\nlabels (" << d.label_counts.size() << ")\n";
  PrintCounts(std::cout, "LABEL", ToCounts(d.label_counts), kAll, "  ");
  std::cout << "\nstrata (" << d.stratum_counts.size() << ")\n";
  PrintCounts(std::cout, "STRATUM", ToCounts(d.stratum_counts), kAll, "  ");
  if (!with_shards) return;

  std::cout << "\nshards (" << reply.shards.size() << ")\n";
  using A = Table::Align;
  Table table({{"SEQ", A::kRight},
               {"FIRST ID", A::kRight},
               {"SAMPLES", A::kRight},
               {"SIZE", A::kRight},
               {"CHECKSUM"},
               {"HOLDERS (ZONE)"}});
  for (size_t i = 0; i < reply.shards.size(); ++i) {
    const ShardInfo& s = reply.shards[i];
    char checksum[17];
    std::snprintf(checksum, sizeof(checksum), "%016llx", static_cast<unsigned long long>(s.checksum));
    table.AddRow({std::to_string(s.seq), std::to_string(s.first_id), FormatCount(s.samples), FormatBytes(s.bytes),
                  checksum, i < holders.size() ? HoldersText(holders[i]) : "-"});
  }
  table.Print(std::cout, "  ");
}

int RunDescribe(const DescribeArgs& args) {
  auto client = ConnectToServer(args.servers);
  if (!client.ok()) return PrintError(client.status());
  auto reply = (*client)->Describe(args.dataset);
  if (!reply.ok()) return PrintError(reply.status());
  std::vector<std::vector<ShardHolder>> holders;
  if (args.shards) {
    auto map = (*client)->GetClusterMap();
    if (!map.ok()) return PrintError(map.status());
    holders = ShardHolders(*reply, *map);
  }
  if (args.json) {
    if (!args.shards) {
      reply->shards.clear();
      return PrintJson(client_internal::ToProto(*reply));
    }
    // The reply as JSON, each shard with its holders and their zones.
    std::string text;
    google::protobuf::util::JsonPrintOptions o;
    o.always_print_primitive_fields = true;
    o.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(client_internal::ToProto(*reply), &text, o);
    nlohmann::json j = nlohmann::json::parse(text);
    for (size_t i = 0; i < holders.size() && i < j["shards"].size(); ++i)
      j["shards"][i]["holders"] = HoldersJson(holders[i]);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  PrintDescription(*reply, args.shards, holders);
  return 0;
}

// ---- rm

struct RmArgs {
  std::vector<std::string> servers;
  std::string dataset;
  bool abort_ingest = false;
  bool json = false;
};

int RunRm(const RmArgs& args) {
  auto client = ConnectToServer(args.servers);
  if (!client.ok()) return PrintError(client.status());
  auto deleted = (*client)->DeleteVersion(args.dataset, args.abort_ingest);
  if (!deleted.ok()) return PrintError(deleted.status());
  if (args.json) {
    v1::DeleteVersionReply reply;
    *reply.mutable_dataset() = client_internal::ToProto(deleted->dataset);
    for (const auto& n : deleted->nodes_told) reply.add_nodes_told(n);
    for (const auto& n : deleted->nodes_pending) reply.add_nodes_pending(n);
    return PrintJson(reply);
  }
  const DatasetInfo& d = deleted->dataset;
  std::cout << "deleted " << d.name << "@" << d.version << " (" << FormatCount(d.samples) << " samples, "
            << FormatBytes(d.file_bytes) << " per replica)\n";
  if (!deleted->nodes_told.empty()) {
    std::cout << "  removed on " << (*client)->address() << " and " << JoinKeys(deleted->nodes_told, ", ") << "\n";
  }
  if (!deleted->nodes_pending.empty()) {
    std::cout << "  pending on " << JoinKeys(deleted->nodes_pending, ", ")
              << " (down or unreachable now: they remove their copies when they return)\n";
  }
  return 0;
}

// ---- status

struct StatusArgs {
  std::vector<std::string> servers;
  bool json = false;
};

int RunStatus(const StatusArgs& args) {
  auto client = ConnectToServer(args.servers);
  if (!client.ok()) return PrintError(client.status());
  auto reply = (*client)->GetStatus();
  if (!reply.ok()) return PrintError(reply.status());
  auto cluster = GatherClusterStatus(**client);
  if (!cluster.ok()) return PrintError(cluster.status());
  if (args.json) {
    nlohmann::json j = ClusterStatusJson(*cluster);
    std::string node;
    google::protobuf::util::JsonPrintOptions o;
    o.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(client_internal::ToProto(*reply), &node, o);
    j["node"] = nlohmann::json::parse(node);
    std::cout << j.dump(2) << "\n";
    return 0;
  }

  const NodeStatus& s = *reply;
  std::string started = FormatTimeUtc(s.started_unix_ms);
  if (s.started_unix_ms != 0) {
    const int64_t now_ms = UnixNowMs();
    started += " (up " + FormatDuration(static_cast<double>(now_ms - s.started_unix_ms) / 1000) + ")";
  }
  PrintFields(std::cout, {
                             {"node", OrDash(s.node_id)},
                             {"build", OrDash(s.build_version)},
                             {"listen", OrDash(s.listen)},
                             {"metrics", OrDash(s.metrics_listen)},
                             {"data dir", OrDash(s.data_dir)},
                             {"started", started},
                             {"datasets", FormatCount(s.datasets)},
                             {"active streams", FormatCount(s.active_streams)},
                             {"active ingests", FormatCount(s.active_ingests)},
                             {"served", FormatBytes(s.bytes_served) + ", " + FormatCount(s.samples_served) +
                                            " samples, " + FormatCount(s.batches_served) + " batches"},
                             {"ingested", FormatCount(s.samples_ingested) + " samples"},
                             {"checksum failures", FormatCount(s.checksum_failures)},
                             {"disk", FormatBytes(s.disk_bytes)},
                             {"disk free", s.disk_total_bytes == 0 ? "-"
                                                                   : FormatBytes(s.disk_free_bytes) + " of " +
                                                                         FormatBytes(s.disk_total_bytes) + " (" +
                                                                         OrDash(s.disk_state) + ")"},
                         });
  PrintClusterStatus(std::cout, *cluster);
  return 0;
}

}  // namespace

Command AddLsCommand(CLI::App& parent) {
  auto args = std::make_shared<LsArgs>();
  CLI::App* app = parent.add_subcommand("ls", "List the datasets a server holds (sealed versions unless --all)");
  AddServerOption(app, &args->servers);
  app->add_flag("-a,--all", args->all, "Also list versions that are still ingesting or were aborted");
  app->add_flag("--json", args->json, "Print the server's reply as JSON");
  return {app, [args] { return RunLs(*args); }};
}

Command AddDescribeCommand(CLI::App& parent) {
  auto args = std::make_shared<DescribeArgs>();
  CLI::App* app = parent.add_subcommand(
      "describe", "Show one dataset version: sizes, label and stratum counts, and optionally its shards");
  AddServerOption(app, &args->servers);
  app->add_option("dataset", args->dataset, "Dataset as NAME (latest version) or NAME@N")
      ->required()
      ->type_name("NAME[@N]")
      ->check(DatasetRefValidator());
  app->add_flag("--shards", args->shards,
                "Also list every shard: sequence, first id, samples, size, checksum, and the nodes that hold it with "
                "their zones");
  app->add_flag("--json", args->json, "Print the server's reply as JSON");
  return {app, [args] { return RunDescribe(*args); }};
}

Command AddRmCommand(CLI::App& parent) {
  auto args = std::make_shared<RmArgs>();
  CLI::App* app = parent.add_subcommand(
      "rm",
      "Delete one dataset version on every node: it leaves every listing at once and each node removes its "
      "files (a node that is down removes them when it returns). Streams open on it end with "
      "FAILED_PRECONDITION. Needs an admin token where tokens are on");
  AddServerOption(app, &args->servers);
  app->add_option("dataset", args->dataset, "The version to delete, as NAME@N (a version is always named)")
      ->required()
      ->type_name("NAME@N")
      ->check(StatusValidator([](const std::string& text) -> Status {
        auto ref = ParseDatasetRef(text);
        if (!ref.ok()) return ref.status();
        if (!ref->version) return Status::InvalidArgument("name the version to delete as NAME@N");
        return Status::OK();
      }));
  app->add_flag("--abort", args->abort_ingest,
                "If an ingest with several writers is still writing it (one whose writer never came stays open "
                "for ever), abort that ingest first, for every writer: their calls fail and every node drops "
                "the files. One writer's ingest is never aborted: stop that strata ingest instead");
  app->add_flag("--json", args->json, "Print the server's reply as JSON");
  return {app, [args] { return RunRm(*args); }};
}

Command AddStatusCommand(CLI::App& parent) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* app = parent.add_subcommand(
      "status",
      "Show the cluster's health: this node's counters, every node's state, repair and scrub progress, "
      "and each dataset's replica health");
  AddServerOption(app, &args->servers);
  app->add_flag("--json", args->json, "Print the server's reply as JSON");
  return {app, [args] { return RunStatus(*args); }};
}

}  // namespace strata::cli
