// The staging ring on a CUDA device: payloads arrive intact in device memory,
// events order the copies, buffers are reused, large payloads split over copy
// threads. Built only with the CUDA toolkit; every test skips (with the
// reason) on a machine without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "strata/staging.h"
#include "tests/client/fake_stream.h"

namespace strata {
namespace {

using testing::FakePayload;
using testing::FakeStream;

class CudaStagingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string description;
    if (StagedStream::Probe(StagingOptions{}, &description) != StagingMemory::kDevice) {
      GTEST_SKIP() << "no CUDA device to stage into: " << description;
    }
  }

  // The device payload of `b`, copied back to the host.
  static std::string DeviceBytes(const StagedBatch& b) {
    std::string out(b.bytes(), '\0');
    EXPECT_EQ(cudaMemcpy(out.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

  static void ExpectIntact(const StagedBatch& b) {
    const std::string bytes = DeviceBytes(b);
    const Batch& batch = b.batch();
    for (uint32_t i = 0; i < batch.size(); ++i) {
      ASSERT_EQ(bytes.substr(batch.offsets()[i], batch.sizes()[i]), FakePayload(batch.step(), i, batch.sizes()[i]))
          << "step " << batch.step() << " sample " << i;
    }
  }
};

TEST_F(CudaStagingTest, PayloadsArriveInDeviceMemoryInOrder) {
  auto staged = StagedStream::Open(std::make_unique<FakeStream>(FakeStream::Options{.steps = 40, .batch_size = 16}));
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  EXPECT_EQ((*staged)->memory(), StagingMemory::kDevice);
  EXPECT_EQ((*staged)->description().rfind("CUDA device 0 (", 0), 0u) << (*staged)->description();
  StagedBatch b;
  uint64_t step = 0;
  while ((*staged)->Next(&b).ok()) {
    EXPECT_EQ(b.batch().step(), step++);
    EXPECT_EQ(b.memory(), StagingMemory::kDevice);
    EXPECT_EQ(b.device(), 0);
    EXPECT_NE(b.ready_event(), nullptr);
    EXPECT_NE(b.data(), b.host_data());
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, b.data()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, b.host_data()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost);  // pinned
    ASSERT_TRUE(b.Wait().ok());
    ExpectIntact(b);
  }
  EXPECT_EQ(step, 40u);
  EXPECT_EQ((*staged)->slots(), 3u);
  EXPECT_EQ((*staged)->buffer_allocations(), 6u);  // a pinned and a device buffer per slot
}

TEST_F(CudaStagingTest, LargeBatchesCopiedBySeveralThreadsArriveIntactOnTheDevice) {
  // About 5 MB a batch: every copy thread takes a piece of the pinned copy.
  FakeStream::Options fo{.steps = 16, .batch_size = 3};
  fo.sample_bytes = [](uint64_t step) { return size_t{1700001} + step * 4099; };
  StagingOptions o;
  o.copy_threads = 3;
  auto staged = StagedStream::Open(std::make_unique<FakeStream>(fo), o);
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  StagedBatch b;
  uint64_t n = 0;
  while ((*staged)->Next(&b).ok()) {
    ASSERT_TRUE(b.Wait().ok());
    ExpectIntact(b);
    ++n;
  }
  EXPECT_EQ(n, 16u);
}

TEST_F(CudaStagingTest, ACallerStreamWaitsForEachCopy) {
  cudaStream_t compute = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  for (bool own_copy_stream : {true, false}) {
    StagingOptions o;
    o.cuda_stream = compute;
    o.own_copy_stream = own_copy_stream;
    FakeStream::Options fo{.steps = 30, .batch_size = 8};
    fo.sample_bytes = [](uint64_t step) { return size_t{4096} + step * 512; };  // grows as it goes
    auto staged = StagedStream::Open(std::make_unique<FakeStream>(fo), o);
    ASSERT_TRUE(staged.ok()) << staged.status().ToString();
    StagedBatch b;
    std::vector<char> host;
    while ((*staged)->Next(&b).ok()) {
      // Enqueued on the caller's stream with no host wait: ordered by the batch's event.
      host.assign(b.bytes(), 0);
      ASSERT_EQ(cudaMemcpyAsync(host.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost, compute), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
      ASSERT_EQ(0, std::memcmp(host.data(), b.host_data(), b.bytes())) << "own_copy_stream " << own_copy_stream;
    }
  }
  cudaStreamDestroy(compute);
}

TEST_F(CudaStagingTest, HeldDeviceBatchesStayIntactWhileTheRingMovesOn) {
  auto staged = StagedStream::Open(std::make_unique<FakeStream>(FakeStream::Options{.steps = 12, .batch_size = 4}));
  ASSERT_TRUE(staged.ok());
  std::vector<StagedBatch> held(6);
  for (auto& b : held) ASSERT_TRUE((*staged)->Next(&b).ok());
  std::set<const std::byte*> buffers;
  for (auto& b : held) {
    ASSERT_TRUE(b.Wait().ok());
    ExpectIntact(b);
    buffers.insert(b.data());
  }
  EXPECT_EQ(buffers.size(), held.size());
  staged->reset();  // held batches keep their device memory
  for (auto& b : held) ExpectIntact(b);
}

}  // namespace
}  // namespace strata
