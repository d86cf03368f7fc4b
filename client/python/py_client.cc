// strata.Client: a connection to a stratad; opens streams, runs the admin
// calls (list, describe, status, delete) and ingests samples from Python.
//
// Thread-safety: a Client may be used from several Python threads.
#include <google/protobuf/util/message_differencer.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "client/proto_convert.h"
#include "client/python/py_common.h"
#include "strata/client.h"
#include "strata/resume_token.h"
#include "strata/staging.h"

namespace strata::python {

namespace {

// An optional argument as T: TypeError naming the parameter, not pybind11's
// "Unable to cast Python instance" RuntimeError, for a value of another type
// or out of T's range (a negative step, 10**30).
template <class T>
T Arg(const py::object& value, const char* name) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(name) + " must be " +
                         (std::is_same_v<T, bool> ? std::string("True or False")
                                                  : "an int from " + std::to_string(std::numeric_limits<T>::min()) +
                                                        " to " + std::to_string(std::numeric_limits<T>::max())) +
                         ", not " + std::string(py::repr(value)));
  }
}

// How a stream's batches reach the caller, from the `device` argument:
// None: straight from the network, no staging; "cpu": a host staging ring
// (background prefetch); "cuda", "cuda:N" or N: a staging ring on GPU N, or
// host memory with a log line saying why when there is none. copy_threads
// (StagingOptions::copy_threads) needs a ring: with device None, only 0.
std::optional<StagingOptions> StagingFor(const py::object& device, int prefetch_depth, const py::object& cuda_stream,
                                         int copy_threads = 0) {
  if (device.is_none()) {
    if (copy_threads != 0) throw py::value_error("copy_threads needs a staging ring: pass device='cpu' or 'cuda'");
    // As a ring's (1..64), and 0: no background thread.
    if (prefetch_depth < 0 || prefetch_depth > 64) {
      throw py::value_error("prefetch_depth must be 0 to 64, not " + std::to_string(prefetch_depth));
    }
    return std::nullopt;
  }
  StagingOptions o;
  o.prefetch_depth = prefetch_depth;
  o.copy_threads = copy_threads;
  if (py::isinstance<py::int_>(device)) {
    o.device = Arg<int>(device, "device");
  } else {
    const std::string d = py::str(device);
    if (d == "cpu") {
      o.prefer_device = false;
    } else if (d == "cuda") {
      o.device = 0;
    } else if (d.rfind("cuda:", 0) == 0) {
      try {
        o.device = std::stoi(d.substr(5));
      } catch (const std::exception&) {
        throw py::value_error("device must be None, 'cpu', 'cuda', 'cuda:N' or an int, not '" + d + "'");
      }
    } else {
      throw py::value_error("device must be None, 'cpu', 'cuda', 'cuda:N' or an int, not '" + d + "'");
    }
  }
  if (o.device < 0) throw py::value_error("device must be a GPU ordinal, 0 or more, not " + std::to_string(o.device));
  if (!cuda_stream.is_none()) {
    o.cuda_stream = reinterpret_cast<void*>(static_cast<intptr_t>(Arg<int64_t>(cuda_stream, "cuda_stream")));
  }
  return o;
}

// A sampler from "shuffle" or a dict with the wire's field names.
SamplerSpec SamplerFrom(const py::object& sampler) {
  v1::SamplerSpec spec;
  if (sampler.is_none()) return {};
  if (py::isinstance<py::str>(sampler)) {
    const std::string name = sampler.cast<std::string>();
    v1::SamplerSpec::Kind kind;
    if (!v1::SamplerSpec::Kind_Parse(py::str(sampler).attr("upper")().cast<std::string>(), &kind)) {
      throw py::value_error("sampler must be 'shuffle', 'stratified', 'weighted' or a dict, not '" + name + "'");
    }
    spec.set_kind(kind);
  } else if (py::isinstance<py::dict>(sampler)) {
    FromDict(sampler.cast<py::dict>(), &spec);
  } else {
    throw py::type_error(
        "sampler must be None, 'shuffle', 'stratified', 'weighted' or a dict of SamplerSpec fields, "
        "not " +
        std::string(py::repr(sampler)));
  }
  return client_internal::FromProto(spec);
}

std::string BytesOf(const py::handle& value) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  PyObject* bytes = PyBytes_FromObject(value.ptr());  // bytes, bytearray, memoryview, numpy...
  if (bytes == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::bytes>(bytes);
}

