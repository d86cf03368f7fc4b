// strata.Batch: one rank's batch for one step. Zero-copy views:
// - the buffer protocol (memoryview(b), np.frombuffer(b, np.uint8)) and
//   b.payload: the payload in host memory, read-only;
// - b.ids, b.offsets, b.sizes: read-only numpy uint64 arrays over the batch
//   (read-only memoryviews of format 'Q' when numpy is not installed);
// - __dlpack__/__dlpack_device__ (torch.from_dlpack(b), b.torch()): a 1-D
//   uint8 tensor in the batch's memory, on the GPU for device-staged batches.
// Every view holds the batch's memory alive, even after the Batch object and
// its stream are gone.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "client/python/dlpack_abi.h"
#include "client/python/py_common.h"

namespace strata::python {

namespace {

using Handle = std::shared_ptr<BatchHandle>;

// Set once by InitNumpy, under the GIL, before any Batch exists.
bool have_numpy = false;

// A typed read-only view of part of a batch, for memoryview() when there is
// no numpy: it holds the batch's memory as long as the memoryview lives.
struct ArrayView {
  Handle handle;
  const void* data;
  py::ssize_t count;
  py::ssize_t item_size;
  std::string format;
};

// A capsule owning a reference to the handle: the base of numpy views.
py::capsule KeepAlive(const Handle& h) {
  return py::capsule(new Handle(h), [](void* p) { delete static_cast<Handle*>(p); });
}

template <typename T>
py::object ReadOnlyArray(const Handle& h, const T* data, size_t n) {
  if (!have_numpy) {
    py::object view =
        py::cast(ArrayView{h, data, static_cast<py::ssize_t>(n), sizeof(T), py::format_descriptor<T>::format()});
    PyObject* memoryview = PyMemoryView_FromObject(view.ptr());
    if (memoryview == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(memoryview);
  }
  py::array a(py::dtype::of<T>(), {static_cast<py::ssize_t>(n)}, {static_cast<py::ssize_t>(sizeof(T))}, data,
              KeepAlive(h));
  // Read-only as numpy's PyArray_CLEARFLAGS does it, without a Python call per array.
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

// A zero-length payload still needs a valid address for buffer consumers.
const std::byte kEmpty[1] = {};

size_t CheckIndex(const BatchHandle& h, py::ssize_t i) {
  const auto n = static_cast<py::ssize_t>(h.batch().size());
  const py::ssize_t k = i < 0 ? i + n : i;
  if (k < 0 || k >= n)
    throw py::index_error("sample index " + std::to_string(i) + " out of range for a batch of " + std::to_string(n));
  return static_cast<size_t>(k);
}

// A read-only memoryview of bytes [offset, offset + size) of the batch's host
// payload, viewing the Batch object's buffer (so the view keeps it alive).
py::object PayloadSlice(const py::object& self, size_t offset, size_t size) {
  py::memoryview whole(self);
  return whole[py::slice(static_cast<py::ssize_t>(offset), static_cast<py::ssize_t>(offset + size), 1)];
}

// DLPack: the managed tensor and what it keeps alive, freed by its deleter.
struct DLPackContext {
  Handle handle;
  int64_t shape[1];
  int64_t strides[1];
  DLManagedTensor managed;
};

void DeleteDLPack(DLManagedTensor* managed) { delete static_cast<DLPackContext*>(managed->manager_ctx); }

// A capsule nobody consumed still owns its tensor.
void DLPackCapsuleDestructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kDLTensorCapsuleName)) return;  // consumed: the consumer calls the deleter
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kDLTensorCapsuleName));
  if (managed != nullptr) managed->deleter(managed);
}

