// strata-stream-probe: streams one epoch on W ranks (threads) from a cluster
// and reports throughput, the longest pause between two batches of a rank,
// and whether every sample arrived exactly once. With --kill-pid it sends
// SIGKILL to that process when rank 0 reaches --kill-at-step, and reports the
// pause that caused: the failover cost a trainer sees.
//
// Output: one line of key=value pairs, for scripts.
#include <CLI/CLI.hpp>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "common/allocator.h"
#include "strata/client.h"

int main(int argc, char** argv) {
  strata::TuneAllocatorForStreaming();
  std::string servers = "127.0.0.1:7400";
  std::string dataset;
  uint32_t world = 1, batch = 256;
  uint64_t epoch = 0;
  int kill_pid = 0;
  uint64_t kill_at = 0;
  int64_t stall_ms = 1000;
  CLI::App app{"strata-stream-probe: stream an epoch, measure throughput and pauses, optionally kill a node"};
  app.add_option("--server", servers, "comma-separated seeds");
  app.add_option("--dataset", dataset)->required();
  app.add_option("--world", world);
  app.add_option("--batch-size", batch);
  app.add_option("--epoch", epoch);
  app.add_option("--kill-pid", kill_pid, "SIGKILL this process when rank 0 reaches --kill-at-step");
  app.add_option("--kill-at-step", kill_at);
  app.add_option("--stall-ms", stall_ms, "client stall timeout");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> seeds;
  for (size_t s = 0; s <= servers.size();) {
    const size_t c = std::min(servers.find(',', s), servers.size());
    if (c > s) seeds.push_back(servers.substr(s, c - s));
    s = c + 1;
  }
  strata::ClientOptions co;
  co.stall_timeout_ms = stall_ms;
  using Clock = std::chrono::steady_clock;
  std::atomic<uint64_t> samples{0}, bytes{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::vector<uint64_t> ids;
  std::vector<double> max_gap(world, 0), gap_after_kill(world, 0);
  std::atomic<bool> killed{false};
  Clock::time_point kill_time;
  const auto start = Clock::now();
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      auto client = strata::Client::Connect(seeds, co);
      if (!client.ok()) {
        std::fprintf(stderr, "error: %s\n", client.status().ToString().c_str());
        failed = true;
        return;
      }
      strata::StreamOptions o;
      o.dataset = dataset;
      o.rank = r;
      o.world = world;
      o.batch_size = batch;
      o.epoch = epoch;
      auto stream = client.value()->OpenStream(o);
      strata::Batch b;
      std::vector<uint64_t> mine;
      auto last = Clock::now();
      for (;;) {
        strata::Status s = stream.ok() ? stream.value()->Next(&b) : stream.status();
        const auto now = Clock::now();
        if (!s.ok()) {
          if (s.code() != strata::Code::kOutOfRange) {
            std::fprintf(stderr, "rank %u: %s\n", r, s.ToString().c_str());
            failed = true;
          }
          break;
        }
        const double gap = std::chrono::duration<double, std::milli>(now - last).count();
        max_gap[r] = std::max(max_gap[r], gap);
        if (killed && now > kill_time) gap_after_kill[r] = std::max(gap_after_kill[r], gap);
        last = now;
        samples += b.size();
        bytes += b.payload_bytes();
        mine.insert(mine.end(), b.ids().begin(), b.ids().end());
        if (r == 0 && kill_pid > 0 && b.step() == kill_at && !killed) {
          kill_time = Clock::now();
          kill(kill_pid, SIGKILL);
          killed = true;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(ids.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : ranks) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(ids.begin(), ids.end());
  const bool unique = std::adjacent_find(ids.begin(), ids.end()) == ids.end();
  const bool dense = !ids.empty() && ids.front() == 0 && ids.back() == ids.size() - 1;
  std::printf("samples=%llu seconds=%.3f samples_per_s=%.0f mb_per_s=%.1f max_gap_ms=%.1f failover_pause_ms=%.1f "
              "exactly_once=%s\n",
              static_cast<unsigned long long>(samples.load()), secs, static_cast<double>(samples) / secs,
              static_cast<double>(bytes) / secs / 1e6, *std::max_element(max_gap.begin(), max_gap.end()),
              *std::max_element(gap_after_kill.begin(), gap_after_kill.end()),
              unique && dense && !failed ? "yes" : "no");
  return failed ? 1 : 0;
}