// Keys, labels, attribute names and values, field names: str, or bytes that
// are UTF-8 (decoded). Anything else, None included, is InvalidArgument:
// str(None) would store the text "None" and str(b'cat') the text "b'cat'".
std::string TextOf(const py::handle& value, const std::string& what) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::bytes>(value)) {
    std::string bytes = py::reinterpret_borrow<py::bytes>(value);
    PyObject* text = PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "strict");
    if (text == nullptr) {
      PyErr_Clear();
      Raise(Status::InvalidArgument(what + " is bytes that are not UTF-8 text"));
    }
    Py_DECREF(text);
    return bytes;
  }
  if (value.is_none()) {
    Raise(Status::InvalidArgument(what + " is None: leave it out instead (a sample without a label, or "
                                         "without that attribute)"));
  }
  Raise(Status::InvalidArgument(what + " must be str (or UTF-8 bytes), not " +
                                std::string(Py_TYPE(value.ptr())->tp_name)));
}

// A sample from a dict {"key", "label", "fields": {name: bytes}, "attributes": {k: v}}
// or a tuple (key, label, fields).
Sample SampleFrom(const py::handle& item) {
  Sample s;
  py::object fields;
  if (py::isinstance<py::dict>(item)) {
    py::dict d = py::reinterpret_borrow<py::dict>(item);
    for (const auto& [k, v] : d) {
      const std::string key = py::str(k);
      if (key == "key") {
        s.key = TextOf(v, "a sample's key");
      } else if (key == "label") {
        s.label = TextOf(v, "the label of a sample");
      } else if (key == "fields") {
        fields = py::reinterpret_borrow<py::object>(v);
      } else if (key == "attributes") {
        if (!py::isinstance<py::dict>(v)) Raise(Status::InvalidArgument("a sample's attributes must be a dict"));
        for (const auto& [ak, av] : py::reinterpret_borrow<py::dict>(v)) {
          const std::string name = TextOf(ak, "an attribute name");
          s.attributes[name] = TextOf(av, "attribute '" + name + "'");
        }
      } else {
        throw py::value_error("a sample dict has keys key, label, fields, attributes; not '" + key + "'");
      }
    }
  } else {
    if (!py::isinstance<py::tuple>(item) && !py::isinstance<py::list>(item)) {
      throw py::type_error(
          "a sample is a dict {key, label, fields, attributes} or a tuple (key, label, "
          "{field: bytes}), not " +
          std::string(py::repr(item)));
    }
    py::tuple t = py::reinterpret_borrow<py::object>(item).cast<py::tuple>();
    if (t.size() != 3) throw py::value_error("a sample tuple is (key, label, {field: bytes})");
    s.key = TextOf(t[0], "a sample's key");
    s.label = TextOf(t[1], "the label of sample '" + s.key + "'");
    fields = t[2];
  }
  if (fields.is_none() || !py::isinstance<py::dict>(fields)) {
    throw py::value_error("sample '" + s.key + "' needs fields: a dict of name -> bytes");
  }
  for (const auto& [name, data] : fields.cast<py::dict>()) {
    s.fields.push_back({TextOf(name, "a field name of sample '" + s.key + "'"), BytesOf(data)});
  }
  return s;
}

class PyClient {
 public:
  PyClient(const std::string& address, int64_t connect_timeout_ms, const std::string& token, const std::string& tls_ca,
           const std::string& tls_cert, const std::string& tls_key, const std::string& zone, int receive_window) {
    if (receive_window < 0) throw py::value_error("receive_window must be 0 (gRPC's own) or a number of bytes");
    ClientOptions o;
    o.zone = zone;
    o.receive_window_bytes = receive_window;
    o.connect_timeout_ms = connect_timeout_ms;
    o.token = token;
    o.tls_ca_file = tls_ca;
    o.tls_cert_file = tls_cert;
    o.tls_key_file = tls_key;
    // "host:port", or several, comma-separated: the first that answers (any
    // node of a cluster will do), as the CLI's --server.
    std::vector<std::string> seeds;
    for (size_t at = 0; at <= address.size();) {
      const size_t comma = std::min(address.find(',', at), address.size());
      if (comma > at) seeds.push_back(address.substr(at, comma - at));
      at = comma + 1;
    }
    if (seeds.empty()) throw py::value_error("address must be \"host:port\" (or several, comma-separated)");
    Result<std::unique_ptr<Client>> c = Status::Unavailable("not connected");
    {
      GilReleased nogil;
      c = seeds.size() == 1 ? Client::Connect(seeds[0], o) : Client::Connect(seeds, o);
    }
    ThrowIfError(c.status());
    client_ = std::move(c).value();
  }

  const std::string& address() const { return client_->address(); }
  int receive_window() const { return client_->receive_window_bytes(); }

