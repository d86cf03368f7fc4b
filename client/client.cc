// Client: one gRPC channel to a stratad, the admin calls, and the factories
// for streams and ingests.
#include "strata/client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/channel_credentials.h"
#include "client/client_internal.h"
#include "client/log.h"
#include "client/proto_convert.h"
#include "client/resume_plan.h"
#include "client/round_trip.h"
#include "client/stream_plan.h"
#include "common/dataset_ref.h"
#include "common/grpc_status.h"
#include "common/mutex.h"
#include "common/placement.h"
#include "strata/v1/admin.grpc.pb.h"
#include "strata/v1/cluster.grpc.pb.h"

namespace strata {

namespace {

// Admin calls are small; a server that takes longer than this is stuck.
constexpr std::chrono::seconds kAdminDeadline{30};
// Connect's measure of the node's round trip (client/round_trip.h).
constexpr int kRoundTripCalls = 3;
constexpr std::chrono::milliseconds kRoundTripDeadline{2000};
// How long StartIngest goes on trying the nodes in order when the home does
// not answer (membership needs its failure timeout to agree on a new home).
constexpr std::chrono::seconds kIngestFailoverWindow{30};
// Keepalive (README, "Keepalives and timeouts"): a ping every 30 s, with or
// without calls, so that a connection to a node that vanished without a
// reset (a host crash, a partition) is found dead within 50 s, before a
// stream needs it. The answer may wait behind data the trainer has not read
// yet only as long as the HTTP/2 window lets the server send, and gRPC reads
// its sockets at least every 5 s: 20 s is ample for a live node. stratad
// accepts pings every 10 s and never strikes a client for them.
constexpr int kKeepaliveTimeMs = 30 * 1000;
constexpr int kKeepaliveTimeoutMs = 20 * 1000;

// GetNodeStatus is cheap for a live node: one that takes longer is reported as not answering.
constexpr std::chrono::seconds kNodeStatusDeadline{2};

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + kAdminDeadline);
}

Status CheckStreamOptions(const StreamOptions& o) {
  if (o.batch_size == 0) return Status::InvalidArgument("batch size must be at least 1");
  if (o.world == 0) return Status::InvalidArgument("world size must be at least 1");
  if (o.rank >= o.world) {
    return Status::InvalidArgument("rank " + std::to_string(o.rank) + " is not below world size " +
                                   std::to_string(o.world));
  }
  return Status::OK();
}

v1::StreamRequest MakeRequest(const StreamOptions& o) {
  v1::StreamRequest request;
  request.set_dataset(o.dataset);
  request.set_rank(o.rank);
  request.set_world(o.world);
  request.set_batch_size(o.batch_size);
  request.set_seed(o.seed);
  request.set_epoch(o.epoch);
  request.set_start_step(o.start_step);
  request.set_max_steps(o.max_steps);
  *request.mutable_sampler() = client_internal::ToProto(o.sampler);
  request.set_remainder(client_internal::ToProto(o.remainder));
  return request;
}

grpc::ChannelArguments ChannelArgs(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_bytes);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // keepalive is not limited by what the client sends
  if (options.receive_window_bytes > 0) {
    // A fixed window per call: what gRPC buffers ahead of the stream's queue.
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, options.receive_window_bytes);
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  }
  // A restarted node should be found again quickly: the default backoff grows to minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return args;
}

// The client's channels, one per node address, made on first use. Shared
// with the streams the client opens, so that a stream may outlive its client.
class Channels {
 public:
  Channels(std::shared_ptr<grpc::ChannelCredentials> credentials, const ClientOptions& options)
      : credentials_(std::move(credentials)), options_(options) {}

  void Add(const std::string& address, std::shared_ptr<grpc::Channel> channel) {
    MutexLock lock(&mu_);
    channels_[address] = std::move(channel);
  }
  std::shared_ptr<grpc::Channel> Get(const std::string& address) {
    MutexLock lock(&mu_);
    auto& c = channels_[address];
    if (!c) c = grpc::CreateCustomChannel(address, credentials_, ChannelArgs(options_));
    return c;
  }

 private:
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;  // for the channels to other nodes
  const ClientOptions options_;
  Mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_ GUARDED_BY(mu_);
};

