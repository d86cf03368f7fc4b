#include "client/cli/balance_report.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "client/cli/format.h"
#include "client/cli/plot_script.h"

extern char** environ;

namespace strata::cli {

namespace {

constexpr const char* kPython = "/usr/bin/python3";
constexpr size_t kPlotSteps = 100;  // batches drawn
constexpr size_t kPlotStrata = 10;  // largest strata drawn by name; the rest as "other"
constexpr size_t kHeatStrata = 30;  // strata in the deviation heat map

// Strata shown when there are too many: the largest and the smallest by share.
std::vector<size_t> RowsToShow(const std::vector<double>& shares, size_t max_rows, size_t* hidden) {
  std::vector<size_t> order(shares.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return shares[a] > shares[b]; });
  *hidden = 0;
  if (order.size() <= max_rows) return order;
  *hidden = order.size() - max_rows;
  std::vector<size_t> rows(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(max_rows / 2));
  rows.insert(rows.end(), order.end() - static_cast<std::ptrdiff_t>(max_rows - max_rows / 2), order.end());
  return rows;
}

std::string Deviation(double d) { return FormatFixed(d, 2); }

// Enough digits for rare strata: "20.0%", "1.25%", "0.050%".
std::string Share(double share) {
  const int decimals = share >= 0.1 ? 1 : share >= 0.01 ? 2 : 3;
  return FormatFixed(share * 100, decimals) + "%";
}

}  // namespace

std::vector<std::vector<uint64_t>> DistributedSamplerBatches(uint64_t n, uint32_t world, uint32_t batch_size,
                                                             uint64_t seed, uint64_t epoch, bool drop_last) {
  std::vector<uint64_t> indices(n);
  std::iota(indices.begin(), indices.end(), uint64_t{0});
  std::mt19937_64 rng(seed + epoch);  // torch: g.manual_seed(self.seed + self.epoch); randperm(n, generator=g)
  for (uint64_t i = n; i > 1; --i) {
    std::uniform_int_distribution<uint64_t> pick(0, i - 1);
    std::swap(indices[i - 1], indices[pick(rng)]);
  }
  // Not drop_last (the sampler's default): pad to a multiple of world by repeating the head.
  const uint64_t per_rank = (n + world - 1) / world;
  const uint64_t total = per_rank * world;
  for (uint64_t i = 0; indices.size() < total; ++i) indices.push_back(indices[i % n]);
  const uint64_t steps = drop_last ? per_rank / batch_size : (per_rank + batch_size - 1) / batch_size;
  std::vector<std::vector<uint64_t>> batches(steps);
  for (uint64_t k = 0; k < steps; ++k) {
    for (uint32_t r = 0; r < world; ++r) {
      // Rank r's samples are indices[r], indices[r + W], ...; its k-th batch is a run of them.
      for (uint64_t j = k * batch_size; j < std::min(per_rank, (k + 1) * batch_size); ++j) {
        batches[k].push_back(indices[r + j * world]);
      }
    }
  }
  return batches;
}

SamplerFigures Measure(const Compositions& batches, const std::vector<double>& shares) {
  const size_t strata = shares.size();
  SamplerFigures f;
  f.delivered.assign(strata, 0);
  f.max_deviation.assign(strata, 0);
  f.missing.assign(strata, 0);
  std::vector<uint64_t> count(strata);
  for (const auto& batch : batches) {
    std::fill(count.begin(), count.end(), 0);
    for (uint32_t s : batch) ++count[s];
    const double size = static_cast<double>(batch.size());
    bool lacking = false;
    for (size_t s = 0; s < strata; ++s) {
      const double target = size * shares[s];
      const double dev = std::fabs(static_cast<double>(count[s]) - target);
      f.delivered[s] += count[s];
      f.max_deviation[s] = std::max(f.max_deviation[s], dev);
      f.max_deviation_all = std::max(f.max_deviation_all, dev);
      if (target >= 1 && count[s] == 0) {
        ++f.missing[s];
        lacking = true;
      }
    }
    f.batches_missing += lacking;
    f.samples += batch.size();
    ++f.batches;
  }
  return f;
}

