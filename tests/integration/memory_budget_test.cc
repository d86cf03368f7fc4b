// A real stratad with --memory-budget: its whole resident memory stays
// within the budget while concurrent streams read a dataset larger than it,
// because the block cache holds only what the rest of the server leaves.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

#include "tests/integration/cluster_fixture.h"

namespace strata::testing {
namespace {

constexpr uint64_t kSamples = 1600;
constexpr size_t kPayloadBytes = 64 << 10;  // 100 MiB in all
constexpr uint64_t kBudget = 112ull << 20;

std::string Payload(uint64_t i) {
  std::string p(kPayloadBytes, static_cast<char>('a' + i % 26));
  const std::string id = std::to_string(i);
  p.replace(0, id.size(), id);
  return p;
}

// VmRSS of process `pid` in bytes, 0 if it cannot be read, and the RssAnon
// and RssFile lines that say what it was (for a failure's message).
uint64_t ResidentBytes(pid_t pid, std::string* parts) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  uint64_t rss = 0;
  parts->clear();
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stoull(line.substr(6)) << 10;
    if (line.rfind("RssAnon:", 0) == 0 || line.rfind("RssFile:", 0) == 0) parts->append(line + " ");
  }
  return rss;
}

// The value of a gauge on /metrics, or -1.
double Gauge(const std::string& metrics_address, const std::string& name) {
  CommandResult scrape = RunCommand({"/usr/bin/curl", "-sf", "http://" + metrics_address + "/metrics"});
  const std::string prefix = name + "{node=\"node-1\"} ";
  const size_t at = scrape.out.find("\n" + prefix);
  if (scrape.exit_code != 0 || at == std::string::npos) return -1;
  return std::stod(scrape.out.substr(at + 1 + prefix.size()));
}

TEST(MemoryBudgetTest, StratadStaysWithinItsBudgetWhileStreaming) {
  TempDir dir;
  StratadProcess::Options o;
  o.data_dir = dir.Join("data");
  // No scrubbing: its first pass starts 10 s after start, which a slow run on
  // a loaded machine reaches, and a pass while streams run pushed the server's
  // file-backed RSS past the budget in a third of the samples (CI, 2026-11-25).
  // This test measures the serving path's budget; the scrubber's effect is a
  // known limit (docs/operations.md, "Memory budget and scrubbing").
  o.extra_args = {"--memory-budget", "112MiB", "--log-level", "info", "--cluster-scrub-bytes-per-sec", "0"};
  auto server = StratadProcess::Start(o);
  ASSERT_NE(server, nullptr);
  auto client = Client::Connect(server->address());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const IngestSummary ingested = IngestSynthetic(*client.value(), "wide", kSamples, 4, Payload);
  ASSERT_EQ(ingested.dataset.samples, kSamples);

  // Four ranks at once, the server's resident memory sampled meanwhile.
  constexpr uint32_t kWorld = 4;
  std::atomic<bool> streaming{true};
  std::atomic<uint64_t> peak{0};
  std::string peak_parts;  // written by the watcher, read after it is joined
  uint64_t samples = 0, over = 0;
  std::thread watch([&] {
    std::string parts;
    while (streaming.load()) {
      const uint64_t rss = ResidentBytes(server->pid(), &parts);
      ++samples;
      if (rss > kBudget) ++over;
      if (rss > peak.load()) {
        peak.store(rss);
        peak_parts = parts;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<RankRun> runs(kWorld);
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < kWorld; ++r) {
    ranks.emplace_back([&, r] {
      StreamOptions so;
      so.dataset = "wide";
      so.rank = r;
      so.world = kWorld;
      so.batch_size = 16;
      runs[r] = StreamAll(*client.value(), so);
    });
  }
  for (auto& t : ranks) t.join();
  streaming = false;
  watch.join();

  std::set<uint64_t> seen;
  for (const RankRun& run : runs) {
    EXPECT_EQ(run.end.code(), Code::kOutOfRange) << run.end.ToString();
    for (const Batch& b : run.batches) {
      for (size_t i = 0; i < b.size(); ++i) {
        EXPECT_TRUE(seen.insert(b.ids()[i]).second) << "sample " << b.ids()[i] << " twice";
        EXPECT_EQ(b.field(i, "bin"), Payload(b.ids()[i])) << b.ids()[i];
      }
    }
  }
  EXPECT_EQ(seen.size(), kSamples);
  ASSERT_GT(peak.load(), 0u) << "the server's memory could not be read";
  // Within the budget nearly all the time: the budget is governed at most
  // once a millisecond, from the most the rest of the server held lately, so
  // a sudden growth of the rest can pass it for a moment. Brief excursions to
  // 127-130 MiB were 64 KiB records sent from their mapping, each holding a
  // 2 MiB block while it waited for the socket; such sparse records are
  // copied now (docs/performance.md, "A memory budget for the whole server").
  // Runs over the budget in 10-55% of samples (peaks 116-143 MiB) were the
  // cache filling while the server was idle and then unable to give blocks
  // back as the streams' heap grew by ~30 MiB, because nearly every block was
  // in use by some batch waiting for the socket; such blocks are shed now too
  // (BlockCacheTest.ShrinkingBudgetShedsPinnedBlocksEvenWhileRead). With the
  // budget ignored, the server is over it in 48 samples of 49 and peaks at
  // 150-160 MiB.
  const std::string what = "server VmRSS peaked at " + std::to_string(peak.load() >> 10) + " KiB (" + peak_parts +
                           "); over the budget in " + std::to_string(over) + " of " + std::to_string(samples) +
                           " samples";
  EXPECT_LE(over * 20, samples) << what;
  EXPECT_LE(peak.load(), kBudget + (16ull << 20)) << what;
  std::printf("%s\n", what.c_str());
  std::printf("server VmRSS peak %llu KiB of %llu\n", static_cast<unsigned long long>(peak.load() >> 10),
              static_cast<unsigned long long>(kBudget >> 10));
  // The cache had less than the dataset, and held no more than its share.
  const double budget = Gauge(server->metrics_address(), "strata_cache_budget_bytes");
  const double resident = Gauge(server->metrics_address(), "strata_cache_resident_bytes");
  EXPECT_GT(budget, 0);
  EXPECT_LT(budget, static_cast<double>(kSamples * kPayloadBytes));
  EXPECT_LE(resident, budget);
  client.value().reset();
  EXPECT_EQ(server->Terminate(), 0);
}

// A budget below what stratad needs to run, or one without the cache that
// keeps it, is a usage error at start, not a server that cannot keep it.
TEST(MemoryBudgetTest, ImpossibleBudgetsAreRefusedAtStart) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  } cases[] = {
      {{"--memory-budget", "16MiB"}, "at least 32 MiB"},
      {{"--memory-budget", "1GiB", "--cache-bytes", "0"}, "memory_budget needs the block cache"},
      {{"--memory-budget", "lots"}, "--memory-budget"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {StratadBinary(), "--data-dir", dir.Join("data"), "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    CommandResult r = RunCommand(argv, 30);
    EXPECT_EQ(r.exit_code, 2) << c.args[1];
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace strata::testing
