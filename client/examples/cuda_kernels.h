// Two small kernels for the device example and the staging benchmark, kept as
// PTX text that the CUDA driver compiles when it is loaded: the build needs
// the CUDA runtime headers and library only, never nvcc.
#pragma once

#ifdef STRATA_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"

namespace strata::examples {

class CudaKernels {
 public:
  // Loads the kernels for the current device. Internal on a CUDA error.
  static Result<CudaKernels> Load();

  // counts[i * 16 + (byte >> 4)] += 1 for each byte of sample i, where sample
  // i is payload[offsets[i], offsets[i] + sizes[i]). Device pointers; counts
  // (n * 16 values) must be zeroed first. Enqueued on `stream`.
  Status Histogram(const void* payload, const uint64_t* offsets, const uint64_t* sizes, uint32_t* counts, uint32_t n,
                   cudaStream_t stream) const;
  // Occupies `stream` for `ns` nanoseconds, as a training step's kernels would.
  Status Spin(uint64_t ns, cudaStream_t stream) const;

 private:
  cudaKernel_t histogram_ = nullptr;
  cudaKernel_t spin_ = nullptr;
};

// OK, or Internal naming the call and the CUDA error.
Status CudaCheck(cudaError_t err, const char* call);

}  // namespace strata::examples

#endif  // STRATA_HAVE_CUDA