std::vector<uint32_t> FillUnseen(const std::vector<int64_t>& seen, const std::vector<uint64_t>& counts) {
  std::vector<uint64_t> left = counts;
  for (int64_t s : seen) {
    if (s >= 0 && static_cast<size_t>(s) < left.size() && left[static_cast<size_t>(s)] > 0)
      --left[static_cast<size_t>(s)];
  }
  std::vector<uint32_t> out(seen.size(), 0);
  size_t next = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (seen[i] >= 0) {
      out[i] = static_cast<uint32_t>(seen[i]);
      continue;
    }
    while (next < left.size() && left[next] == 0) ++next;
    if (next < left.size()) {
      out[i] = static_cast<uint32_t>(next);
      --left[next];
    }
  }
  return out;
}

BalanceReport MakeReport(std::string title, std::vector<std::string> strata, std::vector<uint64_t> counts,
                         std::vector<double> shares, Compositions ours, const std::vector<uint32_t>& stratum_of_id,
                         uint32_t world, uint32_t batch_size, uint64_t seed, uint64_t epoch, bool drop_last,
                         uint64_t max_batches) {
  BalanceReport r;
  r.title = std::move(title);
  r.strata = std::move(strata);
  r.shares = std::move(shares);
  const double n = static_cast<double>(stratum_of_id.size());
  for (uint64_t c : counts) r.natural.push_back(n > 0 ? static_cast<double>(c) / n : 0.0);
  r.ours = std::move(ours);
  for (const auto& batch : DistributedSamplerBatches(stratum_of_id.size(), world, batch_size, seed, epoch, drop_last)) {
    if (max_batches != 0 && r.distributed.size() == max_batches) break;
    std::vector<uint32_t> composition;
    composition.reserve(batch.size());
    for (uint64_t id : batch) composition.push_back(stratum_of_id[id]);
    r.distributed.push_back(std::move(composition));
  }
  r.ours_figures = Measure(r.ours, r.shares);
  r.distributed_figures = Measure(r.distributed, r.natural);
  return r;
}

void PrintReport(std::ostream& out, const BalanceReport& r, size_t max_rows) {
  const SamplerFigures& a = r.ours_figures;
  const SamplerFigures& b = r.distributed_figures;
  out << "balance report: " << r.title << "\n";
  out << "  beside torch DistributedSampler(shuffle=True) + DataLoader over the same labels, computed in-process\n";
  out << "  TARGET = share x samples; DEV = largest |count - batch size x share| in one global batch;\n";
  out << "  MISSING = global batches without the stratum although its target there is >= 1\n\n";
  using A = Table::Align;
  Table table({{"STRATUM"},
               {"SHARE", A::kRight},
               {"TARGET", A::kRight},
               {"DELIVERED", A::kRight},
               {"DS DELIVERED", A::kRight},
               {"DEV", A::kRight},
               {"DS DEV", A::kRight},
               {"MISSING", A::kRight},
               {"DS MISSING", A::kRight}});
  size_t hidden = 0;
  const std::vector<size_t> rows = RowsToShow(r.shares, max_rows, &hidden);
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t s = rows[i];
    if (hidden > 0 && i == max_rows / 2) {
      table.AddRow({"(" + FormatCount(hidden) + " more)", "", "", "", "", "", "", "", ""});
    }
    const double target = r.shares[s] * static_cast<double>(a.samples);
    table.AddRow({r.strata[s].empty() ? "(empty)" : r.strata[s], Share(r.shares[s]), FormatFixed(target, 1),
                  FormatCount(a.delivered[s]), FormatCount(b.delivered[s]), Deviation(a.max_deviation[s]),
                  Deviation(b.max_deviation[s]), FormatCount(a.missing[s]), FormatCount(b.missing[s])});
  }
  table.Print(out, "  ");
  out << "\n";
  Table summary({{""}, {"strata", A::kRight}, {"DistributedSampler", A::kRight}});
  summary.AddRow({"global batches", FormatCount(a.batches), FormatCount(b.batches)});
  summary.AddRow({"samples", FormatCount(a.samples), FormatCount(b.samples)});
  summary.AddRow({"largest per-batch deviation", Deviation(a.max_deviation_all), Deviation(b.max_deviation_all)});
  summary.AddRow({"batches lacking a stratum", FormatCount(a.batches_missing), FormatCount(b.batches_missing)});
  summary.Print(out, "  ");
}

