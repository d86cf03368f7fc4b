// strata-device-train-example: a training loop on staged batches.
//
// Batches come through a StagedStream: with a CUDA device, each payload is in
// device memory when Next() returns it, ordered on the trainer's stream by the
// batch's event, and a kernel computes the features (byte histograms) there;
// the copy of the next batches overlaps it. Without CUDA or a device the same
// loop runs on host memory and says so. The model, a softmax classifier over
// the features, is trained on the host.
//
//   strata-device-train-example --server 127.0.0.1:7400 --dataset demo --batch-size 256 --epochs 3
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <vector>

#include "strata/client.h"
#include "strata/staging.h"
#ifdef STRATA_HAVE_CUDA
#include "client/examples/cuda_kernels.h"
#endif

namespace {

constexpr int kBins = 16;
using Features = std::array<double, kBins>;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string server = "127.0.0.1:7400";
  std::string dataset;
  uint32_t batch_size = 256;
  uint32_t epochs = 3;
  uint64_t seed = 0;
  int device = 0;
  int prefetch = 2;
  bool host = false;
  double learning_rate = 5.0;
};

// Softmax regression over the features, trained with plain SGD.
struct Model {
  explicit Model(size_t classes) : w(classes, std::vector<double>(kBins + 1, 0.0)) {}
  std::vector<std::vector<double>> w;

  // Returns the loss; adds 1 to *correct for a right prediction; accumulates the gradient.
  double Step(const Features& x, size_t y, std::vector<std::vector<double>>* grad, uint64_t* correct) const {
    std::vector<double> z(w.size());
    for (size_t c = 0; c < w.size(); ++c) {
      z[c] = w[c][kBins];
      for (int i = 0; i < kBins; ++i) z[c] += w[c][i] * x[i];
    }
    const double top = *std::max_element(z.begin(), z.end());
    double sum = 0;
    for (double& v : z) sum += (v = std::exp(v - top));
    for (double& v : z) v /= sum;
    *correct += static_cast<size_t>(std::max_element(z.begin(), z.end()) - z.begin()) == y;
    for (size_t c = 0; c < w.size(); ++c) {
      const double d = z[c] - (c == y ? 1.0 : 0.0);
      for (int i = 0; i < kBins; ++i) (*grad)[c][i] += d * x[i];
      (*grad)[c][kBins] += d;
    }
    return -std::log(std::max(z[y], 1e-12));
  }
};

// Features from a batch in host memory.
void HostFeatures(const strata::StagedBatch& b, std::vector<Features>* out) {
  const strata::Batch& batch = b.batch();
  out->assign(batch.size(), Features{});
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto* p = reinterpret_cast<const unsigned char*>(b.data()) + batch.offsets()[i];
    for (uint64_t k = 0; k < batch.sizes()[i]; ++k) (*out)[i][p[k] >> 4] += 1.0;
    for (double& v : (*out)[i]) v /= std::max<double>(1.0, static_cast<double>(batch.sizes()[i]));
  }
}

#ifdef STRATA_HAVE_CUDA
// Features computed on the device, on the trainer's stream, from the staged payload.
class DeviceFeatures {
 public:
  static strata::Result<DeviceFeatures> Create(cudaStream_t stream) {
    auto kernels = strata::examples::CudaKernels::Load();
    if (!kernels.ok()) return kernels.status();
    return DeviceFeatures(*kernels, stream);
  }

