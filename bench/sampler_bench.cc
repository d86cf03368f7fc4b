// sampler_bench: the cost of stratified plans, and the quality cost of a
// block-shuffle window. Out of ctest; run it by hand:
//
//   build/bench/sampler_bench [--samples 100000000] [--strata 1000] [--batch 128] [--world 8]
//
// 1. Plan: a STRATIFIED plan over --samples samples in --strata Zipf-sized
//    strata: time and RSS to build it and to produce the first global batch,
//    per-sample time over sequential steps, and the time to resume at the
//    middle of the epoch (a replay from the nearest checkpoint). Beside it, the
//    peer: what torch's DistributedSampler must build every epoch, a
//    permutation of all n indices (torch.randperm), timed here as a
//    std::shuffle of an n-element array.
// 2. Stratum index: building and verifying strata.idx for --index-samples.
// 3. Block window: for windows 0, 64, 1024, 16384 on a dataset whose ids are
//    sorted by label (as a folder tree is ingested), the balance figures of a
//    shuffled stream (largest per-batch deviation, batches lacking a stratum,
//    share of neighbouring samples with the same label) and its locality
//    (distinct 1024-id blocks a global batch touches); and for the stratified
//    sampler, whose balance the window cannot change, the locality alone.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "plan/epoch_plan.h"
#include "plan/stratified_sampler.h"
#include "plan/stratum_index.h"
#include "server/ingest/stratum_index_writer.h"

