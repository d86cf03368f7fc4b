// libstrata: the trainer-side client of a strata cluster.
//
//   auto client = strata::Client::Connect("127.0.0.1:7400");
//   strata::StreamOptions o;
//   o.dataset = "cats"; o.batch_size = 64; o.rank = rank; o.world = world; o.epoch = e;
//   auto stream = (*client)->OpenStream(o);
//   strata::Batch batch;
//   while ((*stream)->Next(&batch).ok()) train(batch);   // OutOfRange ends the epoch
//
// Thread-safety: a Client is safe for concurrent use; open one Stream per
// consumer thread. A Stream, a Batch and an IngestWriter are used by one thread
// at a time.
//
// The public API is the headers under strata/; they need only each other and
// the standard library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/batch.h"
#include "strata/cluster.h"
#include "strata/dataset.h"
#include "strata/resume_token.h"
#include "strata/sampler.h"
#include "strata/status.h"

namespace strata {

struct ClientOptions {
  // Fail Connect if the server does not answer within this time. Default 5 s.
  int64_t connect_timeout_ms = 5000;
  // Largest message the client accepts. Default 1 GiB.
  int max_receive_bytes = 1 << 30;
  // A server that owes its part of the step the trainer waits for, while the
  // trainer waits for it and the client has read everything it sent, and
  // whose connection delivers nothing for this long, is treated as failed:
  // its share moves to the other holders (and comes back once it answers
  // again). Time the trainer spends away from Next() never counts. Default 5 s.
  int64_t stall_timeout_ms = 5000;
  // Steps buffered ahead of the trainer (the parts of every server for
  // them). Default 8.
  size_t max_buffered_parts = 8;
  // And at most about this many payload bytes: the steps ahead are cut to
  // max_buffered_bytes / the last step's payload, but never below 2 (1 MiB
  // samples in batches of 8 buffer 2 steps, 1 KiB samples in batches of 256
  // still 8). Parts waiting to be joined hold the buffers they were received
  // in, and the fewer of them, the warmer the memory the next ones are read
  // into. 0: steps alone bound it. Default 16 MiB.
  size_t max_buffered_bytes = 16 << 20;
  // On a cluster of several nodes the client computes the epoch plan and
  // sends each node the samples it owes, so that a node's work per sample does
  // not grow with the cluster (docs/design.md, "The client plans"). false:
  // every node computes the plan and keeps its own samples, as servers built
  // before StreamRequest.work do (the stream also does that with them).
  bool plan_on_client = true;
  // Bytes gRPC may buffer per call beyond those parts: a fixed HTTP/2 stream
  // window. A call then moves at most this much per round trip (1 MiB: 5 GB/s
  // at a 0.2 ms round trip), and what waits for the trainer stays in memory
  // that is still in the caches. Connect measures the round trip to the node
  // (three health checks): where this window would move less than 1 GB/s
  // (beyond about 1 ms for 1 MiB), the client takes gRPC's window instead.
  // 0: gRPC's own window always, which grows with the measured bandwidth (to
  // megabytes on a fast link, for every call). Default 1 MiB.
  int receive_window_bytes = 1 << 20;
  // false: keep receive_window_bytes however far the node is (what each call
  // buffers stays bounded; a far node then streams at most that much per
  // round trip). Default true.
  bool receive_window_by_round_trip = true;
  // TLS: the CA that signs the servers' certificates (PEM file). Empty:
  // plaintext. With it, tls_cert_file and tls_key_file (both or neither) are
  // the client certificate for a server that requires one (mutual TLS).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Bearer token sent with every call (needs TLS). Empty: none.
  std::string token;
  // The trainer's zone (as the nodes' cluster.zone): a sample with a live
  // copy on a node in this zone is read from such a node; failover is as
  // without it. Empty: no preference.
  std::string zone;
};

// What to stream: one rank's view of one epoch.
struct StreamOptions {
  std::string dataset;  // "name" (latest sealed version) or "name@N"
  uint32_t rank = 0;
  uint32_t world = 1;
  uint32_t batch_size = 0;  // per rank; global batch = batch_size * world
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t start_step = 0;  // resume here
  uint64_t max_steps = 0;   // 0: to the end of the epoch
  SamplerSpec sampler;      // default: kShuffle
  Remainder remainder = Remainder::kShort;
};

// What a stream has been through: failovers and nodes taken back.
struct StreamStats {
  uint64_t failovers = 0;     // nodes excluded after their call failed or stalled
  uint64_t stalls = 0;        // of those, for a stall (sent nothing while owing the awaited step)
  uint64_t readmissions = 0;  // excluded nodes used again after they answered
};

// A stream of one rank's batches, in step order. In a cluster it reads from
// every node that serves part of the rank's batches and joins the parts; when
// a node fails or stalls, the others take over its share from the first
// incomplete step, and every sample still arrives exactly once.
class Stream {
 public:
  virtual ~Stream() = default;

  // Fills *batch with the next complete batch (assembling it if the server
  // sent it in parts). OutOfRange after the last step; other errors carry the
  // server's status and message. After an error, Next keeps returning it.
  virtual Status Next(Batch* batch) = 0;

