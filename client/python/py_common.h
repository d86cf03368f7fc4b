// Shared by the pieces of the `_strata` extension module (client/python/).
//
// GIL: every call that may block on the network or on the staging ring
// releases the GIL, and no one-time initialisation runs with it held by a
// thread that could wait for another (numpy's C API is set up when the module
// is imported). Objects below hold no Python references, so they may be
// destroyed on any thread, with or without the GIL (a DLPack deleter runs
// wherever the consumer drops its tensor).
//
// Lifetimes: every object keeps alive what it uses. A Stream shares its
// Client's connection (std::shared_ptr), a Batch owns its buffers or its
// staging slot, and arrays, memoryviews and tensors made from a Batch keep
// the Batch's memory.
#pragma once

#include <google/protobuf/message.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "strata/batch.h"
#include "strata/client.h"
#include "strata/staging.h"

namespace google::protobuf {
class Message;
}

namespace strata::python {

namespace py = pybind11;

// Batches Python has dropped, kept for a plain stream to assemble its next
// batches into. A stream that reuses one Batch keeps its buffers mapped and
// swaps them with the parts it parses; one that assembles into a new Batch
// every step allocates (and the kernel zero-fills) a payload's worth of fresh
// pages per step, which cost the Python client more CPU than the rest of its
// work per batch. Holds at most `capacity` batches.
//
// Thread-safety: safe for concurrent use (handles die on any thread).
class BatchPool {
 public:
  explicit BatchPool(size_t capacity) : capacity_(capacity) {}
  // A spent batch (its contents are stale: Stream::Next starts it over), or an empty one.
  Batch Take();
  // Keeps `batch` for a later Take(), or frees it when the pool is full.
  void Give(Batch batch);

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::vector<Batch> spare_;
};

// What a Python Batch owns: a batch from a plain Stream, or a lease on a
// staging-ring slot. numpy arrays, memoryviews and DLPack tensors made from a
// batch keep this alive, so the memory they view lives as long as they do.
struct BatchHandle {
  BatchHandle() = default;
  BatchHandle(const BatchHandle&) = delete;
  BatchHandle& operator=(const BatchHandle&) = delete;
  // Hands a plain batch's buffers back to `pool`, if it has one.
  ~BatchHandle();

  Batch plain;         // plain streams
  StagedBatch staged;  // staged streams
  bool is_staged = false;
  std::shared_ptr<BatchPool> pool;  // plain streams: where `plain` goes when Python drops it

  const Batch& batch() const { return is_staged ? staged.batch() : plain; }
  // The payload in host memory: the batch's own buffer, or the slot's host buffer.
  const std::byte* host_payload() const;
  size_t payload_bytes() const { return is_staged ? staged.bytes() : plain.payload().size(); }
  bool on_device() const { return is_staged && staged.memory() == StagingMemory::kDevice; }
  // The payload where it lives: device memory when on_device().
  const std::byte* data() const { return on_device() ? staged.data() : host_payload(); }
  int device() const { return on_device() ? staged.device() : -1; }
};

// Gives up the GIL for a blocking call and takes it back at the end of the
// scope, as py::gil_scoped_release, except that a thread CPython ends on its
// way back (a daemon thread, while the interpreter finalizes) waits there
// until the process exits instead of aborting it (py_gil.cc says why). Use
// it, not py::gil_scoped_release, around every call that may block.
class GilReleased {
 public:
  GilReleased();
  ~GilReleased();
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;

 private:
  PyThreadState* const state_;
};

// Raises strata.Error (with .code, e.g. "NotFound") for a non-OK status.
[[noreturn]] void Raise(const Status& status);
inline void ThrowIfError(const Status& status) {
  if (!status.ok()) Raise(status);
}

// A protobuf message as a dict: every field, enums by name, maps as dicts,
// unset sub-messages as None.
py::dict ToDict(const google::protobuf::Message& message);
// Sets the fields named in `fields` (scalars, enums by name or number,
// repeated scalars, maps of scalars); ValueError for unknown names or bad values.
void FromDict(const py::dict& fields, google::protobuf::Message* message);

// A strata.Stream over `stream`, which keeps `client` (the connection the
// stream reads through) alive: plain when `staging` is null (a background
// thread pulling up to prefetch_depth batches ahead; none when it is 0), else
// through a staging ring opened with *staging (which logs the path it takes).
py::object MakePyStream(std::shared_ptr<Client> client, std::unique_ptr<Stream> stream, const StagingOptions* staging,
                        int prefetch_depth);

// Whether numpy could be imported (set once, when the module is imported):
// without it, Batch's arrays are memoryviews.
bool HaveNumpy();
// Imports numpy and sets up pybind11's numpy C API, if numpy is installed.
// REQUIRES: called once, from the module's initialisation.
void InitNumpy();

void BindErrors(py::module_& m);
void BindBatch(py::module_& m);
void BindStream(py::module_& m);
void BindClient(py::module_& m);

}  // namespace strata::python