py::object ToDLPack(const Handle& h, const py::object& stream) {
  if (h->on_device() && !stream.is_none()) {
    // The array API's stream argument: the consumer's cudaStream_t as an
    // integer (1: legacy default, 2: per-thread default); -1: no wait.
    const auto s = stream.cast<int64_t>();
    if (s != -1) {
      Status waited;
      {
        GilReleased nogil;
        waited = h->staged.WaitOn(reinterpret_cast<void*>(static_cast<intptr_t>(s)));
      }
      ThrowIfError(waited);
    }
  }
  auto* ctx = new DLPackContext{h, {static_cast<int64_t>(h->payload_bytes())}, {1}, {}};
  DLTensor& t = ctx->managed.dl_tensor;
  // The consumer may write through the tensor: it changes only this batch's
  // own copy of the payload, which nobody else reads.
  t.data = const_cast<std::byte*>(h->payload_bytes() == 0 && !h->on_device() ? kEmpty : h->data());
  t.device = h->on_device() ? DLDevice{kDLCUDA, h->device()} : DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLUInt, 8, 1};
  t.shape = ctx->shape;
  t.strides = ctx->strides;
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = DeleteDLPack;
  PyObject* capsule = PyCapsule_New(&ctx->managed, kDLTensorCapsuleName, DLPackCapsuleDestructor);
  if (capsule == nullptr) {
    delete ctx;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

// A batch repeats a few labels (strata) many times: one str per distinct
// value, shared by the list's entries, so building the list allocates little
// and a dict or Counter over it hashes each distinct value once (a str caches
// its hash).
py::list Strings(const std::vector<std::string>& v) {
  PyObject* list = PyList_New(static_cast<py::ssize_t>(v.size()));
  if (list == nullptr) throw py::error_already_set();
  py::list out = py::reinterpret_steal<py::list>(list);
  // The distinct values seen, most recent first; a linear scan is quicker than
  // hashing for the few a batch has. Past kKeep values, new ones are not kept.
  constexpr size_t kKeep = 32;
  std::vector<std::pair<std::string_view, py::str>> made;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string_view value = v[i];
    PyObject* item = nullptr;
    for (const auto& [text, str] : made) {
      if (text == value) {
        item = str.inc_ref().ptr();
        break;
      }
    }
    if (item == nullptr) {
      py::str fresh(v[i]);
      item = fresh.inc_ref().ptr();
      if (made.size() < kKeep) made.emplace_back(value, std::move(fresh));
    }
    PyList_SET_ITEM(list, static_cast<py::ssize_t>(i), item);  // steals the reference taken above
  }
  return out;
}

// How many times each value occurs, as {str: int} in order of first
// occurrence: a batch's composition, counted without a Python str per entry.
py::dict Counts(const std::vector<std::string>& v) {
  std::vector<std::pair<std::string_view, uint64_t>> counts;
  std::unordered_map<std::string_view, size_t> index;  // value -> its entry in counts
  for (const std::string& value : v) {
    auto [it, fresh] = index.emplace(value, counts.size());
    if (fresh) counts.emplace_back(value, 0);
    ++counts[it->second].second;
  }
  py::dict out;
  for (const auto& [value, n] : counts) out[py::str(value.data(), value.size())] = n;
  return out;
}

}  // namespace

bool HaveNumpy() { return have_numpy; }

void InitNumpy() {
  try {
    py::module_::import("numpy");
  } catch (const py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
    return;  // numpy is optional: arrays become memoryviews
  }
  // pybind11 sets its numpy C API up in a function-local static on first use;
  // taken there from several threads, the first releases the GIL while it
  // imports and the others wait for the static holding it: a deadlock. Here
  // it runs once, before any other thread can reach it.
  py::detail::npy_api::get();
  have_numpy = true;
}

Batch BatchPool::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_.empty()) return Batch();
  Batch batch = std::move(spare_.back());
  spare_.pop_back();
  return batch;
}

void BatchPool::Give(Batch batch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_.size() < capacity_) spare_.push_back(std::move(batch));
}

BatchHandle::~BatchHandle() {
  if (pool != nullptr && !is_staged) pool->Give(std::move(plain));
}

const std::byte* BatchHandle::host_payload() const {
  if (is_staged) return staged.host_data();
  return reinterpret_cast<const std::byte*>(plain.payload().data());
}