Status WritePlot(const BalanceReport& r, const std::string& png) {
  if (access(kPython, X_OK) != 0) {
    return Status::FailedPrecondition(std::string("--plot needs ") + kPython +
                                      " with matplotlib (Debian: apt-get install python3-matplotlib)");
  }
  // The data: per-batch counts of the largest strata (the rest as "other"), and
  // per-batch deviation of the strata the table shows first.
  std::vector<size_t> order(r.shares.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return r.natural[x] > r.natural[y]; });
  const size_t named = std::min(order.size(), kPlotStrata);
  std::vector<int> slot(r.shares.size(), static_cast<int>(named));
  nlohmann::json data;
  data["title"] = r.title;
  for (size_t i = 0; i < named; ++i) {
    slot[order[i]] = static_cast<int>(i);
    data["keys"].push_back(r.strata[order[i]]);
  }
  if (order.size() > named) data["keys"].push_back("other (" + std::to_string(order.size() - named) + " strata)");
  size_t hidden = 0;
  const std::vector<size_t> heat = RowsToShow(r.shares, kHeatStrata, &hidden);
  for (size_t s : heat) data["heat_keys"].push_back(r.strata[s]);
  auto panel = [&](const Compositions& batches, const std::vector<double>& shares, const SamplerFigures& f) {
    nlohmann::json p;
    p["max_deviation"] = f.max_deviation_all;
    p["batches_missing"] = f.batches_missing;
    p["batches"] = f.batches;
    std::vector<uint64_t> count(shares.size());
    for (size_t k = 0; k < std::min(batches.size(), kPlotSteps); ++k) {
      std::fill(count.begin(), count.end(), 0);
      std::vector<uint64_t> stacked(data["keys"].size(), 0);
      for (uint32_t s : batches[k]) {
        ++count[s];
        ++stacked[static_cast<size_t>(slot[s])];
      }
      p["stacked"].push_back(stacked);
      std::vector<double> dev;
      for (size_t s : heat)
        dev.push_back(static_cast<double>(count[s]) - shares[s] * static_cast<double>(batches[k].size()));
      p["deviation"].push_back(dev);
    }
    return p;
  };
  data["strata"] = panel(r.ours, r.shares, r.ours_figures);
  data["distributed"] = panel(r.distributed, r.natural, r.distributed_figures);

  char tmp[] = "/tmp/strata-plot-XXXXXX";
  const int fd = mkstemp(tmp);
  if (fd < 0) return ErrnoStatus("cannot create a temporary file", errno);
  close(fd);
  {
    std::ofstream f(tmp);
    f << data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!f) {
      unlink(tmp);
      return Status::IOError(std::string("cannot write ") + tmp);
    }
  }
  std::string script(kPlotScript);
  std::vector<char*> argv = {
      const_cast<char*>(kPython), const_cast<char*>("-c"), script.data(), tmp, const_cast<char*>(png.c_str()), nullptr};
  pid_t pid;
  const int spawned = posix_spawn(&pid, kPython, nullptr, nullptr, argv.data(), environ);
  int wstatus = 0;
  if (spawned == 0) {
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  }
  unlink(tmp);
  if (spawned != 0) return ErrnoStatus(std::string("cannot run ") + kPython, spawned);
  const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  if (code == 3) {
    return Status::FailedPrecondition(std::string("--plot needs matplotlib for ") + kPython +
                                      " (Debian: apt-get install python3-matplotlib)");
  }
  if (code != 0) return Status::IOError("the plot script failed (exit status " + std::to_string(code) + ")");
  return Status::OK();
}

}  // namespace strata::cli
