// strata-staging-bench: the staging ring's throughput beside a plain copy,
// measured in one run (out of ctest).
//
// With a CUDA device:
//   - host-to-device GB/s through the ring (a background thread copies each
//     batch into pinned memory and issues cudaMemcpyAsync), beside plain
//     cudaMemcpy from pinned memory of the same size;
//   - copy/compute overlap: the consumer runs a kernel of about one copy's
//     duration per batch on its own stream; overlap = (copy alone + compute
//     alone - both) / min(copy alone, compute alone), 1.0 when the copy of
//     batch k+1 hides entirely behind compute on batch k. Also with the copies
//     on the consumer's stream (own_copy_stream = false), where none is possible.
// Always: the host ring's GB/s beside a plain memcpy, the path without a GPU.
// Each ring figure is measured with one copy thread and, where --copy-threads
// (default: the ring's automatic count) is more, with that many: the mean of
// two runs each, in the order 1, N, N, 1.
//
//   strata-staging-bench [--batch-bytes 67108864] [--batches 50] [--prefetch 2] [--copy-threads N]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/batch_assembler.h"
#include "client/staging/parallel_copy.h"
#include "strata/staging.h"
#include "strata/v1/data.pb.h"
#ifdef STRATA_HAVE_CUDA
#include "client/examples/cuda_kernels.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// Batches of one sample of `bytes` bytes, produced without copying: the
// payload strings circulate between this stream's part and the ring's batches.
class SyntheticStream final : public strata::Stream {
 public:
  SyntheticStream(size_t bytes, uint64_t steps) : bytes_(bytes), steps_(steps) {
    part_.set_batch_size(1);
    part_.add_slots(0);
    part_.add_ids(0);
    part_.add_labels("x");
    part_.add_sizes(bytes);
  }
  strata::Status Next(strata::Batch* batch) override {
    if (step_ == steps_) return strata::Status::OutOfRange("end");
    part_.mutable_payload()->resize(bytes_);  // keeps its capacity after the first rounds
    part_.set_labels(0, "x");
    using strata::client_internal::BatchAssembler;
    BatchAssembler::Reset(batch, 0, step_, 0, 1, steps_, 1);
    if (!BatchAssembler::AddPart(batch, &part_)) return strata::Status::Internal("bad part");
    ++step_;
    return strata::Status::OK();
  }
  uint64_t steps_in_epoch() const override { return steps_; }
  uint64_t next_step() const override { return step_; }
  strata::ResumeToken resume_token() const override { return {}; }
  void Cancel() override {}

 private:
  const size_t bytes_;
  const uint64_t steps_;
  uint64_t step_ = 0;
  strata::v1::Batch part_;
};

struct Options {
  size_t batch_bytes = 64 << 20;
  uint64_t batches = 50;
  int prefetch = 2;
  int copy_threads = 0;  // 0: ParallelCopy::AutoThreads(), resolved in main
};

// The copy-thread counts each ring figure is measured with: 1, then
// o.copy_threads when that is more.
std::vector<int> CopyThreadCounts(const Options& o) {
  if (o.copy_threads > 1) return {1, o.copy_threads};
  return {1};
}

std::string Threads(int n) { return std::to_string(n) + (n == 1 ? " copy thread" : " copy threads"); }

// Seconds to stage every batch; `consume` runs on each (and may enqueue GPU work).
template <typename Consume>
double RunRing(const Options& o, strata::StagingOptions so, Consume consume) {
  so.prefetch_depth = o.prefetch;
  so.max_batch_bytes = o.batch_bytes;
  auto staged = strata::StagedStream::Open(std::make_unique<SyntheticStream>(o.batch_bytes, o.batches + 1), so);
  if (!staged.ok()) {
    std::fprintf(stderr, "error: %s\n", staged.status().ToString().c_str());
    std::exit(1);
  }
  strata::StagedBatch b;
  if (!(*staged)->Next(&b).ok()) std::exit(1);  // warm-up: the ring's buffers exist after it
  b.Wait().IgnoreError();
  const auto start = Clock::now();
  while ((*staged)->Next(&b).ok()) consume(b);
  b.Release();
  return Seconds(start);
}

// For each of CopyThreadCounts(o), the mean seconds of two RunRing calls,
// made in the order 1, N, N, 1 so that neither count gains from going second
// (on a noisy VM the second of two equal runs is often the faster).
template <typename Consume>
std::vector<double> RingSeconds(const Options& o, strata::StagingOptions so, Consume consume) {
  const std::vector<int> counts = CopyThreadCounts(o);
  std::vector<double> sum(counts.size(), 0.0);
  for (int round = 0; round < 2; ++round) {
    for (size_t k = 0; k < counts.size(); ++k) {
      const size_t i = round == 0 ? k : counts.size() - 1 - k;
      so.copy_threads = counts[i];
      sum[i] += RunRing(o, so, consume);
    }
  }
  for (double& s : sum) s /= 2;
  return sum;
}

double GBps(const Options& o, double seconds) {
  return static_cast<double>(o.batch_bytes) * static_cast<double>(o.batches) / seconds / 1e9;
}

// Seconds the synthetic source takes alone (it zero-fills each payload): the
// floor under every ring figure, printed so the ring's own cost is visible.
double SourceAlone(const Options& o) {
  SyntheticStream stream(o.batch_bytes, o.batches + 1);
  strata::Batch b;
  if (!stream.Next(&b).ok()) std::exit(1);
  const auto start = Clock::now();
  while (stream.Next(&b).ok()) {
  }
  return Seconds(start);
}