void BindBatch(py::module_& m) {
  py::class_<ArrayView>(m, "_ArrayView", py::buffer_protocol(), "A read-only typed view (numpy absent).")
      .def_buffer([](ArrayView& v) {
        return py::buffer_info(const_cast<void*>(v.data == nullptr ? kEmpty : v.data), v.item_size, v.format, 1,
                               {v.count}, {v.item_size}, /*readonly=*/true);
      });
  py::class_<BatchHandle, Handle>(m, "Batch", py::buffer_protocol(), R"(One rank's batch for one step.

Sample i's payload is payload[offsets[i] : offsets[i] + sizes[i]]; its fields
(WebDataset style) lie back to back in that range in field_names(i) order.
Arrays and tensors made from a batch share its memory and keep it alive.)")
      .def_buffer([](BatchHandle& h) {
        const std::byte* p = h.payload_bytes() == 0 ? kEmpty : h.host_payload();
        // Exported read-only: the const_cast only fits the buffer_info signature.
        return py::buffer_info(const_cast<std::byte*>(p), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(h.payload_bytes())}, {py::ssize_t{1}}, /*readonly=*/true);
      })
      .def("__len__", [](const BatchHandle& h) { return h.batch().size(); })
      .def_property_readonly("epoch", [](const BatchHandle& h) { return h.batch().epoch(); })
      .def_property_readonly("step", [](const BatchHandle& h) { return h.batch().step(); })
      .def_property_readonly("rank", [](const BatchHandle& h) { return h.batch().rank(); })
      .def_property_readonly("dataset_version", [](const BatchHandle& h) { return h.batch().dataset_version(); })
      .def_property_readonly("steps_in_epoch", [](const BatchHandle& h) { return h.batch().steps_in_epoch(); })
      .def_property_readonly(
          "ids", [](const Handle& h) { return ReadOnlyArray(h, h->batch().ids().data(), h->batch().size()); },
          "Dense sample ids (numpy uint64, read-only, shares the batch's memory).")
      .def_property_readonly(
          "offsets", [](const Handle& h) { return ReadOnlyArray(h, h->batch().offsets().data(), h->batch().size()); },
          "Byte offset of each sample in the payload (numpy uint64).")
      .def_property_readonly(
          "sizes", [](const Handle& h) { return ReadOnlyArray(h, h->batch().sizes().data(), h->batch().size()); },
          "Payload bytes of each sample (numpy uint64).")
      .def_property_readonly("labels", [](const BatchHandle& h) { return Strings(h.batch().labels()); })
      .def(
          "label_counts", [](const BatchHandle& h) { return Counts(h.batch().labels()); },
          "{label: samples} in this batch, in order of first occurrence (what collections.Counter(batch.labels) "
          "gives, counted in C++).")
      .def(
          "stratum_counts", [](const BatchHandle& h) { return Counts(h.batch().strata()); },
          "{stratum key: samples} in this batch, as label_counts() (the composition a stratified sampler balances).")
      .def_property_readonly("strata", [](const BatchHandle& h) { return Strings(h.batch().strata()); })
      .def_property_readonly(
          "payload",
          [](const Handle& h) {
            const std::byte* p = h->payload_bytes() == 0 ? kEmpty : h->host_payload();
            return ReadOnlyArray(h, reinterpret_cast<const uint8_t*>(p), h->payload_bytes());
          },
          "The payload in host memory as a read-only numpy uint8 array (a memoryview without numpy; no copy).")
      .def_property_readonly("nbytes", &BatchHandle::payload_bytes)
      .def_property_readonly(
          "device",
          [](const BatchHandle& h) {
            return h.on_device() ? "cuda:" + std::to_string(h.device()) : std::string("cpu");
          },
          "Where __dlpack__ and torch() put the payload: 'cpu' or 'cuda:N'.")
      .def_property_readonly(
          "data_ptr", [](const BatchHandle& h) { return reinterpret_cast<uintptr_t>(h.data()); },
          "Address of the payload where it lives (device memory for 'cuda:N').")
      .def_property_readonly(
          "host_data_ptr", [](const BatchHandle& h) { return reinterpret_cast<uintptr_t>(h.host_payload()); },
          "Address of the payload in host memory.")
      .def(
          "sample",
          [](const py::object& self, py::ssize_t i) {
            const auto& h = self.cast<const BatchHandle&>();
            const size_t k = CheckIndex(h, i);
            return PayloadSlice(self, h.batch().offsets()[k], h.batch().sizes()[k]);
          },
          py::arg("i"), "Sample i's payload: a read-only memoryview into the batch (bytes(...) copies it).")
      .def(
          "field",
          [](const py::object& self, py::ssize_t i, const std::string& name) -> py::object {
            const auto& h = self.cast<const BatchHandle&>();
            const size_t k = CheckIndex(h, i);
            const std::string_view f = h.batch().field(k, name);
            if (f.data() == nullptr) return py::none();
            const auto offset = static_cast<size_t>(f.data() - h.batch().payload().data());
            return PayloadSlice(self, offset, f.size());
          },
          py::arg("i"), py::arg("name"), "Sample i's field `name` as a memoryview, or None.")
      .def(
          "field_names",
          [](const BatchHandle& h, py::ssize_t i) {
            const std::span<const std::string> names = h.batch().field_names(CheckIndex(h, i));
            return std::vector<std::string>(names.begin(), names.end());
          },
          py::arg("i"))
      .def(
          "wait",
          [](const BatchHandle& h) {
            if (!h.is_staged) return;
            Status s;
            {
              GilReleased nogil;
              s = h.staged.Wait();
            }
            ThrowIfError(s);
          },
          "Blocks until a device batch's copy has finished (no-op on the host).")
      .def(
          "__dlpack__", [](const Handle& h, const py::object& stream) { return ToDLPack(h, stream); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const BatchHandle& h) {
             return h.on_device() ? py::make_tuple(static_cast<int>(kDLCUDA), h.device())
                                  : py::make_tuple(static_cast<int>(kDLCPU), 0);
           })
      .def("__repr__", [](const BatchHandle& h) {
        return "<strata.Batch epoch=" + std::to_string(h.batch().epoch()) +
               " step=" + std::to_string(h.batch().step()) + " rank=" + std::to_string(h.batch().rank()) +
               " samples=" + std::to_string(h.batch().size()) + " bytes=" + std::to_string(h.payload_bytes()) +
               " device=" + (h.on_device() ? "cuda:" + std::to_string(h.device()) : std::string("cpu")) + ">";
      });
}

}  // namespace strata::python