  py::list List(bool include_unsealed) {
    auto r = Call([&] { return client_->ListDatasets(include_unsealed); });
    py::list out;
    for (const auto& d : r) out.append(ToDict(client_internal::ToProto(d)));
    return out;
  }
  py::dict Describe(const std::string& dataset) {
    return ToDict(client_internal::ToProto(Call([&] { return client_->Describe(dataset); })));
  }
  py::dict Delete(const std::string& dataset, bool abort_ingest) {
    DeleteResult r = Call([&] { return client_->DeleteVersion(dataset, abort_ingest); });
    v1::DeleteVersionReply reply;
    *reply.mutable_dataset() = client_internal::ToProto(r.dataset);
    for (const auto& n : r.nodes_told) reply.add_nodes_told(n);
    for (const auto& n : r.nodes_pending) reply.add_nodes_pending(n);
    return ToDict(reply);
  }
  py::dict GetStatus() {
    return ToDict(client_internal::ToProto(Call([&] { return client_->GetStatus(); })));
  }

  py::object OpenStream(const std::string& dataset, uint32_t batch_size, uint32_t rank, uint32_t world, uint64_t seed,
                        uint64_t epoch, uint64_t start_step, uint64_t max_steps, bool drop_last,
                        const py::object& sampler, const py::object& device, int prefetch_depth,
                        const py::object& cuda_stream, int copy_threads) {
    StreamOptions o;
    o.dataset = dataset;
    o.batch_size = batch_size;
    o.rank = rank;
    o.world = world;
    o.seed = seed;
    o.epoch = epoch;
    o.start_step = start_step;
    o.max_steps = max_steps;
    o.remainder = drop_last ? Remainder::kDrop : Remainder::kShort;
    o.sampler = SamplerFrom(sampler);
    const std::optional<StagingOptions> staging = StagingFor(device, prefetch_depth, cuda_stream, copy_threads);
    auto stream = Call([&] { return client_->OpenStream(o); });
    return MakePyStream(client_, std::move(stream), staging ? &*staging : nullptr, prefetch_depth);
  }

  py::object Resume(const std::string& token_text, const py::object& batch_size, uint32_t rank, uint32_t world,
                    uint64_t max_steps, const py::object& drop_last, const py::object& sampler,
                    const py::object& device, int prefetch_depth, const py::object& cuda_stream, const py::object& step,
                    int copy_threads) {
    auto token = ResumeToken::Decode(token_text);
    ThrowIfError(token.status());
    if (!token->complete() && batch_size.is_none()) {
      Raise(Status::InvalidArgument("this resume token (strata1) does not carry the batch size: pass batch_size"));
    }
    if (!drop_last.is_none() && token->complete() && Arg<bool>(drop_last, "drop_last") != token->drop_last) {
      Raise(Status::InvalidArgument(std::string("the resume token's plan ") + (token->drop_last ? "drops" : "keeps") +
                                    " the short last batch, not drop_last=" + (token->drop_last ? "False" : "True") +
                                    ": leave drop_last out"));
    }
    // A sampler named "shuffle" is the C++ side's default, which it takes as
    // "not given": compared here.
    if (!sampler.is_none() && token->complete()) {
      v1::SamplerSpec planned;
      const v1::SamplerSpec requested = client_internal::ToProto(SamplerFrom(sampler));
      if (requested.ByteSizeLong() == 0 && planned.ParseFromString(token->sampler) &&
          !google::protobuf::util::MessageDifferencer::Equals(planned, requested)) {
        Raise(Status::InvalidArgument("the resume token's plan uses another sampler (" +
                                      v1::SamplerSpec::Kind_Name(planned.kind()) + ") than the requested one (" +
                                      v1::SamplerSpec::Kind_Name(requested.kind()) +
                                      "): leave sampler out to take the token's"));
      }
    }
    if (!step.is_none()) token->step = Arg<uint64_t>(step, "step");
    StreamOptions o;
    o.batch_size = batch_size.is_none() ? 0 : Arg<uint32_t>(batch_size, "batch_size");
    // 0 is the C++ side's "not given": said here rather than taken so.
    if (!batch_size.is_none() && o.batch_size == 0) {
      throw py::value_error("batch_size must be at least 1, or None to take the token's");
    }
    o.rank = rank;
    o.world = world;
    o.max_steps = max_steps;
    o.remainder = !drop_last.is_none() && Arg<bool>(drop_last, "drop_last") ? Remainder::kDrop : Remainder::kShort;
    o.sampler = SamplerFrom(sampler);
    const std::optional<StagingOptions> staging = StagingFor(device, prefetch_depth, cuda_stream, copy_threads);
    auto stream = Call([&] { return client_->ResumeStream(*token, o); });
    return MakePyStream(client_, std::move(stream), staging ? &*staging : nullptr, prefetch_depth);
  }

