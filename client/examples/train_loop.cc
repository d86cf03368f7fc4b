// strata-train-example: a small data-parallel training loop fed by strata.
//
// W ranks (threads here; processes or GPUs in a real job) each open a stream
// for their share of every global batch, compute features from the payload
// bytes, and train a softmax classifier with synchronous SGD: after every step
// the ranks average their gradients, as DistributedDataParallel does. At the
// end of each epoch it checks that every sample arrived exactly once and
// prints a summary.
//
//   strata-train-example --server 127.0.0.1:7400 --dataset demo --world 2 --batch-size 64 --epochs 3
#include <signal.h>

#include <CLI/CLI.hpp>
#include <array>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/client.h"

namespace {

constexpr int kBins = 16;  // features: a histogram of payload byte values

struct Options {
  std::string server = "127.0.0.1:7400";  // one address, or several separated by commas
  int kill_during_epoch = -1;             // demo: SIGKILL kill_pid half-way through this epoch
  int kill_pid = 0;
  std::string dataset;
  uint32_t world = 2;
  uint32_t batch_size = 64;
  uint32_t epochs = 3;
  uint64_t seed = 0;
  double learning_rate = 5.0;
};

std::array<double, kBins> Features(std::string_view payload) {
  std::array<double, kBins> h{};
  for (unsigned char c : payload) h[c * kBins / 256] += 1.0;
  const double n = payload.empty() ? 1.0 : static_cast<double>(payload.size());
  for (double& v : h) v /= n;
  return h;
}

// Softmax regression: weights[class][bin] plus a bias per class.
struct Model {
  explicit Model(size_t classes) : w(classes, std::vector<double>(kBins + 1, 0.0)) {}
  std::vector<std::vector<double>> w;

  std::vector<double> Probabilities(const std::array<double, kBins>& x) const {
    std::vector<double> z(w.size());
    double top = -1e300;
    for (size_t c = 0; c < w.size(); ++c) {
      z[c] = w[c][kBins];
      for (int i = 0; i < kBins; ++i) z[c] += w[c][i] * x[i];
      top = std::max(top, z[c]);
    }
    double sum = 0;
    for (double& v : z) sum += (v = std::exp(v - top));
    for (double& v : z) v /= sum;
    return z;
  }
};

struct RankTotals {
  uint64_t samples = 0, bytes = 0, correct = 0;
  double loss = 0;
  std::vector<uint64_t> ids;
  std::map<std::string, uint64_t> labels;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"strata-train-example: data-parallel training of a small classifier on batches streamed by strata"};
  app.add_option("--server", o.server, "stratad address, or several (any node of a cluster), comma-separated");
  app.add_option("--kill-during-epoch", o.kill_during_epoch,
                 "demonstration: kill -9 the process --kill-pid half-way through this epoch");
  app.add_option("--kill-pid", o.kill_pid, "the process to kill (a stratad)");
  app.add_option("--dataset", o.dataset, "dataset name")->required();
  app.add_option("--world", o.world, "ranks (threads)")->check(CLI::Range(1u, 64u));
  app.add_option("--batch-size", o.batch_size, "samples per rank per step")->check(CLI::Range(1u, 1u << 16));
  app.add_option("--epochs", o.epochs, "epochs")->check(CLI::Range(1u, 1000u));
  app.add_option("--seed", o.seed, "seed of the epoch plan");
  app.add_option("--lr", o.learning_rate, "learning rate");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> seeds;
  for (size_t start = 0; start <= o.server.size();) {
    const size_t comma = std::min(o.server.find(',', start), o.server.size());
    if (comma > start) seeds.push_back(o.server.substr(start, comma - start));
    start = comma + 1;
  }
  auto client = strata::Client::Connect(seeds);
  if (!client.ok()) {
    std::cerr << "error: " << client.status().ToString() << "\n";
    return 1;
  }
  auto info = client.value()->Describe(o.dataset);
  if (!info.ok()) {
    std::cerr << "error: " << info.status().ToString() << "\n";
    return 1;
  }
  std::vector<std::string> classes;
  std::map<std::string, size_t> class_index;
  for (const auto& c : info->dataset.label_counts) {
    class_index[c.key] = classes.size();
    classes.push_back(c.key);
  }
  const uint64_t n = info->dataset.samples;
  std::printf("training on %s@%llu: %llu samples, %zu classes, %u ranks x batch %u, %u epochs\n", o.dataset.c_str(),
              static_cast<unsigned long long>(info->dataset.version), static_cast<unsigned long long>(n),
              classes.size(), o.world, o.batch_size, o.epochs);

  Model model(classes.size());
  std::vector<Model> grads(o.world, Model(classes.size()));
  std::vector<size_t> batch_sizes(o.world);
  std::mutex error_mu;
  strata::Status error;
  bool all_ok = true;

