// The DLPack C ABI (dmlc/dlpack, unversioned DLManagedTensor: what
// torch.from_dlpack and numpy.from_dlpack of our era consume), declared here
// from the specification so the build needs no dlpack package. Only the
// members strata fills are named; layouts match the specification exactly.
#pragma once

#include <cstdint>

namespace strata::python {

enum DLDeviceTypeCode : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
};

struct DLDevice {
  int32_t device_type;  // DLDeviceTypeCode
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLUInt = 1,
};

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; nullptr means compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// Capsule names the protocol fixes: the producer's, and the consumer's once
// it has taken ownership (it then calls the deleter itself).
inline constexpr const char* kDLTensorCapsuleName = "dltensor";
inline constexpr const char* kUsedDLTensorCapsuleName = "used_dltensor";

}  // namespace strata::python