  py::dict Ingest(const std::string& dataset, const py::iterable& samples, uint64_t shard_size,
                  const py::object& options, const py::object& redundancy, const py::object& replication) {
    v1::IngestOptions o;
    if (!options.is_none()) FromDict(options.cast<py::dict>(), &o);
    o.set_dataset(dataset);
    if (shard_size != 0) o.set_shard_target_bytes(shard_size);
    if (!redundancy.is_none()) {
      IngestOptions ec;
      ThrowIfError(SetRedundancy(redundancy.cast<std::string>(), &ec));
      o.set_ec_data(ec.ec_data);
      o.set_ec_parity(ec.ec_parity);
    }
    if (!replication.is_none()) o.set_replication(Arg<uint32_t>(replication, "replication"));
    auto writer = Call([&] { return client_->StartIngest(client_internal::FromProto(o)); });
    try {
      for (const auto& item : samples) {
        const Sample sample = SampleFrom(item);
        Status s;
        {
          GilReleased nogil;
          s = writer->Write(sample);
        }
        ThrowIfError(s);
      }
    } catch (...) {
      GilReleased nogil;
      writer->Abort();
      throw;
    }
    return ToDict(client_internal::ToProto(Call([&] { return writer->Commit(); })));
  }

 private:
  // Runs a blocking client call without the GIL; raises on error.
  template <typename F>
  auto Call(F&& f) -> std::remove_reference_t<decltype(f().value())> {
    std::optional<std::remove_reference_t<decltype(f())>> r;
    {
      GilReleased nogil;
      r.emplace(f());
    }
    ThrowIfError(r->status());
    return std::move(*r).value();
  }

  // Shared with the streams opened from it: a stream outlives its PyClient.
  std::shared_ptr<Client> client_;
};

}  // namespace