class GrpcClient final : public Client {
 public:
  // `seeds`: the addresses the client was given, asked for the cluster map
  // when neither this node nor any of the last map answers.
  GrpcClient(std::string address, std::shared_ptr<grpc::Channel> channel,
             std::shared_ptr<grpc::ChannelCredentials> credentials, const ClientOptions& options,
             std::vector<std::string> seeds)
      : address_(std::move(address)),
        seeds_(std::move(seeds)),
        channel_(std::move(channel)),
        channels_(std::make_shared<Channels>(std::move(credentials), options)),
        admin_(v1::AdminService::NewStub(channel_)),
        options_(options) {
    channels_->Add(address_, channel_);
  }

  const std::string& address() const override { return address_; }
  int receive_window_bytes() const override { return options_.receive_window_bytes; }

  Result<std::vector<DatasetInfo>> ListDatasets(bool include_unsealed) override {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ListDatasetsRequest request;
    request.set_include_unsealed(include_unsealed);
    v1::ListDatasetsReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->ListDatasets(&context, request, &reply)));
    std::vector<DatasetInfo> out;
    out.reserve(static_cast<size_t>(reply.datasets_size()));
    for (const v1::DatasetInfo& d : reply.datasets()) out.push_back(client_internal::FromProto(d));
    return out;
  }

  Result<DatasetDescription> Describe(const std::string& dataset) override {
    STRATA_RETURN_IF_ERROR(ParseDatasetRef(dataset).status());
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::DescribeDatasetRequest request;
    request.set_dataset(dataset);
    v1::DescribeDatasetReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->DescribeDataset(&context, request, &reply)));
    return client_internal::FromProto(reply);
  }

  using Client::DeleteVersion;
  Result<DeleteResult> DeleteVersion(const std::string& dataset, bool abort_ingest) override {
    auto ref = ParseDatasetRef(dataset);
    if (!ref.ok()) return ref.status();
    if (!ref->version) {
      return Status::InvalidArgument("name the version to delete as NAME@N ('" + dataset + "' names none)");
    }
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::DeleteVersionRequest request;
    request.set_dataset(dataset);
    request.set_abort_ingest(abort_ingest);
    v1::DeleteVersionReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->DeleteVersion(&context, request, &reply)));
    DeleteResult out;
    out.dataset = client_internal::FromProto(reply.dataset());
    out.nodes_told.assign(reply.nodes_told().begin(), reply.nodes_told().end());
    out.nodes_pending.assign(reply.nodes_pending().begin(), reply.nodes_pending().end());
    return out;
  }

  Result<NodeStatus> GetStatus() override {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::StatusReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->GetStatus(&context, v1::StatusRequest(), &reply)));
    return client_internal::FromProto(reply);
  }

  Result<ClusterMap> GetClusterMap() override {
    auto map = FetchClusterMap();
    if (!map.ok()) return map.status();
    return client_internal::FromProto(*map);
  }

  // The map as it came over the wire, which streams are built from.
  Result<v1::ClusterMap> FetchClusterMap() {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ClusterMap map;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->GetClusterMap(&context, v1::GetClusterMapRequest(), &map)));
    if (map.nodes_size() == 0) return Status::Internal("the server sent an empty cluster map");
    return map;
  }

  Result<NodeStatus> GetNodeStatus(const std::string& address) override {
    auto stub = v1::AdminService::NewStub(Channel(address));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kNodeStatusDeadline);
    v1::StatusReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(stub->GetStatus(&context, v1::StatusRequest(), &reply)));
    return client_internal::FromProto(reply);
  }

  Result<std::vector<FileRef>> ListNodeFiles(const std::string& address) override {
    auto stub = v1::PeerService::NewStub(Channel(address));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListLocalFilesReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(stub->ListLocalFiles(&context, v1::ListLocalFilesRequest(), &reply)));
    std::vector<FileRef> out;
    out.reserve(static_cast<size_t>(reply.files_size()));
    for (const auto& f : reply.files()) out.push_back(client_internal::FromProto(f.file()));
    return out;
  }

  Result<std::unique_ptr<Stream>> OpenStream(const StreamOptions& options) override {
    STRATA_RETURN_IF_ERROR(CheckStreamOptions(options));
    auto ref = ParseDatasetRef(options.dataset);
    if (!ref.ok()) return ref.status();
    ResumeToken position;
    position.dataset = ref->name;
    position.version = ref->version.value_or(0);
    position.seed = options.seed;
    position.epoch = options.epoch;
    position.step = options.start_step;
    client_internal::RecordPlan(options, &position);
    return StreamFrom(MakeRequest(options), position);
  }

  Result<std::unique_ptr<Stream>> ResumeStream(const ResumeToken& token, StreamOptions options) override {
    STRATA_RETURN_IF_ERROR(client_internal::ApplyPlan(token, &options));
    STRATA_RETURN_IF_ERROR(CheckStreamOptions(options));
    STRATA_RETURN_IF_ERROR(ValidateDatasetName(token.dataset));
    if (token.version == 0) return Status::InvalidArgument("resume token has no dataset version");
    options.dataset = token.dataset + "@" + std::to_string(token.version);
    options.seed = token.seed;
    options.epoch = token.epoch;
    options.start_step = token.step;
    v1::StreamRequest request = MakeRequest(options);
    request.set_expect_plan_hash(token.plan_hash);
    ResumeToken position = token;
    client_internal::RecordPlan(options, &position);  // a format 1 token continues as a complete one
    return StreamFrom(request, position);
  }

  Result<std::unique_ptr<IngestWriter>> StartIngest(const IngestOptions& options) override {
    auto ref = ParseDatasetRef(options.dataset);
    if (!ref.ok()) return ref.status();
    // The dataset's home node (the first member up in the name's ranked
    // order) numbers its versions: send the ingest there. A node that does
    // not answer is skipped for the next in order; a node whose map still
    // names a dead home refuses, and is asked again once its map has caught
    // up (membership marks a silent node down within its failure timeout).
    const auto deadline = std::chrono::steady_clock::now() + kIngestFailoverWindow;
    const auto attempt = std::chrono::milliseconds(std::max<int64_t>(1000, options_.connect_timeout_ms));
    Status last = Status::Unavailable("no node of the cluster is up to take the ingest");
    // A node's own answer (the home's "only 3 nodes are up", a timeout) says
    // more than another node's redirect to the home: the final error keeps it.
    bool last_answered = false;
    // One of several writers whose attempt timed out may have joined all the
    // same (a slow home): its node withdraws that join when it finds the call
    // cancelled, so "already joined" is then worth asking again.
    bool may_hold_join = false;
    for (;;) {
      auto map = AnyClusterMap();
      if (!map.ok()) return map.status();
      std::vector<std::string> members;
      for (const auto& n : map->nodes()) members.push_back(n.id());
      std::vector<std::string> order = RankMembers(DatasetHomeKey(ref->name), members);
      if (!options.ingest_id.empty() && !order.empty()) {
        // One of several writers: any node takes it, so the writers spread
        // over the nodes, writer w starting at the w-th in the ingest's order.
        order = RankMembers(options.ingest_id, members);
        std::rotate(order.begin(), order.begin() + static_cast<long>(options.writer % order.size()), order.end());
      }
      for (const std::string& id : order) {
        for (const auto& n : map->nodes()) {
          if (n.id() != id || n.state() != v1::NODE_UP) continue;
          auto writer = client_internal::StartGrpcIngest(map->nodes_size() == 1 ? channel_ : Channel(n.address()),
                                                         client_internal::ToProto(options), attempt);
          if (writer.ok()) return writer;
          const Status& s = writer.status();
          const bool elsewhere =
              s.code() == Code::kFailedPrecondition && s.message().find("are coordinated by") != std::string::npos;
          const bool withdrawing = s.code() == Code::kAlreadyExists && may_hold_join;
          if (s.code() == Code::kDeadlineExceeded && !options.ingest_id.empty()) may_hold_join = true;
          if (s.code() != Code::kUnavailable && s.code() != Code::kDeadlineExceeded && s.code() != Code::kCancelled &&
              !elsewhere && !withdrawing) {
            return s;  // the request's fault: every node would say the same
          }
          if (!elsewhere || !last_answered) last = Status(s.code(), id + ": " + s.message());
          last_answered = last_answered || !elsewhere;
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Status::Unavailable("no node took the ingest within " + std::to_string(kIngestFailoverWindow.count()) +
                                   " s; last: " + last.ToString());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }

 private:
  std::shared_ptr<grpc::Channel> Channel(const std::string& address) { return channels_->Get(address); }

  // The map from the connected node or, if it does not answer, from any
  // node of the last map seen, else from any of the seeds: a client whose
  // node has died goes on with the others.
  Result<v1::ClusterMap> AnyClusterMap() {
    auto map = FetchClusterMap();
    if (map.ok()) {
      MutexLock lock(&map_mu_);
      last_map_ = map.value();
      return map;
    }
    std::vector<std::string> others;
    {
      MutexLock lock(&map_mu_);
      for (const auto& n : last_map_.nodes()) others.push_back(n.address());
    }
    others.insert(others.end(), seeds_.begin(), seeds_.end());
    std::set<std::string> asked = {address_};
    for (const std::string& address : others) {
      if (!asked.insert(address).second) continue;
      auto stub = v1::AdminService::NewStub(Channel(address));
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      v1::ClusterMap other;
      if (stub->GetClusterMap(&context, v1::GetClusterMapRequest(), &other).ok() && other.nodes_size() > 0) {
        MutexLock lock(&map_mu_);
        last_map_ = other;
        return other;
      }
    }
    return map.status();
  }

  Result<std::unique_ptr<Stream>> StreamFrom(v1::StreamRequest request, const ResumeToken& position) {
    auto map = AnyClusterMap();
    if (!map.ok()) return map.status();
    if (map->nodes_size() == 1) map->mutable_nodes(0)->set_address(address_);  // one node: the address we know
    return client_internal::NewClusterStream([channels = channels_](const std::string& a) { return channels->Get(a); },
                                             std::move(map).value(), std::move(request), position, options_, indexes_);
  }

  const std::string address_;
  const std::vector<std::string> seeds_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::shared_ptr<Channels> channels_;  // shared with the streams
  const std::unique_ptr<v1::AdminService::Stub> admin_;
  const ClientOptions options_;
  // Stratum indexes of the versions this client's streams planned.
  const std::shared_ptr<client_internal::StratumIndexCache> indexes_ =
      std::make_shared<client_internal::StratumIndexCache>();
  Mutex map_mu_;
  v1::ClusterMap last_map_ GUARDED_BY(map_mu_);
};

}  // namespace

namespace {

// Connects to `address`; `seeds` go to the client (GrpcClient's constructor).
Result<std::unique_ptr<Client>> ConnectTo(const std::string& address, const ClientOptions& options,
                                          std::vector<std::string> seeds) {
  if (address.empty()) return Status::InvalidArgument("no server address given");
  auto credentials = client_internal::MakeChannelCredentials(options);
  if (!credentials.ok()) return credentials.status();
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(address, credentials.value(), ChannelArgs(options));
  const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(options.connect_timeout_ms);
  // A refused or unreachable address fails at once; a slow one gets the timeout.
  for (grpc_connectivity_state state = channel->GetState(true); state != GRPC_CHANNEL_READY;
       state = channel->GetState(true)) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
      return Status::Unavailable("cannot connect to stratad at " + address +
                                 (options.tls_ca_file.empty()
                                      ? " (connection refused or host unreachable; is stratad running? does it "
                                        "serve TLS, so that --tls-ca is needed?)"
                                      : " (connection refused, host unreachable, or the TLS handshake failed: "
                                        "check --tls-ca and the client certificate)"));
    }
    if (!channel->WaitForStateChange(state, deadline)) {
      return Status::Unavailable("cannot reach stratad at " + address + " within " +
                                 std::to_string(options.connect_timeout_ms) + " ms");
    }
  }
  // A fixed window where the node is near; gRPC's own, which grows with the
  // bandwidth, where one round trip would leave the window too little
  // (client/round_trip.h). The connected node stands for the cluster.
  ClientOptions chosen = options;
  if (options.receive_window_bytes > 0 && options.receive_window_by_round_trip) {
    const auto round_trip = client_internal::RoundTrip(channel, kRoundTripCalls, kRoundTripDeadline);
    chosen.receive_window_bytes = client_internal::WindowFor(options.receive_window_bytes, round_trip);
    if (chosen.receive_window_bytes != options.receive_window_bytes) {
      client_internal::Log().info(
          "stratad at {} is {:.1f} ms away: streams use gRPC's growing HTTP/2 window, not a fixed {} bytes per call",
          address, static_cast<double>(round_trip->count()) / 1000, options.receive_window_bytes);
      channel = grpc::CreateCustomChannel(address, credentials.value(), ChannelArgs(chosen));
    }
  }
  return std::unique_ptr<Client>(std::make_unique<GrpcClient>(
      address, std::move(channel), std::move(credentials).value(), chosen, std::move(seeds)));
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const std::string& address, const ClientOptions& options) {
  return ConnectTo(address, options, {address});
}

Result<std::unique_ptr<Client>> Client::Connect(const std::vector<std::string>& seeds, const ClientOptions& options) {
  if (seeds.empty()) return Status::InvalidArgument("no server address given");
  Status last;
  for (const auto& seed : seeds) {
    auto client = ConnectTo(seed, options, seeds);
    if (client.ok()) return client;
    last = client.status();
  }
  return seeds.size() == 1 ? last
                           : Status::Unavailable("none of the " + std::to_string(seeds.size()) +
                                                 " servers answered; last: " + last.message());
}

}  // namespace strata
