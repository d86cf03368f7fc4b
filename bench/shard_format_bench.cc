// Shard format throughput: ~200 MiB of records of one size, written and read
// back with verification. Each case runs beside a peer that moves the same
// bytes with no format (plain write()+fsync; one XXH3 pass over the mapping),
// and the ratio of their times is printed at the end.
//
//   shard_format_bench [--benchmark_filter=...]   (files go to $TMPDIR or /tmp)
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "common/checksum.h"
#include "server/storage/shard_format.h"

namespace strata {
namespace {

constexpr uint64_t kTotalBytes = uint64_t{200} << 20;

const std::string& BenchDir() {
  static const std::string dir = [] {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/strata-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    return tmpl;
  }();
  return dir;
}

// Random bytes that records take their fields from, at varying offsets.
const std::string& Pool() {
  static const std::string pool = [] {
    std::mt19937_64 rng(1);
    std::string s((size_t{4} << 20), '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  }();
  return pool;
}

std::string_view Field(uint64_t i, size_t size) {
  return std::string_view(Pool()).substr((i * 4099) % (2 << 20), size);
}

void WriteShardFile(const std::string& path, size_t record_bytes) {
  auto writer = ShardWriter::Create(path, {"bench", 1, 0, 0});
  if (!writer.ok()) std::abort();
  v1::RecordHeader header;
  header.set_label("label");
  header.add_field_names("data");
  header.add_field_sizes(record_bytes);
  for (uint64_t i = 0; i < kTotalBytes / record_bytes; ++i) {
    header.set_id(i);
    header.set_key("sample-" + std::to_string(i));
    std::string_view field = Field(i, record_bytes);
    if (!(*writer)->Append(header, std::span(&field, 1)).ok()) std::abort();
  }
  if (!(*writer)->Finish().ok()) std::abort();
}

void BM_ShardWrite(benchmark::State& state) {
  const auto record_bytes = static_cast<size_t>(state.range(0));
  const std::string path = BenchDir() + "/write";
  for (auto _ : state) {
    WriteShardFile(path, record_bytes);
    state.PauseTiming();
    std::filesystem::remove(path);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTotalBytes));
}

void BM_RawWrite(benchmark::State& state) {
  const auto record_bytes = static_cast<size_t>(state.range(0));
  const std::string path = BenchDir() + "/raw";
  const size_t chunk = std::max(record_bytes, size_t{1} << 20);
  for (auto _ : state) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    for (uint64_t done = 0; done < kTotalBytes; done += chunk) {
      if (write(fd, Pool().data() + done % (2 << 20), chunk) != static_cast<ssize_t>(chunk)) std::abort();
    }
    if (fsync(fd) != 0 || close(fd) != 0) std::abort();
    state.PauseTiming();
    std::filesystem::remove(path);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTotalBytes));
}

const std::string& ReadFixture(size_t record_bytes) {
  static std::map<size_t, std::string> paths;
  auto [it, inserted] = paths.try_emplace(record_bytes, BenchDir() + "/read-" + std::to_string(record_bytes));
  if (inserted) WriteShardFile(it->second, record_bytes);
  return it->second;
}

void BM_ShardRead(benchmark::State& state) {
  const std::string& path = ReadFixture(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    auto reader = ShardReader::Open(path);
    if (!reader.ok()) std::abort();
    uint64_t bytes = 0;
    RecordView view;
    for (uint64_t i = 0; i < (*reader)->num_records(); ++i) {
      if (!(*reader)->Read(i, &view).ok()) std::abort();
      bytes += view.field(0).size();
    }
    if (bytes != kTotalBytes / state.range(0) * state.range(0)) std::abort();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTotalBytes));
}

void BM_RawRead(benchmark::State& state) {
  const std::string& path = ReadFixture(static_cast<size_t>(state.range(0)));
  const auto size = static_cast<size_t>(std::filesystem::file_size(path));
  for (auto _ : state) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    benchmark::DoNotOptimize(Checksum64(map, size));
    munmap(map, size);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kTotalBytes));
}

#define SHARD_CASES(fn) \
  BENCHMARK(fn)->Arg(1 << 10)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2)
SHARD_CASES(BM_RawWrite);
SHARD_CASES(BM_ShardWrite);
SHARD_CASES(BM_RawRead);
SHARD_CASES(BM_ShardRead);

// Console output, plus each Shard case's time over its Raw peer's at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) times_[run.benchmark_name()] = run.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
  void PrintRatios() const {
    for (const auto& [name, time] : times_) {
      const size_t at = name.find("Shard");
      if (at == std::string::npos) continue;
      auto peer = times_.find(std::string(name).replace(at, 5, "Raw"));
      if (peer == times_.end()) continue;
      std::printf("%-40s %.2fx the time of %s\n", name.c_str(), time / peer->second, peer->first.c_str());
    }
  }

 private:
  std::map<std::string, double> times_;
};

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  strata::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  std::filesystem::remove_all(strata::BenchDir());
  benchmark::Shutdown();
  return 0;
}