void BindClient(py::module_& m) {
  py::class_<PyClient>(m, "Client", R"(A connection to a stratad at "host:port".

Several addresses, comma-separated, are tried in turn (any node of a cluster
will do). Raises strata.Error (code Unavailable) if none answers within
connect_timeout_ms.)")
      .def(py::init<const std::string&, int64_t, const std::string&, const std::string&, const std::string&,
                    const std::string&, const std::string&, int>(),
           py::arg("address"), py::arg("connect_timeout_ms") = 5000, py::kw_only(), py::arg("token") = "",
           py::arg("tls_ca") = "", py::arg("tls_cert") = "", py::arg("tls_key") = "", py::arg("zone") = "",
           py::arg("receive_window") = ClientOptions().receive_window_bytes,
           "Connects to a stratad. token: bearer token (needs tls_ca); tls_ca: PEM file of the servers' CA; "
           "tls_cert, tls_key: client certificate for servers that require one; zone: the trainer's zone, whose "
           "nodes serve the samples they hold a copy of; receive_window: bytes each stream call buffers ahead "
           "(a fixed HTTP/2 window, kept only where the node's round trip lets it move 1 GB/s), 0 for gRPC's own.")
      .def_property_readonly("address", &PyClient::address)
      .def_property_readonly("receive_window", &PyClient::receive_window,
                             "The window the streams get: receive_window, or 0 (gRPC's own) for a far node.")
      .def("list", &PyClient::List, py::arg("include_unsealed") = false, "Datasets and versions, as dicts.")
      .def("describe", &PyClient::Describe, py::arg("dataset"), "One version ('name' or 'name@N') in detail.")
      .def("delete", &PyClient::Delete, py::arg("dataset"), py::arg("abort_ingest") = false,
           R"(Deletes version 'name@N' on every node (strata rm; needs an admin token where tokens are on).

Returns {'dataset': its info (state VERSION_DELETED), 'nodes_told': nodes that
removed their copies, 'nodes_pending': nodes down now, which remove theirs when
they return}. Raises strata.Error: NotFound for an unknown version,
InvalidArgument for a name without @N, FailedPrecondition while it is ingesting.
abort_ingest=True (strata rm --abort) first aborts an ingest with several
writers that is still writing it (one whose writer never came), for every
writer; one writer's ingest still raises FailedPrecondition.)")
      .def("status", &PyClient::GetStatus, "The node's health and counters.")
      .def("stream", &PyClient::OpenStream, py::arg("dataset"), py::arg("batch_size"), py::arg("rank") = 0,
           py::arg("world") = 1, py::arg("seed") = 0, py::arg("epoch") = 0, py::arg("start_step") = 0,
           py::arg("max_steps") = 0, py::arg("drop_last") = false, py::arg("sampler") = py::none(),
           py::arg("device") = py::none(), py::arg("prefetch_depth") = 2, py::arg("cuda_stream") = py::none(),
           py::arg("copy_threads") = 0,
           R"(Opens rank `rank` of `world`'s stream of one epoch; batch_size is per rank.

sampler: None (shuffle), a kind name ('shuffle', 'stratified', 'weighted') or
a dict of SamplerSpec fields. device: None (batches straight from the network,
no copy), 'cpu' (a host staging ring with background prefetch), 'cuda', 'cuda:N'
or N (a staging ring on that GPU; host memory, with a log line, when there is
none). prefetch_depth: batches assembled ahead on a background thread (with
device=None, 0 assembles each one in __next__ instead).
cuda_stream: the consumer's cudaStream_t as an int (default: legacy stream).
copy_threads: threads copying each large batch into the ring (0, default: a
quarter of the cores, 1 to 4; batches split in pieces of at least 1 MiB).)")
      .def("resume", &PyClient::Resume, py::arg("token"), py::arg("batch_size") = py::none(), py::arg("rank") = 0,
           py::arg("world") = 1, py::arg("max_steps") = 0, py::arg("drop_last") = py::none(),
           py::arg("sampler") = py::none(), py::arg("device") = py::none(), py::arg("prefetch_depth") = 2,
           py::arg("cuda_stream") = py::none(), py::arg("step") = py::none(), py::arg("copy_threads") = 0,
           R"(Continues a stream from a resume token, on any world size that divides the same global batch.

The token carries the plan (dataset version, seed, epoch, sampler, drop_last,
global batch): batch_size defaults to global batch / world; a batch_size,
sampler or drop_last given that disagree with the token raise strata.Error
(InvalidArgument). step: start at this step of the token's plan instead of
the token's own. Tokens of the older format (strata1:) carry no plan: give
batch_size, and sampler and drop_last as the stream had them.)")
      .def("ingest", &PyClient::Ingest, py::arg("dataset"), py::arg("samples"), py::arg("shard_size") = 0,
           py::arg("options") = py::none(), py::kw_only(), py::arg("redundancy") = py::none(),
           py::arg("replication") = py::none(),
           R"(Creates the next version of `dataset` from an iterable of samples and seals it.

A sample is a dict {"key", "label", "fields": {name: bytes}, "attributes"} or a
tuple (key, label, {name: bytes}). options: more IngestOptions fields as a dict.
redundancy: "ec:K+M" (erasure coded, as strata ingest --redundancy; sets
ec_data and ec_parity); replication: copies of each shard (give one or neither).
Returns the server's summary.)");

  m.def(
      "parse_resume_token",
      [](const std::string& text) {
        auto t = ResumeToken::Decode(text);
        ThrowIfError(t.status());
        py::dict d;
        d["dataset"] = t->dataset;
        d["version"] = t->version;
        d["plan_hash"] = t->plan_hash;
        d["seed"] = t->seed;
        d["epoch"] = t->epoch;
        d["step"] = t->step;
        d["complete"] = t->complete();
        d["global_batch"] = t->complete() ? py::object(py::int_(t->global_batch)) : py::object(py::none());
        d["drop_last"] = t->complete() ? py::object(py::bool_(t->drop_last)) : py::object(py::none());
        py::object spec = py::none();
        if (t->complete()) {
          v1::SamplerSpec s;
          if (!s.ParseFromString(t->sampler)) {
            Raise(Status::InvalidArgument("the resume token's sampler is not a valid SamplerSpec"));
          }
          spec = ToDict(s);
        }
        d["sampler"] = spec;
        return d;
      },
      py::arg("token"),
      "A resume token's parts as a dict; global_batch, drop_last and sampler are None in an old (strata1) token.");

  m.def(
      "staging_path",
      [](const py::object& device) {
        StagingOptions o;
        if (!device.is_none()) o = *StagingFor(device, 2, py::none());
        std::string description;
        const StagingMemory memory = StagedStream::Probe(o, &description);
        return py::make_tuple(
            memory == StagingMemory::kDevice ? "cuda:" + std::to_string(o.device) : std::string("cpu"), description);
      },
      py::arg("device") = py::none(),
      "('cuda:N' or 'cpu', description): where a staged stream for `device` would put batches, and why.");
}

}  // namespace strata::python
