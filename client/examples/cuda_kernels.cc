// The PTX of CudaKernels, hand-written and checked with ptxas (sm_75 and sm_90).
#include "client/examples/cuda_kernels.h"

#ifdef STRATA_HAVE_CUDA

#include <string>

namespace strata::examples {

namespace {

constexpr const char* kPtx = R"PTX(
.version 7.0
.target sm_75
.address_size 64

// counts[i * 16 + (byte >> 4)] += 1 for every byte of sample i; one thread per sample.
.visible .entry strata_histogram(
    .param .u64 payload_param,
    .param .u64 offsets_param,
    .param .u64 sizes_param,
    .param .u64 counts_param,
    .param .u32 n_param)
{
    .reg .pred  %p<3>;
    .reg .b32   %r<8>;
    .reg .b64   %rd<16>;

    ld.param.u64    %rd1, [payload_param];
    ld.param.u64    %rd2, [offsets_param];
    ld.param.u64    %rd3, [sizes_param];
    ld.param.u64    %rd4, [counts_param];
    ld.param.u32    %r1, [n_param];
    cvta.to.global.u64  %rd1, %rd1;
    cvta.to.global.u64  %rd2, %rd2;
    cvta.to.global.u64  %rd3, %rd3;
    cvta.to.global.u64  %rd4, %rd4;
    mov.u32         %r2, %ctaid.x;
    mov.u32         %r3, %ntid.x;
    mov.u32         %r4, %tid.x;
    mad.lo.u32      %r5, %r2, %r3, %r4;
    setp.ge.u32     %p1, %r5, %r1;
    @%p1 bra        DONE;
    mul.wide.u32    %rd5, %r5, 8;
    add.u64         %rd6, %rd2, %rd5;
    ld.global.u64   %rd7, [%rd6];
    add.u64         %rd8, %rd3, %rd5;
    ld.global.u64   %rd9, [%rd8];
    add.u64         %rd10, %rd1, %rd7;
    add.u64         %rd11, %rd10, %rd9;
    mul.wide.u32    %rd12, %r5, 64;
    add.u64         %rd13, %rd4, %rd12;
LOOP:
    setp.ge.u64     %p2, %rd10, %rd11;
    @%p2 bra        DONE;
    ld.global.u8    %r6, [%rd10];
    shr.u32         %r7, %r6, 4;
    mul.wide.u32    %rd14, %r7, 4;
    add.u64         %rd15, %rd13, %rd14;
    red.global.add.u32  [%rd15], 1;
    add.u64         %rd10, %rd10, 1;
    bra             LOOP;
DONE:
    ret;
}

// Keeps the stream busy for `ns` nanoseconds: a stand-in for a training step's kernels.
.visible .entry strata_spin(
    .param .u64 ns_param)
{
    .reg .pred  %p<2>;
    .reg .b64   %rd<5>;

    ld.param.u64    %rd1, [ns_param];
    mov.u64         %rd2, %globaltimer;
SPIN:
    mov.u64         %rd3, %globaltimer;
    sub.u64         %rd4, %rd3, %rd2;
    setp.lt.u64     %p1, %rd4, %rd1;
    @%p1 bra        SPIN;
    ret;
}
)PTX";

}  // namespace

Status CudaCheck(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return Status::OK();
  return Status::Internal(std::string("CUDA ") + call + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

Result<CudaKernels> CudaKernels::Load() {
  cudaLibrary_t library = nullptr;  // loaded for the life of the process
  STRATA_RETURN_IF_ERROR(
      CudaCheck(cudaLibraryLoadData(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0), "cudaLibraryLoadData"));
  CudaKernels k;
  STRATA_RETURN_IF_ERROR(
      CudaCheck(cudaLibraryGetKernel(&k.histogram_, library, "strata_histogram"), "cudaLibraryGetKernel"));
  STRATA_RETURN_IF_ERROR(CudaCheck(cudaLibraryGetKernel(&k.spin_, library, "strata_spin"), "cudaLibraryGetKernel"));
  return k;
}

Status CudaKernels::Histogram(const void* payload, const uint64_t* offsets, const uint64_t* sizes, uint32_t* counts,
                              uint32_t n, cudaStream_t stream) const {
  if (n == 0) return Status::OK();
  void* args[] = {&payload, &offsets, &sizes, &counts, &n};
  const unsigned threads = 128;
  const dim3 grid((n + threads - 1) / threads), block(threads);
  // A cudaKernel_t may be passed as the function of cudaLaunchKernel.
  return CudaCheck(cudaLaunchKernel(reinterpret_cast<const void*>(histogram_), grid, block, args, 0, stream),
                   "cudaLaunchKernel");
}

Status CudaKernels::Spin(uint64_t ns, cudaStream_t stream) const {
  void* args[] = {&ns};
  return CudaCheck(cudaLaunchKernel(reinterpret_cast<const void*>(spin_), dim3(1), dim3(1), args, 0, stream),
                   "cudaLaunchKernel");
}

}  // namespace strata::examples

#endif  // STRATA_HAVE_CUDA