  strata::Status Compute(const strata::StagedBatch& b, std::vector<Features>* out) {
    using strata::examples::CudaCheck;
    const strata::Batch& batch = b.batch();
    const size_t n = batch.size();
    if (n > capacity_) STRATA_RETURN_IF_ERROR(Grow(n));
    const size_t index_bytes = n * sizeof(uint64_t);
    STRATA_RETURN_IF_ERROR(CudaCheck(
        cudaMemcpyAsync(offsets_, batch.offsets().data(), index_bytes, cudaMemcpyHostToDevice, stream_), "copy"));
    STRATA_RETURN_IF_ERROR(
        CudaCheck(cudaMemcpyAsync(sizes_, batch.sizes().data(), index_bytes, cudaMemcpyHostToDevice, stream_), "copy"));
    STRATA_RETURN_IF_ERROR(CudaCheck(cudaMemsetAsync(counts_, 0, n * kBins * sizeof(uint32_t), stream_), "memset"));
    // b.data() is device memory whose copy the stream already waits for (StagingOptions::cuda_stream).
    STRATA_RETURN_IF_ERROR(kernels_.Histogram(b.data(), offsets_, sizes_, counts_, static_cast<uint32_t>(n), stream_));
    STRATA_RETURN_IF_ERROR(CudaCheck(
        cudaMemcpyAsync(host_counts_, counts_, n * kBins * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_), "copy"));
    STRATA_RETURN_IF_ERROR(CudaCheck(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
    out->assign(n, Features{});
    for (size_t i = 0; i < n; ++i) {
      const double size = std::max<double>(1.0, static_cast<double>(batch.sizes()[i]));
      for (int k = 0; k < kBins; ++k) (*out)[i][k] = host_counts_[i * kBins + k] / size;
    }
    return strata::Status::OK();
  }

 private:
  DeviceFeatures(strata::examples::CudaKernels kernels, cudaStream_t stream) : kernels_(kernels), stream_(stream) {}

  // Buffers for n samples; freed with the process (the example runs one loop).
  strata::Status Grow(size_t n) {
    using strata::examples::CudaCheck;
    void* p = nullptr;
    STRATA_RETURN_IF_ERROR(CudaCheck(cudaMalloc(&p, n * sizeof(uint64_t)), "cudaMalloc"));
    offsets_ = static_cast<uint64_t*>(p);
    STRATA_RETURN_IF_ERROR(CudaCheck(cudaMalloc(&p, n * sizeof(uint64_t)), "cudaMalloc"));
    sizes_ = static_cast<uint64_t*>(p);
    STRATA_RETURN_IF_ERROR(CudaCheck(cudaMalloc(&p, n * kBins * sizeof(uint32_t)), "cudaMalloc"));
    counts_ = static_cast<uint32_t*>(p);
    STRATA_RETURN_IF_ERROR(CudaCheck(cudaHostAlloc(&p, n * kBins * sizeof(uint32_t), 0), "cudaHostAlloc"));
    host_counts_ = static_cast<uint32_t*>(p);
    capacity_ = n;
    return strata::Status::OK();
  }

  strata::examples::CudaKernels kernels_;
  cudaStream_t stream_;
  size_t capacity_ = 0;
  uint64_t* offsets_ = nullptr;
  uint64_t* sizes_ = nullptr;
  uint32_t* counts_ = nullptr;
  uint32_t* host_counts_ = nullptr;
};
#endif

int Fail(const strata::Status& s) {
  std::cerr << "error: " << s.ToString() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"strata-device-train-example: train on batches staged into GPU memory (host memory without one)"};
  app.add_option("--server", o.server, "stratad address");
  app.add_option("--dataset", o.dataset, "dataset name")->required();
  app.add_option("--batch-size", o.batch_size, "samples per step")->check(CLI::Range(1u, 1u << 16));
  app.add_option("--epochs", o.epochs, "epochs")->check(CLI::Range(1u, 1000u));
  app.add_option("--seed", o.seed, "seed of the epoch plan");
  app.add_option("--device", o.device, "CUDA device");
  app.add_option("--prefetch", o.prefetch, "batches staged ahead")->check(CLI::Range(1, 64));
  app.add_flag("--host", o.host, "stage in host memory even with a GPU");
  app.add_option("--lr", o.learning_rate, "learning rate");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // interleave in order with the staging log line on stderr

  auto client = strata::Client::Connect(o.server);
  if (!client.ok()) return Fail(client.status());
  auto info = (*client)->Describe(o.dataset);
  if (!info.ok()) return Fail(info.status());
  std::map<std::string, size_t> class_index;
  for (const auto& c : info->dataset.label_counts) class_index.emplace(c.key, class_index.size());
  Model model(class_index.size());

  strata::StagingOptions staging;
  staging.prefetch_depth = o.prefetch;
  staging.device = o.device;
  staging.prefer_device = !o.host;
  std::string path;
  const bool on_device = strata::StagedStream::Probe(staging, &path) == strata::StagingMemory::kDevice;
#ifdef STRATA_HAVE_CUDA
  cudaStream_t trainer_stream = nullptr;
  std::optional<DeviceFeatures> device_features;
  if (on_device) {
    if (cudaSetDevice(o.device) != cudaSuccess ||
        cudaStreamCreateWithFlags(&trainer_stream, cudaStreamNonBlocking) != cudaSuccess) {
      return Fail(strata::Status::Internal("cannot create a CUDA stream on device " + std::to_string(o.device)));
    }
    staging.cuda_stream = trainer_stream;
    auto f = DeviceFeatures::Create(trainer_stream);
    if (!f.ok()) return Fail(f.status());
    device_features.emplace(std::move(f).value());
  }
#endif
  std::printf("training on %s@%llu: %llu samples, %zu classes, batch %u, %u epochs; batches in %s\n", o.dataset.c_str(),
              static_cast<unsigned long long>(info->dataset.version),
              static_cast<unsigned long long>(info->dataset.samples), class_index.size(), o.batch_size, o.epochs,
              on_device ? "device memory" : "host memory");

  std::vector<Features> features;
  for (uint32_t epoch = 0; epoch < o.epochs; ++epoch) {
    strata::StreamOptions so;
    so.dataset = o.dataset + "@" + std::to_string(info->dataset.version);
    so.batch_size = o.batch_size;
    so.seed = o.seed;
    so.epoch = epoch;
    auto stream = (*client)->OpenStream(so);
    if (!stream.ok()) return Fail(stream.status());
    auto staged = strata::StagedStream::Open(std::move(stream).value(), staging);
    if (!staged.ok()) return Fail(staged.status());

    uint64_t samples = 0, bytes = 0, correct = 0;
    double loss = 0, waited = 0;
    const auto started = Clock::now();
    strata::StagedBatch b;
    for (;;) {
      const auto asked = Clock::now();
      strata::Status s = (*staged)->Next(&b);  // releases the previous batch
      waited += std::chrono::duration<double>(Clock::now() - asked).count();
      if (s.code() == strata::Code::kOutOfRange) break;
      if (!s.ok()) return Fail(s);
#ifdef STRATA_HAVE_CUDA
      if (b.memory() == strata::StagingMemory::kDevice) {
        strata::Status f = device_features->Compute(b, &features);
        if (!f.ok()) return Fail(f);
      } else {
        HostFeatures(b, &features);
      }
#else
      HostFeatures(b, &features);
#endif
      std::vector<std::vector<double>> grad(model.w.size(), std::vector<double>(kBins + 1, 0.0));
      for (size_t i = 0; i < features.size(); ++i) {
        loss += model.Step(features[i], class_index.at(b.batch().labels()[i]), &grad, &correct);
      }
      for (size_t c = 0; c < model.w.size(); ++c) {
        for (int k = 0; k <= kBins; ++k) {
          model.w[c][k] -= o.learning_rate * grad[c][k] / static_cast<double>(features.size());
        }
      }
      samples += b.batch().size();
      bytes += b.bytes();
    }
    const double secs = std::chrono::duration<double>(Clock::now() - started).count();
    std::printf(
        "epoch %u: loss %.3f  accuracy %5.1f%%  %llu samples in %.2fs (%.0f samples/s, %.1f MB/s)  "
        "waiting for data %.0f%% of the time  [%zu ring slots, %llu buffer allocations]\n",
        epoch, loss / static_cast<double>(std::max<uint64_t>(samples, 1)),
        100.0 * static_cast<double>(correct) / static_cast<double>(std::max<uint64_t>(samples, 1)),
        static_cast<unsigned long long>(samples), secs, static_cast<double>(samples) / secs,
        static_cast<double>(bytes) / secs / 1e6, 100.0 * waited / secs, (*staged)->slots(),
        static_cast<unsigned long long>((*staged)->buffer_allocations()));
  }
  return 0;
}