namespace {

using namespace strata;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// Resident set size in MiB, from /proc/self/statm.
double RssMiB() {
  std::ifstream f("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// Stratum s holds the ids [start_s, start_s + c_s): members by arithmetic, so
// the plan is measured without an index file in the way.
class ContiguousMembers final : public StratumMembers {
 public:
  explicit ContiguousMembers(const std::vector<uint64_t>& counts) : start_(counts.size() + 1, 0) {
    for (size_t s = 0; s < counts.size(); ++s) start_[s + 1] = start_[s] + counts[s];
  }
  uint32_t num_strata() const override { return static_cast<uint32_t>(start_.size() - 1); }
  uint64_t count(uint32_t s) const override { return start_[s + 1] - start_[s]; }
  uint64_t Member(uint32_t s, uint64_t j) const override { return start_[s] + j; }

 private:
  std::vector<uint64_t> start_;
};

std::vector<uint64_t> ZipfCounts(uint64_t n, uint32_t strata) {
  std::vector<double> w(strata);
  double total = 0;
  for (uint32_t k = 0; k < strata; ++k) total += w[k] = 1.0 / (k + 1.0);
  std::vector<uint64_t> counts(strata);
  uint64_t given = 0;
  for (uint32_t k = 0; k < strata; ++k)
    given += counts[k] = std::max<uint64_t>(1, static_cast<uint64_t>(n * w[k] / total));
  counts[0] += n - given;  // exact total
  return counts;
}

DatasetShape Shape(const std::vector<uint64_t>& counts, std::shared_ptr<const StratumMembers> members) {
  DatasetShape shape;
  shape.name = "bench";
  shape.version = 1;
  for (uint32_t s = 0; s < counts.size(); ++s) {
    char key[16];
    std::snprintf(key, sizeof(key), "s%05u", s);
    v1::StratumCount c;
    c.set_key(key);
    c.set_count(counts[s]);
    shape.strata.push_back(c);
    shape.num_samples += counts[s];
  }
  shape.members = std::move(members);
  return shape;
}

void PlanBenchmark(uint64_t n, uint32_t strata, uint32_t batch, uint32_t world) {
  const std::vector<uint64_t> counts = ZipfCounts(n, strata);
  const DatasetShape shape = Shape(counts, std::make_shared<ContiguousMembers>(counts));
  v1::SamplerSpec spec;
  spec.set_kind(v1::SamplerSpec::STRATIFIED);
  std::printf("== plan: %llu samples, %u Zipf strata (rarest %llu), global batch %u (%u ranks x %u)\n",
              static_cast<unsigned long long>(n), strata, static_cast<unsigned long long>(counts.back()), batch * world,
              world, batch);

  const double rss0 = RssMiB();
  auto t0 = Clock::now();
  auto plan = EpochPlan::Create(shape, spec, 1, 0, batch, world, v1::REMAINDER_SHORT);
  if (!plan.ok()) {
    std::printf("error: %s\n", plan.status().ToString().c_str());
    return;
  }
  const double build_s = Seconds(t0);
  std::vector<uint64_t> ids;
  t0 = Clock::now();
  plan->RankBatch(0, 0, &ids);
  const double first_s = Seconds(t0);
  const double rss1 = RssMiB();

  // Sequential steps, every rank, as a job's servers compute them.
  const uint64_t steps = std::min<uint64_t>(plan->num_steps(), 3000);
  uint64_t samples = 0, checksum = 0;
  t0 = Clock::now();
  for (uint64_t step = 0; step < steps; ++step) {
    for (uint32_t r = 0; r < world; ++r) {
      plan->RankBatch(step, r, &ids);
      samples += ids.size();
      for (uint64_t id : ids) checksum ^= id;
    }
  }
  const double seq_s = Seconds(t0);
  const double rss2 = RssMiB();

  // A fresh process resuming in the middle of the epoch: one replay.
  auto resumed = EpochPlan::Create(shape, spec, 1, 0, batch, world, v1::REMAINDER_SHORT);
  t0 = Clock::now();
  resumed->RankBatch(plan->num_steps() / 2, 0, &ids);
  const double resume_s = Seconds(t0);
  t0 = Clock::now();
  resumed->RankBatch(plan->num_steps() / 2 + 7, 0, &ids);
  const double near_s = Seconds(t0);

  // The peer: DistributedSampler materialises randperm(n) every epoch.
  t0 = Clock::now();
  const double rss3 = RssMiB();
  std::vector<uint64_t> perm(n);
  std::iota(perm.begin(), perm.end(), uint64_t{0});
  std::mt19937_64 rng(1);
  std::shuffle(perm.begin(), perm.end(), rng);
  const double peer_s = Seconds(t0);
  const double peer_mib = RssMiB() - rss3;
  checksum ^= perm[12345 % n];
  perm = {};

  std::printf("  plan ready                 %10.3f ms   RSS +%.1f MiB\n", build_s * 1e3, rss1 - rss0);
  std::printf("  first global batch         %10.3f ms\n", first_s * 1e3);
  std::printf("  sequential steps           %10.1f ns/sample over %llu steps x %u ranks (RSS now +%.1f MiB)\n",
              seq_s * 1e9 / static_cast<double>(samples), static_cast<unsigned long long>(steps), world, rss2 - rss0);
  std::printf("  resume at step %-10llu  %10.3f ms (replay from a checkpoint), then %.3f ms for a step near it\n",
              static_cast<unsigned long long>(plan->num_steps() / 2), resume_s * 1e3, near_s * 1e3);
  std::printf("  peer: randperm(n) per epoch%10.3f ms   RSS +%.1f MiB\n", peer_s * 1e3, peer_mib);
  std::printf("  ratio (peer / strata): time to first batch %.0fx, memory %.0fx   [checksum %llx]\n",
              peer_s / (build_s + first_s), peer_mib / std::max(rss1 - rss0, 0.01),
              static_cast<unsigned long long>(checksum));
}

void IndexBenchmark(uint64_t n, uint32_t strata) {
  const std::string dir = std::filesystem::temp_directory_path() / ("strata-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/strata.idx";
  const std::vector<uint64_t> counts = ZipfCounts(n, strata);
  std::vector<std::string> keys(strata);
  for (uint32_t s = 0; s < strata; ++s) keys[s] = "s" + std::to_string(s);
  std::vector<uint32_t> of;
  for (uint32_t s = 0; s < strata; ++s) of.insert(of.end(), counts[s], s);
  std::shuffle(of.begin(), of.end(), std::mt19937_64(2));
  auto t0 = Clock::now();
  auto writer = StratumIndexWriter::Create(path);
  for (uint32_t s : of) (void)writer.value()->Add(keys[s]);
  const double add_s = Seconds(t0);
  t0 = Clock::now();
  auto summary = writer.value()->Finish();
  const double finish_s = Seconds(t0);
  t0 = Clock::now();
  auto file = StratumIndexFile::Open(path);
  const double open_s = Seconds(t0);
  t0 = Clock::now();
  auto lazy = StratumIndexFile::Open(path, nullptr, IndexCheck::kOnUse);
  const double lazy_s = Seconds(t0);
  std::printf("== stratum index: %llu samples, %u strata: %.1f MiB file\n", static_cast<unsigned long long>(n), strata,
              summary.ok() ? static_cast<double>(summary->file_bytes) / (1 << 20) : 0.0);
  std::printf("  ingest-time Add            %10.1f ns/sample\n", add_s * 1e9 / static_cast<double>(n));
  std::printf("  Finish (sort, write, fsync)%10.3f s\n", finish_s);
  std::printf("  open + verify all          %10.3f s (%s)\n", open_s,
              file.ok() ? "ok" : file.status().ToString().c_str());
  std::printf("  open, verify blocks on use %10.3f s (%s)\n", lazy_s,
              lazy.ok() ? "ok" : lazy.status().ToString().c_str());
  std::filesystem::remove_all(dir);
}

struct Quality {
  double max_dev = 0, mean_dev = 0, missing = 0, same_label = 0, blocks = 0;
};

// Ids sorted by label, as a folder tree ingests: stratum s is a contiguous run.
Quality Measure(const EpochPlan& plan, const std::vector<uint32_t>& label_of, const std::vector<double>& share) {
  Quality q;
  std::vector<uint64_t> ids;
  std::vector<uint32_t> count(share.size());
  uint64_t pairs = 0, same = 0, batches = 0;
  for (uint64_t step = 0; step + 1 < plan.num_steps(); ++step) {
    plan.RankBatch(step, 0, &ids);
    std::fill(count.begin(), count.end(), 0);
    std::set<uint64_t> blocks;
    for (size_t i = 0; i < ids.size(); ++i) {
      ++count[label_of[ids[i]]];
      blocks.insert(ids[i] / 1024);
      if (i > 0) {
        ++pairs;
        same += label_of[ids[i]] == label_of[ids[i - 1]];
      }
    }
    double worst = 0;
    bool lacking = false;
    for (size_t s = 0; s < share.size(); ++s) {
      const double target = share[s] * static_cast<double>(ids.size());
      worst = std::max(worst, std::fabs(count[s] - target));
      lacking |= target >= 1 && count[s] == 0;
    }
    q.max_dev = std::max(q.max_dev, worst);
    q.mean_dev += worst;
    q.missing += lacking;
    q.blocks += static_cast<double>(blocks.size());
    ++batches;
  }
  q.mean_dev /= static_cast<double>(batches);
  q.missing /= static_cast<double>(batches);
  q.blocks /= static_cast<double>(batches);
  q.same_label = static_cast<double>(same) / static_cast<double>(pairs);
  return q;
}

void WindowBenchmark() {
  const uint64_t n = 1'000'000;
  const uint32_t strata = 100;
  const uint32_t batch = 256;
  const std::vector<uint64_t> counts = ZipfCounts(n, strata);
  std::vector<uint32_t> label_of;
  for (uint32_t s = 0; s < strata; ++s) label_of.insert(label_of.end(), counts[s], s);
  const DatasetShape shape = Shape(counts, std::make_shared<ContiguousMembers>(counts));
  std::vector<double> share;
  double expected_same = 0;
  for (uint64_t c : counts) {
    share.push_back(static_cast<double>(c) / static_cast<double>(n));
    expected_same += share.back() * share.back();
  }
  std::printf("== block window: %llu samples sorted by label, %u Zipf strata, global batch %u, 1 rank\n",
              static_cast<unsigned long long>(n), strata, batch);
  std::printf("  %-11s %7s %11s %11s %13s %12s %15s\n", "sampler", "window", "max dev", "mean dev", "lacking",
              "same-label", "1024-id blocks");
  for (const char* kind : {"shuffle", "stratified"}) {
    for (uint64_t window : {0, 64, 1024, 16384}) {
      v1::SamplerSpec spec;
      spec.set_kind(std::string(kind) == "shuffle" ? v1::SamplerSpec::SHUFFLE : v1::SamplerSpec::STRATIFIED);
      spec.set_block_window(window);
      auto plan = EpochPlan::Create(shape, spec, 1, 0, batch, 1, v1::REMAINDER_SHORT);
      const Quality q = Measure(plan.value(), label_of, share);
      std::printf("  %-11s %7llu %11.2f %11.2f %12.1f%% %11.1f%% %15.1f\n", kind,
                  static_cast<unsigned long long>(window), q.max_dev, q.mean_dev, 100 * q.missing, 100 * q.same_label,
                  q.blocks);
    }
  }
  std::printf(
      "  (same-label: share of neighbouring samples in a batch with the same label; %.1f%% in a random "
      "order, but the stratified sampler's keyed within-batch order does not follow positions)\n",
      100 * expected_same);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t samples = 100'000'000, index_samples = 10'000'000;
  uint32_t strata = 1000, batch = 128, world = 8;
  bool skip_index = false, skip_window = false;
  CLI::App app{"sampler_bench: stratified plan cost and the block window's quality cost"};
  app.add_option("--samples", samples, "samples in the planned dataset");
  app.add_option("--strata", strata, "Zipf-sized strata");
  app.add_option("--batch", batch, "batch per rank");
  app.add_option("--world", world, "ranks");
  app.add_option("--index-samples", index_samples, "samples in the stratum index benchmark");
  app.add_flag("--skip-index", skip_index, "skip the stratum index benchmark");
  app.add_flag("--skip-window", skip_window, "skip the block window benchmark");
  CLI11_PARSE(app, argc, argv);
  PlanBenchmark(samples, strata, batch, world);
  if (!skip_index) IndexBenchmark(index_samples, strata);
  if (!skip_window) WindowBenchmark();
  return 0;
}
