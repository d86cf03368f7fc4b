#include "client/cli/stream_report.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "client/cli/balance_report.h"
#include "client/cli/command.h"
#include "client/cli/format.h"
#include "client/proto_convert.h"
#include "plan/sampler_quotas.h"
#include "strata/client.h"

namespace strata::cli {

namespace {

// What one rank received.
struct RankRun {
  std::vector<std::vector<uint32_t>> strata;  // per step, stratum index of each sample
  std::vector<std::vector<uint64_t>> ids;     // per step
  std::vector<std::string> lines;             // --output lines
  Status end;
};

// The plan's target share of every stratum, as the server computes it.
Result<std::vector<double>> TargetShares(const DatasetInfo& info, const SamplerSpec& spec, const StreamArgs& args) {
  std::vector<double> natural;
  for (const auto& c : info.stratum_counts) {
    natural.push_back(info.samples ? static_cast<double>(c.count) / static_cast<double>(info.samples) : 0.0);
  }
  if (spec.kind == SamplerSpec::Kind::kShuffle) return natural;
  DatasetShape shape;
  shape.name = info.name;
  shape.version = info.version;
  shape.num_samples = info.samples;
  const v1::DatasetInfo wire = client_internal::ToProto(info);
  shape.strata.assign(wire.stratum_counts().begin(), wire.stratum_counts().end());
  PlanSpec plan;
  plan.sampler = client_internal::ToProto(spec);
  plan.seed = args.seed;
  plan.epoch = args.epoch;
  plan.global_batch = uint64_t{args.batch_size} * args.world;
  plan.remainder = args.drop_last ? v1::REMAINDER_DROP : v1::REMAINDER_SHORT;
  auto quotas = PlanQuotas(shape, plan);
  if (!quotas.ok()) return quotas.status();
  std::vector<double> shares(natural.size(), 0.0);
  for (size_t i = 0; i < quotas->strata.size(); ++i) shares[quotas->strata[i].stratum] = quotas->Share(i);
  return shares;
}

void StreamRank(Client& client, StreamOptions options, const std::map<std::string, uint32_t>& index, bool keep_lines,
                std::atomic<uint64_t>* samples, RankRun* run) {
  auto stream = client.OpenStream(options);
  if (!stream.ok()) {
    run->end = stream.status();
    return;
  }
  Batch batch;
  while (options.max_steps == 0 || run->ids.size() < options.max_steps) {
    Status s = (*stream)->Next(&batch);
    if (!s.ok()) {
      if (s.code() != Code::kOutOfRange) run->end = s;
      return;
    }
    std::vector<uint32_t> strata;
    for (const std::string& key : batch.strata()) {
      auto it = index.find(key);
      if (it == index.end()) {
        run->end = Status::Internal("the server sent stratum '" + key + "', which the dataset does not list");
        return;
      }
      strata.push_back(it->second);
    }
    run->strata.push_back(std::move(strata));
    run->ids.push_back(batch.ids());
    if (keep_lines) run->lines.push_back(BatchJsonLine(batch, options.sampler.kind != SamplerSpec::Kind::kShuffle));
    samples->fetch_add(batch.size());
  }
}

}  // namespace

int RunStreamReport(const StreamArgs& args, const SamplerSpec& spec) {
  if (args.rank_given) return PrintUsageError("--report streams every rank of --world itself; leave out --rank");
  if (!args.resume.empty() || args.start_step != 0) {
    return PrintUsageError("--report covers an epoch from its first step; leave out --resume and --start-step");
  }
  if (args.dataset.empty()) return PrintUsageError("--dataset is required");
  auto client = ConnectToServer(args.servers, args.zone, args.stall_timeout_ms);
  if (!client.ok()) return PrintError(client.status());
  auto described = (*client)->Describe(args.dataset);
  if (!described.ok()) return PrintError(described.status());
  const DatasetInfo& info = described->dataset;
  auto shares = TargetShares(info, spec, args);
  if (!shares.ok()) return PrintError(shares.status());
  std::vector<std::string> keys;
  std::vector<uint64_t> counts;
  std::map<std::string, uint32_t> index;
  for (const auto& c : info.stratum_counts) {
    index.emplace(c.key, static_cast<uint32_t>(keys.size()));
    keys.push_back(c.key);
    counts.push_back(c.count);
  }

  // One stream per rank, all at once, pinned to the described version.
  const auto started = std::chrono::steady_clock::now();
  std::vector<RankRun> runs(args.world);
  std::atomic<uint64_t> samples{0};
  {
    // Owner: this report (joined below). Purpose: one thread per rank, each
    // draining its own stream, as a training job's ranks would.
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < args.world; ++r) {
      StreamOptions o;
      o.dataset = info.name + "@" + std::to_string(info.version);
      o.rank = r;
      o.world = args.world;
      o.batch_size = args.batch_size;
      o.seed = args.seed;
      o.epoch = args.epoch;
      o.max_steps = args.max_steps;
      o.sampler = spec;
      o.remainder = args.drop_last ? Remainder::kDrop : Remainder::kShort;
      threads.emplace_back(StreamRank, std::ref(**client), o, std::cref(index), !args.output.empty(), &samples,
                           &runs[r]);
    }
    for (auto& t : threads) t.join();
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (uint32_t r = 0; r < args.world; ++r) {
    if (!runs[r].end.ok()) return PrintError(runs[r].end.WithContext("rank " + std::to_string(r)));
    if (runs[r].ids.size() != runs[0].ids.size()) {
      return PrintError(Status::Internal("ranks received different numbers of steps"));
    }
  }

  // Global batch k: the ranks' k-th batches together.
  Compositions global(runs[0].ids.size());
  std::vector<int64_t> seen(info.samples, -1);
  for (size_t k = 0; k < global.size(); ++k) {
    for (const RankRun& run : runs) {
      global[k].insert(global[k].end(), run.strata[k].begin(), run.strata[k].end());
      for (size_t i = 0; i < run.ids[k].size(); ++i) {
        if (run.ids[k][i] < seen.size()) seen[run.ids[k][i]] = run.strata[k][i];
      }
    }
  }
  if (!args.output.empty()) {
    std::ofstream out(args.output, std::ios::out | std::ios::trunc);
    for (size_t k = 0; k < global.size(); ++k) {
      for (const RankRun& run : runs) out << run.lines[k] << '\n';
    }
    if (!out) return PrintError(Status::IOError("cannot write " + args.output));
  }
  const std::string title = info.name + "@" + std::to_string(info.version) + ", epoch " + std::to_string(args.epoch) +
                            ", sampler " + args.sampler.sampler + ", " + std::to_string(args.world) + " ranks x " +
                            std::to_string(args.batch_size) + " = global batch " +
                            std::to_string(uint64_t{args.batch_size} * args.world) + ", seed " +
                            std::to_string(args.seed);
  const BalanceReport report =
      MakeReport(title, keys, counts, shares.value(), std::move(global), FillUnseen(seen, counts), args.world,
                 args.batch_size, args.seed, args.epoch, args.drop_last, args.max_steps);
  std::cout << "streamed " << FormatCount(samples.load()) << " samples in " << FormatCount(report.ours.size())
            << " global batches from " << args.world << " rank streams in " << FormatDuration(elapsed) << "\n\n";
  PrintReport(std::cout, report);
  if (!args.plot.empty()) {
    Status plotted = WritePlot(report, args.plot);
    if (!plotted.ok()) return PrintError(plotted);
    std::cout << "\nwrote " << args.plot << "\n";
  }
  return 0;
}

}  // namespace strata::cli