  for (uint32_t epoch = 0; epoch < o.epochs; ++epoch) {
    std::vector<RankTotals> totals(o.world);
    // Every rank computes its gradient, then one thread averages them into the
    // model before the next step: synchronous data-parallel SGD.
    auto apply = [&]() noexcept {
      size_t total = 0;
      for (size_t b : batch_sizes) total += b;
      if (total == 0) return;
      for (size_t c = 0; c < classes.size(); ++c) {
        for (int i = 0; i <= kBins; ++i) {
          double g = 0;
          for (uint32_t r = 0; r < o.world; ++r) g += grads[r].w[c][i];
          model.w[c][i] -= o.learning_rate * g / static_cast<double>(total);
        }
      }
    };
    std::barrier sync(static_cast<std::ptrdiff_t>(o.world), apply);
    const auto started = std::chrono::steady_clock::now();
    // Owner: this loop (joined below). Purpose: one thread per simulated
    // rank, synchronised per step by the barrier as data-parallel ranks are.
    std::vector<std::thread> ranks;
    for (uint32_t rank = 0; rank < o.world; ++rank) {
      ranks.emplace_back([&, rank] {
        strata::StreamOptions so;
        so.dataset = o.dataset + "@" + std::to_string(info->dataset.version);
        so.rank = rank;
        so.world = o.world;
        so.batch_size = o.batch_size;
        so.seed = o.seed;
        so.epoch = epoch;
        auto stream = client.value()->OpenStream(so);
        strata::Batch batch;
        RankTotals& t = totals[rank];
        for (;;) {
          strata::Status s = stream.ok() ? stream.value()->Next(&batch) : stream.status();
          if (!s.ok()) {
            if (s.code() != strata::Code::kOutOfRange) {
              std::lock_guard<std::mutex> lock(error_mu);
              error = s;
            }
            break;
          }
          Model& g = grads[rank];
          for (auto& row : g.w) std::fill(row.begin(), row.end(), 0.0);
          for (size_t i = 0; i < batch.size(); ++i) {
            const auto x = Features(batch.sample(i));
            const size_t y = class_index.at(batch.labels()[i]);
            const std::vector<double> p = model.Probabilities(x);
            t.loss -= std::log(std::max(p[y], 1e-12));
            t.correct += static_cast<uint64_t>(std::max_element(p.begin(), p.end()) - p.begin()) == y;
            for (size_t c = 0; c < classes.size(); ++c) {
              const double d = p[c] - (c == y ? 1.0 : 0.0);
              for (int k = 0; k < kBins; ++k) g.w[c][k] += d * x[k];
              g.w[c][kBins] += d;
            }
            t.ids.push_back(batch.ids()[i]);
            ++t.labels[batch.labels()[i]];
          }
          t.samples += batch.size();
          if (rank == 0 && static_cast<int>(epoch) == o.kill_during_epoch && o.kill_pid > 0 &&
              batch.step() == batch.steps_in_epoch() / 2) {
            std::printf("  (step %llu: kill -9 %d)\n", static_cast<unsigned long long>(batch.step()), o.kill_pid);
            std::fflush(stdout);
            kill(o.kill_pid, SIGKILL);
          }
          t.bytes += batch.payload_bytes();
          batch_sizes[rank] = batch.size();
          sync.arrive_and_wait();
        }
        // Leave the barrier for the remaining steps of the other ranks (a short
        // last batch may leave this rank with one step fewer).
        batch_sizes[rank] = 0;
        sync.arrive_and_drop();
      });
    }
    for (auto& t : ranks) t.join();
    if (!error.ok()) {
      std::cerr << "error: " << error.ToString() << "\n";
      return 1;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    RankTotals sum;
    std::vector<int> seen(n, 0);
    for (const auto& t : totals) {
      sum.samples += t.samples;
      sum.bytes += t.bytes;
      sum.correct += t.correct;
      sum.loss += t.loss;
      for (uint64_t id : t.ids) ++seen[id];
      for (const auto& [l, c] : t.labels) sum.labels[l] += c;
    }
    uint64_t once = 0;
    for (int s : seen) once += s == 1;
    const bool exactly_once = once == n && sum.samples == n;
    all_ok = all_ok && exactly_once;
    std::printf(
        "epoch %u: loss %.3f  accuracy %5.1f%%  %llu samples in %.2fs (%.0f samples/s, %.1f MB/s)  "
        "every sample exactly once: %s\n",
        epoch, sum.loss / static_cast<double>(std::max<uint64_t>(sum.samples, 1)),
        100.0 * static_cast<double>(sum.correct) / static_cast<double>(std::max<uint64_t>(sum.samples, 1)),
        static_cast<unsigned long long>(sum.samples), secs, static_cast<double>(sum.samples) / secs,
        static_cast<double>(sum.bytes) / secs / 1e6, exactly_once ? "yes" : "NO");
    if (epoch + 1 == o.epochs) {
      std::printf("per-label samples delivered in the last epoch (dataset count):\n");
      for (const auto& c : info->dataset.label_counts) {
        std::printf("  %-12s %8llu (%llu)\n", c.key.c_str(), static_cast<unsigned long long>(sum.labels[c.key]),
                    static_cast<unsigned long long>(c.count));
      }
    }
  }
  return all_ok ? 0 : 1;
}
