// placement_sim: what placement does to a large cluster, without processes.
// It runs the placement function the servers run (common/placement.h) over
// synthetic members and shard keys. Out of ctest; run it by hand:
//
//   build/bench/placement_sim [--nodes 1000] [--zones 10] [--racks 0] [--shards 1000000] [--replication 3]
//
// Prints, for --nodes nodes spread evenly over --zones zones (and over
// --racks racks in each zone; 0: no racks):
//  - the spread: copies per node, max and min against the mean;
//  - copies per zone, and how many shards have two copies in one zone (0
//    whenever there are at least R zones);
//  - a join (one node more, node N in zone N mod Z, as the others are) and a leave (the last node):
//    the fraction of all copies that move, against the ideal (the newcomer's
//    fair share, 1/(N+1); the leaver's copies, 1/N), and the copies that
//    moved between two nodes that neither joined nor left (ideally 0).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/placement.h"

namespace {

using strata::PlacementMember;
using strata::PlacementSet;

struct Counts {
  std::vector<uint64_t> per_node;  // base placement: copies per node
  std::vector<uint64_t> per_zone;
  uint64_t shards_sharing_a_zone = 0;  // two or more copies in one zone
  uint64_t join_moved = 0;             // copies whose holder changed on the join
  uint64_t join_stray = 0;             // ... onto a node other than the joiner
  uint64_t leave_moved = 0;
  uint64_t leave_stray = 0;  // ... off a node other than the leaver

  void Add(const Counts& o) {
    for (size_t i = 0; i < per_node.size(); ++i) per_node[i] += o.per_node[i];
    for (size_t i = 0; i < per_zone.size(); ++i) per_zone[i] += o.per_zone[i];
    shards_sharing_a_zone += o.shards_sharing_a_zone;
    join_moved += o.join_moved;
    join_stray += o.join_stray;
    leave_moved += o.leave_moved;
    leave_stray += o.leave_stray;
  }
};

bool Has(const std::vector<uint32_t>& v, uint32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Members 0..n-1 are the cluster, member n the joiner; the leaver is member n-1.
void Simulate(const PlacementSet& base, const PlacementSet& joined, const PlacementSet& left, uint32_t r,
              uint32_t zones, uint64_t begin, uint64_t end, Counts* out) {
  const size_t n = base.size();
  const uint32_t joiner = static_cast<uint32_t>(n), leaver = static_cast<uint32_t>(n - 1);
  std::vector<uint64_t> weights(n + 1);
  std::vector<uint32_t> a, b, c;
  std::vector<uint32_t> zone_copies(zones);
  for (uint64_t shard = begin; shard < end; ++shard) {
    const std::string key = strata::ShardFileKey("sim", 1, static_cast<uint32_t>(shard));
    for (size_t i = 0; i <= n; ++i) weights[i] = joined.Weight(key, i);
    base.Holders(std::span(weights).first(n), r, &a);
    joined.Holders(weights, r, &b);
    left.Holders(std::span(weights).first(n - 1), r, &c);
    std::fill(zone_copies.begin(), zone_copies.end(), 0);
    bool shared = false;
    for (uint32_t h : a) {
      ++out->per_node[h];
      const uint32_t z = static_cast<uint32_t>(h % zones);
      ++out->per_zone[z];
      shared = shared || ++zone_copies[z] > 1;
    }
    out->shards_sharing_a_zone += shared;
    for (uint32_t h : b) {
      if (Has(a, h)) continue;
      ++out->join_moved;
      out->join_stray += h != joiner;
    }
    for (uint32_t h : a) {
      if (Has(c, h)) continue;
      ++out->leave_moved;
      out->leave_stray += h != leaver;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("placement_sim: spread, movement on a join or leave, and copies per zone");
  uint32_t nodes = 1000, zones = 10, racks = 0, replication = 3;
  uint64_t shards = 1000000;
  unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  app.add_option("--nodes", nodes, "nodes in the cluster")->check(CLI::Range(2u, 100000u));
  app.add_option("--zones", zones, "zones, nodes spread evenly over them")->check(CLI::Range(1u, 100000u));
  app.add_option("--racks", racks, "racks per zone, nodes spread evenly over them; 0: none")
      ->check(CLI::Range(0u, 100000u));
  app.add_option("--shards", shards, "shards placed")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  app.add_option("--replication", replication, "copies per shard")->check(CLI::Range(1u, 16u));
  app.add_option("--threads", threads, "worker threads")->check(CLI::Range(1u, 256u));
  CLI11_PARSE(app, argc, argv);
  replication = std::min(replication, nodes - 1);

  // Node i sits in zone i % zones, so the joiner (node `nodes`) and the
  // leaver (node nodes - 1) are ordinary members of their zones.
  std::vector<PlacementMember> members;
  for (uint32_t i = 0; i <= nodes; ++i) {
    char id[32];
    std::snprintf(id, sizeof(id), "node-%05u", i);
    members.push_back(
        {id, "zone-" + std::to_string(i % zones), racks == 0 ? "" : "rack-" + std::to_string(i / zones % racks)});
  }
  const PlacementSet joined(members);
  const PlacementSet base(std::vector<PlacementMember>(members.begin(), members.end() - 1));
  const PlacementSet left(std::vector<PlacementMember>(members.begin(), members.end() - 2));

  const auto start = std::chrono::steady_clock::now();
  std::vector<Counts> parts(threads, Counts{std::vector<uint64_t>(nodes), std::vector<uint64_t>(zones)});
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Simulate(base, joined, left, replication, zones, shards * t / threads, shards * (t + 1) / threads, &parts[t]);
    });
  }
  for (auto& w : workers) w.join();
  Counts total{std::vector<uint64_t>(nodes), std::vector<uint64_t>(zones)};
  for (const auto& p : parts) total.Add(p);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const double copies = static_cast<double>(shards) * replication;
  const double mean = copies / nodes;
  const auto [lo, hi] = std::minmax_element(total.per_node.begin(), total.per_node.end());
  std::printf("placement_sim: %u nodes in %u zones (%u racks each), %llu shards, R=%u (%u threads, %.1f s)\n", nodes,
              zones, racks, static_cast<unsigned long long>(shards), replication, threads, seconds);
  std::printf("spread: copies per node mean %.1f, max %llu (%.3f x mean), min %llu (%.3f x mean)\n", mean,
              static_cast<unsigned long long>(*hi), static_cast<double>(*hi) / mean,
              static_cast<unsigned long long>(*lo), static_cast<double>(*lo) / mean);
  std::printf("join:  %.5f%% of copies moved (ideal 1/(N+1) = %.5f%%), %llu moved onto a node other than the joiner\n",
              100.0 * static_cast<double>(total.join_moved) / copies, 100.0 / (nodes + 1),
              static_cast<unsigned long long>(total.join_stray));
  std::printf("leave: %.5f%% of copies moved (ideal 1/N = %.5f%%), %llu moved off a node other than the leaver\n",
              100.0 * static_cast<double>(total.leave_moved) / copies, 100.0 / nodes,
              static_cast<unsigned long long>(total.leave_stray));
  std::printf("zones: %llu shards with two copies in one zone (of %llu)\n",
              static_cast<unsigned long long>(total.shards_sharing_a_zone), static_cast<unsigned long long>(shards));
  for (uint32_t z = 0; z < zones && z < 32; ++z) {
    std::printf("  zone-%u: %llu copies (%.3f x mean)\n", z, static_cast<unsigned long long>(total.per_zone[z]),
                static_cast<double>(total.per_zone[z]) / (copies / zones));
  }
  return 0;
}
