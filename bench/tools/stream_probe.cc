// strata-stream-probe: streams one epoch on W ranks (threads) from a cluster
// and reports throughput, the longest pause between two batches of a rank,
// and whether every sample arrived exactly once. With --kill-pid it sends
// SIGKILL to that process when rank 0 reaches --kill-at-step, and reports the
// pause that caused: the failover cost a trainer sees.
//
// With --slow-every N --slow-ms M each rank sleeps M ms after every Nth step
// (a trainer's evaluation or checkpoint), and --step-ms paces every step.
// Besides throughput it counts, for a soak: samples delivered, lost (of the
// dataset's samples, those no rank received) and duplicated, the streams'
// failovers, stalls and readmissions, and streams aborted (ended with an
// error before the end of the epoch).
//
// --sampler stratified streams balanced batches instead of one shuffle. With
// --digests FILE each sample's bytes are checked against the XXH3-64 digest
// FILE gives its id (one "id digest" line each), and samples that differ are
// counted as corrupt; a FILE that does not exist is written from an epoch
// that arrived exactly once, for the next runs to check against.
//
// With --rank-per-server, rank r connects to the r-th server of --server
// alone (modulo their number): independent single-node streams in one process,
// the reference bench/three_nodes.sh sets beside a cluster.
//
// Output: one line of key=value pairs, for scripts.
#include <signal.h>
#include <xxhash.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/allocator.h"
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
  uint64_t slow_every = 0, slow_ms = 0, step_ms = 0;
  bool plan_on_nodes = false;
  bool fixed_window = false;
  bool rank_per_server = false;
  std::string sampler = "shuffle";
  std::string digests_file;
  CLI::App app{"strata-stream-probe: stream an epoch, measure throughput and pauses, optionally kill a node"};
  app.add_option("--server", servers, "comma-separated seeds");
  app.add_option("--dataset", dataset)->required();
  app.add_option("--world", world);
  app.add_option("--batch-size", batch);
  app.add_option("--epoch", epoch);
  app.add_option("--kill-pid", kill_pid, "SIGKILL this process when rank 0 reaches --kill-at-step");
  app.add_option("--kill-at-step", kill_at);
  app.add_option("--stall-ms", stall_ms, "client stall timeout");
  app.add_option("--slow-every", slow_every, "sleep --slow-ms after every Nth step of each rank");
  app.add_option("--slow-ms", slow_ms);
  app.add_option("--step-ms", step_ms, "sleep this long after every step");
  const strata::ClientOptions defaults;
  int receive_window = defaults.receive_window_bytes;
  size_t buffered_parts = defaults.max_buffered_parts;
  app.add_option("--receive-window", receive_window, "ClientOptions.receive_window_bytes (0: gRPC's own)")
      ->capture_default_str();
  app.add_flag("--fixed-window", fixed_window,
               "keep --receive-window however far the node is (ClientOptions.receive_window_by_round_trip off)");
  app.add_option("--buffered-parts", buffered_parts, "ClientOptions.max_buffered_parts")->capture_default_str();
  app.add_flag("--plan-on-nodes", plan_on_nodes, "every node computes the plan (ClientOptions.plan_on_client off)");
  app.add_flag("--rank-per-server", rank_per_server,
               "rank r streams from the r-th server of --server alone (each must hold the dataset)");
  app.add_option("--sampler", sampler, "shuffle or stratified")->check(CLI::IsMember({"shuffle", "stratified"}));
  app.add_option("--digests", digests_file,
                 "check each sample against the digest this file gives its id; written if it does not exist");
  CLI11_PARSE(app, argc, argv);

  // id -> XXH3-64 of the sample's bytes, when --digests names a file that exists.
  std::vector<uint64_t> digests;
  std::vector<bool> has_digest;
  const bool check_digests = !digests_file.empty() && std::ifstream(digests_file).good();
  if (check_digests) {
    std::ifstream in(digests_file);
    uint64_t id = 0, digest = 0;
    while (in >> id >> digest) {
      if (id >= (uint64_t{1} << 32)) {
        std::fprintf(stderr, "error: %s: id %llu is out of range\n", digests_file.c_str(),
                     static_cast<unsigned long long>(id));
        return 2;
      }
      if (id >= digests.size()) {
        digests.resize(id + 1);
        has_digest.resize(id + 1);
      }
      digests[id] = digest;
      has_digest[id] = true;
    }
  }

  std::vector<std::string> seeds;
  for (size_t s = 0; s <= servers.size();) {
    const size_t c = std::min(servers.find(',', s), servers.size());
    if (c > s) seeds.push_back(servers.substr(s, c - s));
    s = c + 1;
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "error: --server names no server\n");
    return 2;
  }
  strata::ClientOptions co;
  co.stall_timeout_ms = stall_ms;
  co.plan_on_client = !plan_on_nodes;
  co.receive_window_bytes = receive_window;
  co.receive_window_by_round_trip = !fixed_window;
  co.max_buffered_parts = buffered_parts;
  using Clock = std::chrono::steady_clock;
  std::atomic<uint64_t> samples{0}, bytes{0};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> failovers{0}, stalls{0}, readmissions{0}, aborts{0}, expected{0}, corrupt{0};
  std::mutex mu;
  std::vector<uint64_t> ids;
  std::map<uint64_t, uint64_t> seen_digests;  // written to --digests when it does not exist
  std::vector<double> max_gap(world, 0), gap_after_kill(world, 0);
  std::atomic<bool> killed{false};
  std::atomic<int> window{-1};  // rank 0's client's receive window (Client::receive_window_bytes)
  Clock::time_point kill_time;
  const auto start = Clock::now();
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      auto client =
          rank_per_server ? strata::Client::Connect(seeds[r % seeds.size()], co) : strata::Client::Connect(seeds, co);
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
      if (sampler == "stratified") o.sampler.kind = strata::SamplerSpec::Kind::kStratified;
      if (r == 0) {
        window = client.value()->receive_window_bytes();
        auto d = client.value()->Describe(dataset);
        if (d.ok()) expected = d->dataset.samples;
      }
      auto stream = client.value()->OpenStream(o);
      strata::Batch b;
      std::vector<uint64_t> mine;
      std::vector<std::pair<uint64_t, uint64_t>> my_digests;
      auto last = Clock::now();
      for (;;) {
        strata::Status s = stream.ok() ? stream.value()->Next(&b) : stream.status();
        const auto now = Clock::now();
        if (!s.ok()) {
          if (s.code() != strata::Code::kOutOfRange) {
            std::fprintf(stderr, "rank %u: %s\n", r, s.ToString().c_str());
            failed = true;
            ++aborts;
          }
          if (stream.ok()) {
            const strata::StreamStats st = stream.value()->stats();
            failovers += st.failovers;
            stalls += st.stalls;
            readmissions += st.readmissions;
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
        if (!digests_file.empty()) {
          for (size_t i = 0; i < b.size(); ++i) {
            const std::string_view sample = b.sample(i);
            const uint64_t digest = XXH3_64bits(sample.data(), sample.size());
            const uint64_t id = b.ids()[i];
            if (!check_digests) {
              my_digests.emplace_back(id, digest);
            } else if (id >= digests.size() || !has_digest[id] || digests[id] != digest) {
              ++corrupt;
            }
          }
        }
        if (r == 0 && kill_pid > 0 && b.step() == kill_at && !killed) {
          kill_time = Clock::now();
          kill(kill_pid, SIGKILL);
          killed = true;
        }
        if (step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
        if (slow_every > 0 && (b.step() + 1) % slow_every == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(ids.end(), mine.begin(), mine.end());
      for (const auto& [id, digest] : my_digests) seen_digests[id] = digest;
    });
  }
  for (auto& t : ranks) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(ids.begin(), ids.end());
  const bool unique = std::adjacent_find(ids.begin(), ids.end()) == ids.end();
  const bool dense = !ids.empty() && ids.front() == 0 && ids.back() == ids.size() - 1;
  const uint64_t distinct = static_cast<uint64_t>(std::distance(ids.begin(), std::unique(ids.begin(), ids.end())));
  const uint64_t duplicated = ids.size() - distinct;
  const uint64_t lost = expected > distinct ? expected - distinct : 0;
  const bool exactly_once = unique && dense && !failed;
  if (!digests_file.empty() && !check_digests && exactly_once && lost == 0) {
    std::ofstream out(digests_file);
    for (const auto& [id, digest] : seen_digests) out << id << ' ' << digest << '\n';
    if (!out.flush()) {
      std::fprintf(stderr, "error: cannot write %s\n", digests_file.c_str());
      failed = true;
    }
  }
  std::printf(
      "samples=%llu seconds=%.3f samples_per_s=%.0f mb_per_s=%.1f max_gap_ms=%.1f failover_pause_ms=%.1f "
      "exactly_once=%s delivered=%llu lost=%llu duplicated=%llu failovers=%llu stalls=%llu readmissions=%llu "
      "aborts=%llu corrupt=%llu receive_window=%d\n",
      static_cast<unsigned long long>(samples.load()), secs, static_cast<double>(samples) / secs,
      static_cast<double>(bytes) / secs / 1e6, *std::max_element(max_gap.begin(), max_gap.end()),
      *std::max_element(gap_after_kill.begin(), gap_after_kill.end()), exactly_once ? "yes" : "no",
      static_cast<unsigned long long>(samples.load()), static_cast<unsigned long long>(lost),
      static_cast<unsigned long long>(duplicated), static_cast<unsigned long long>(failovers.load()),
      static_cast<unsigned long long>(stalls.load()), static_cast<unsigned long long>(readmissions.load()),
      static_cast<unsigned long long>(aborts.load()), static_cast<unsigned long long>(corrupt.load()), window.load());
  return failed || corrupt > 0 ? 1 : 0;
}