  // Steps in the epoch (known after the first batch arrives; 0 before).
  virtual uint64_t steps_in_epoch() const = 0;
  // The step the next call to Next() will return.
  virtual uint64_t next_step() const = 0;
  // Everything needed to continue this stream from next_step() later, on any
  // world size that divides the same global batch.
  virtual ResumeToken resume_token() const = 0;
  // Stops the stream; a blocked Next() returns Cancelled.
  virtual void Cancel() = 0;
  // Failovers and readmissions so far (zero for a stream that has none).
  virtual StreamStats stats() const { return {}; }
};

// Sends samples of one new dataset version to a server.
class IngestWriter {
 public:
  virtual ~IngestWriter() = default;
  // Queues one sample; samples are sent in messages of about 1 MiB, or once
  // the first of a message has waited 5 s (at the next Write). A server
  // aborts an ingest that sends it nothing for its ingest_idle_timeout_s
  // (default 600 s). An error means the server refused the ingest (the
  // status says why).
  virtual Status Write(const Sample& sample) = 0;
  // Sends the rest and the commit, waits until the version is sealed
  // (durable), and returns the server's summary.
  virtual Result<IngestSummary> Commit() = 0;
  // Abandons the ingest; the server removes what it wrote.
  virtual void Abort() = 0;
  // Samples and payload bytes written so far.
  virtual uint64_t samples_written() const = 0;
  virtual uint64_t bytes_written() const = 0;
};

class Client {
 public:
  // Connects to a stratad at "host:port". Unavailable (with the address in the
  // message) if it does not answer within options.connect_timeout_ms.
  static Result<std::unique_ptr<Client>> Connect(const std::string& address, const ClientOptions& options = {});
  // Connects to the first of `seeds` that answers (any node of a cluster will
  // do: the client learns the others from its cluster map). Streams opened
  // later (OpenStream, ResumeStream) need only one node to answer: if the
  // connected node does not, the cluster map is asked of the nodes of the
  // last map this client saw, then of the seeds.
  static Result<std::unique_ptr<Client>> Connect(const std::vector<std::string>& seeds,
                                                 const ClientOptions& options = {});

  virtual ~Client() = default;

  virtual const std::string& address() const = 0;
  // The HTTP/2 window each of this client's stream calls gets:
  // ClientOptions::receive_window_bytes, or 0 (gRPC's own) where Connect
  // found the node too far for it (receive_window_bytes above).
  virtual int receive_window_bytes() const = 0;

  virtual Result<std::vector<DatasetInfo>> ListDatasets(bool include_unsealed = false) = 0;
  virtual Result<DatasetDescription> Describe(const std::string& dataset) = 0;
  // Deletes version "name@N" on every node (needs an admin token where tokens
  // are on): it leaves every listing at once, every node that is up removes
  // its files before this returns, and a node that is down removes them when
  // it returns. Streams open on it end with FailedPrecondition ("... was
  // deleted"). NotFound naming it if there is no such version;
  // InvalidArgument for a name without @N; FailedPrecondition while it is
  // being ingested. Deleting a deleted version again is OK.
  // `abort_ingest` (`strata rm --abort`): a version that an ingest with
  // several writers is still writing (one whose writer never came stays open
  // for ever) is aborted first, for every writer: their calls fail, and every
  // node drops its files. One writer's ingest is still refused: it ends with
  // its writer's call.
  virtual Result<DeleteResult> DeleteVersion(const std::string& dataset, bool abort_ingest) = 0;
  Result<DeleteResult> DeleteVersion(const std::string& dataset) { return DeleteVersion(dataset, false); }
  virtual Result<NodeStatus> GetStatus() = 0;
  // The cluster map as the connected node sees it.
  virtual Result<ClusterMap> GetClusterMap() = 0;
  // GetStatus of another node (by its address from the map). A node that does
  // not answer within 2 s is an error (Unavailable or DeadlineExceeded).
  virtual Result<NodeStatus> GetNodeStatus(const std::string& address) = 0;
  // The files (shards, stratum indexes) a node holds, by its address.
  virtual Result<std::vector<FileRef>> ListNodeFiles(const std::string& address) = 0;

  // Opens a stream. Errors in the options that the client can see (batch size
  // 0, rank >= world) are InvalidArgument at once; others come from the server
  // on the first Next(). The stream may outlive the client.
  virtual Result<std::unique_ptr<Stream>> OpenStream(const StreamOptions& options) = 0;
  // Opens a stream that continues from a resume token (dataset version, plan,
  // seed, epoch and step). world, rank and max_steps come from `options`. A
  // complete token (format 2) also gives the sampler, remainder and global
  // batch: options.batch_size 0 takes global batch / world, and a batch size,
  // sampler (other than the default) or REMAINDER_DROP that disagree with the
  // token are InvalidArgument. A format 1 token takes them all from `options`;
  // the server refuses a token whose plan does not match.
  virtual Result<std::unique_ptr<Stream>> ResumeStream(const ResumeToken& token, StreamOptions options) = 0;

  virtual Result<std::unique_ptr<IngestWriter>> StartIngest(const IngestOptions& options) = 0;
};

}  // namespace strata