void HostFigures(const Options& o) {
  strata::StagingOptions so;
  so.prefer_device = false;
  std::printf("source alone (fills each payload):             %7.2f GB/s\n", GBps(o, SourceAlone(o)));
  const std::vector<double> rings = RingSeconds(o, so, [](const strata::StagedBatch&) {});
  std::vector<char> from(o.batch_bytes, 1), to(o.batch_bytes);
  const auto start = Clock::now();
  for (uint64_t i = 0; i < o.batches; ++i) {
    std::memcpy(to.data(), from.data(), o.batch_bytes);
    from[i % o.batch_bytes] = static_cast<char>(to[(i * 7) % o.batch_bytes] + 1);  // keep the copies live
  }
  const double plain = Seconds(start);
  std::printf("plain memcpy, same sizes:                      %7.2f GB/s\n", GBps(o, plain));
  for (size_t i = 0; i < rings.size(); ++i) {
    std::printf("host ring (copy into reused slot buffers):     %7.2f GB/s   ring/plain = %.2f   %s\n",
                GBps(o, rings[i]), plain / rings[i], Threads(CopyThreadCounts(o)[i]).c_str());
  }
}

#ifdef STRATA_HAVE_CUDA
int DeviceFigures(const Options& o) {
  using strata::examples::CudaCheck;
  auto check = [](const strata::Status& s) {
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  };
  void* pinned = nullptr;
  void* device = nullptr;
  check(CudaCheck(cudaHostAlloc(&pinned, o.batch_bytes, 0), "cudaHostAlloc"));
  check(CudaCheck(cudaMalloc(&device, o.batch_bytes), "cudaMalloc"));
  std::memset(pinned, 1, o.batch_bytes);
  check(CudaCheck(cudaMemcpy(device, pinned, o.batch_bytes, cudaMemcpyHostToDevice), "cudaMemcpy"));
  auto start = Clock::now();
  for (uint64_t i = 0; i < o.batches; ++i) {
    check(CudaCheck(cudaMemcpy(device, pinned, o.batch_bytes, cudaMemcpyHostToDevice), "cudaMemcpy"));
  }
  const double plain = Seconds(start);

  std::printf("plain cudaMemcpy from pinned, same sizes:      %7.2f GB/s\n", GBps(o, plain));
  auto kernels = strata::examples::CudaKernels::Load();
  check(kernels.status());
  cudaStream_t compute = nullptr;
  check(CudaCheck(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
  const std::vector<double> rings = RingSeconds(o, {}, [&](const strata::StagedBatch& b) { check(b.Wait()); });
  for (size_t k = 0; k < rings.size(); ++k) {
    const int threads = CopyThreadCounts(o)[k];
    const double ring = rings[k];
    strata::StagingOptions so;
    so.copy_threads = threads;
    std::printf("device ring (pinned + cudaMemcpyAsync):        %7.2f GB/s   ring/plain = %.2f   %s\n", GBps(o, ring),
                plain / ring, Threads(threads).c_str());

    // Overlap: a kernel of one copy's duration per batch on the consumer's stream.
    const auto spin_ns = static_cast<uint64_t>(ring / static_cast<double>(o.batches) * 1e9);
    start = Clock::now();
    for (uint64_t i = 0; i < o.batches; ++i) check(kernels->Spin(spin_ns, compute));
    check(CudaCheck(cudaStreamSynchronize(compute), "cudaStreamSynchronize"));
    const double compute_alone = Seconds(start);
    for (bool own_copy_stream : {true, false}) {
      so.cuda_stream = compute;
      so.own_copy_stream = own_copy_stream;
      const double both = RunRing(o, so, [&](const strata::StagedBatch&) { check(kernels->Spin(spin_ns, compute)); });
      start = Clock::now();
      check(CudaCheck(cudaStreamSynchronize(compute), "cudaStreamSynchronize"));
      const double total = both + Seconds(start);
      const double overlap = (ring + compute_alone - total) / std::min(ring, compute_alone);
      std::printf("  copy %.3fs + compute %.3fs -> together %.3fs: overlap %.2f (%s)\n", ring, compute_alone, total,
                  overlap, own_copy_stream ? "copies on the ring's stream" : "copies on the consumer's stream");
    }
  }
  cudaStreamDestroy(compute);
  cudaFree(device);
  cudaFreeHost(pinned);
  return 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"strata-staging-bench: staging ring throughput and copy/compute overlap beside plain copies"};
  app.add_option("--batch-bytes", o.batch_bytes, "payload bytes per batch")
      ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  app.add_option("--batches", o.batches, "batches per measurement")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app.add_option("--prefetch", o.prefetch, "prefetch depth")->check(CLI::Range(1, 64));
  app.add_option("--copy-threads", o.copy_threads,
                 "threads copying each payload into the ring, measured beside 1 (default 0: the ring's automatic "
                 "count, a quarter of the cores from 1 to 4)")
      ->check(CLI::Range(0, 64));
  CLI11_PARSE(app, argc, argv);
  if (o.copy_threads == 0) o.copy_threads = strata::staging_internal::ParallelCopy::AutoThreads();
  std::printf("%llu batches of %zu bytes, prefetch %d, %d cores\n", static_cast<unsigned long long>(o.batches),
              o.batch_bytes, o.prefetch, static_cast<int>(std::thread::hardware_concurrency()));
  std::fflush(stdout);  // before the rings log their line on stderr
  HostFigures(o);
  std::string path;
  if (strata::StagedStream::Probe(strata::StagingOptions{}, &path) != strata::StagingMemory::kDevice) {
    std::printf("device figures skipped: staging would use %s\n", path.c_str());
    return 0;
  }
#ifdef STRATA_HAVE_CUDA
  return DeviceFigures(o);
#else
  return 0;
#endif
}
