// Client: one gRPC channel to a stratad, the admin calls, and the factories
// for streams and ingests.
#include "strata/client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <chrono>
#include <iterator>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/client_internal.h"
#include "client/resume_plan.h"
#include "common/dataset_ref.h"
#include "common/placement.h"
#include "common/grpc_status.h"
#include "strata/v1/admin.grpc.pb.h"
#include "strata/v1/cluster.grpc.pb.h"

namespace strata {

namespace {

// Admin calls are small; a server that takes longer than this is stuck.
constexpr std::chrono::seconds kAdminDeadline{30};
// Longer than the 5-minute minimum ping interval that gRPC servers enforce by
// default: more frequent pings during a stalled stream (a trainer paused for a
// checkpoint) would make the server close the connection for ping abuse.
constexpr int kKeepaliveTimeMs = 330 * 1000;
constexpr int kKeepaliveTimeoutMs = 20 * 1000;

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
  *request.mutable_sampler() = o.sampler;
  request.set_remainder(o.remainder);
  return request;
}

grpc::ChannelArguments ChannelArgs(const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_bytes);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  // A restarted node should be found again quickly: the default backoff grows to minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return args;
}

class GrpcClient final : public Client {
 public:
  GrpcClient(std::string address, std::shared_ptr<grpc::Channel> channel, const ClientOptions& options)
      : address_(std::move(address)),
        channel_(std::move(channel)),
        admin_(v1::AdminService::NewStub(channel_)),
        options_(options) {
    channels_[address_] = channel_;
  }

  const std::string& address() const override { return address_; }

  Result<std::vector<v1::DatasetInfo>> ListDatasets(bool include_unsealed) override {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ListDatasetsRequest request;
    request.set_include_unsealed(include_unsealed);
    v1::ListDatasetsReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->ListDatasets(&context, request, &reply)));
    return std::vector<v1::DatasetInfo>(std::make_move_iterator(reply.mutable_datasets()->begin()),
                                        std::make_move_iterator(reply.mutable_datasets()->end()));
  }

  Result<v1::DescribeDatasetReply> Describe(const std::string& dataset) override {
    STRATA_RETURN_IF_ERROR(ParseDatasetRef(dataset).status());
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::DescribeDatasetRequest request;
    request.set_dataset(dataset);
    v1::DescribeDatasetReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->DescribeDataset(&context, request, &reply)));
    return reply;
  }

  Result<v1::StatusReply> GetStatus() override {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::StatusReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->GetStatus(&context, v1::StatusRequest(), &reply)));
    return reply;
  }

  Result<v1::ClusterMap> GetClusterMap() override {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::ClusterMap map;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(admin_->GetClusterMap(&context, v1::GetClusterMapRequest(), &map)));
    if (map.nodes_size() == 0) return Status::Internal("the server sent an empty cluster map");
    return map;
  }

  Result<v1::StatusReply> GetNodeStatus(const std::string& address) override {
    auto stub = v1::AdminService::NewStub(Channel(address));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::StatusReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(stub->GetStatus(&context, v1::StatusRequest(), &reply)));
    return reply;
  }

  Result<std::vector<v1::FileRef>> ListNodeFiles(const std::string& address) override {
    auto stub = v1::PeerService::NewStub(Channel(address));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListLocalFilesReply reply;
    STRATA_RETURN_IF_ERROR(FromGrpcStatus(stub->ListLocalFiles(&context, v1::ListLocalFilesRequest(), &reply)));
    std::vector<v1::FileRef> out;
    for (auto& f : *reply.mutable_files()) out.push_back(std::move(*f.mutable_file()));
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

  Result<std::unique_ptr<IngestWriter>> StartIngest(const v1::IngestOptions& options) override {
    auto ref = ParseDatasetRef(options.dataset());
    if (!ref.ok()) return ref.status();
    // The dataset's home node numbers its versions: send the ingest there.
    auto map = GetClusterMap();
    if (!map.ok()) return map.status();
    std::vector<std::string> members;
    for (const auto& n : map->nodes()) members.push_back(n.id());
    for (const std::string& id : RankMembers(DatasetHomeKey(ref->name), members)) {
      for (const auto& n : map->nodes()) {
        if (n.id() == id && n.state() == v1::NODE_UP) {
          return client_internal::NewGrpcIngestWriter(map->nodes_size() == 1 ? channel_ : Channel(n.address()),
                                                      options);
        }
      }
    }
    return Status::Unavailable("no node of the cluster is up to take the ingest");
  }

 private:
  std::shared_ptr<grpc::Channel> Channel(const std::string& address) {
    std::lock_guard<std::mutex> lock(channels_mu_);
    auto& c = channels_[address];
    if (!c) c = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), ChannelArgs(options_));
    return c;
  }

  Result<std::unique_ptr<Stream>> StreamFrom(v1::StreamRequest request, const ResumeToken& position) {
    auto map = GetClusterMap();
    if (!map.ok()) return map.status();
    if (map->nodes_size() == 1) map->mutable_nodes(0)->set_address(address_);  // one node: the address we know
    return client_internal::NewClusterStream([this](const std::string& a) { return Channel(a); },
                                             std::move(map).value(), std::move(request), position, options_);
  }

  const std::string address_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::AdminService::Stub> admin_;
  const ClientOptions options_;
  std::mutex channels_mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;  // GUARDED_BY(channels_mu_)
};

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const std::string& address, const ClientOptions& options) {
  if (address.empty()) return Status::InvalidArgument("no server address given");
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), ChannelArgs(options));
  const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(options.connect_timeout_ms);
  // A refused or unreachable address fails at once; a slow one gets the timeout.
  for (grpc_connectivity_state state = channel->GetState(true); state != GRPC_CHANNEL_READY;
       state = channel->GetState(true)) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
      return Status::Unavailable("cannot connect to stratad at " + address +
                                 " (connection refused or host unreachable; is stratad running?)");
    }
    if (!channel->WaitForStateChange(state, deadline)) {
      return Status::Unavailable("cannot reach stratad at " + address + " within " +
                                 std::to_string(options.connect_timeout_ms) + " ms");
    }
  }
  return std::unique_ptr<Client>(std::make_unique<GrpcClient>(address, std::move(channel), options));
}

Result<std::unique_ptr<Client>> Client::Connect(const std::vector<std::string>& seeds, const ClientOptions& options) {
  if (seeds.empty()) return Status::InvalidArgument("no server address given");
  Status last;
  for (const auto& seed : seeds) {
    auto client = Connect(seed, options);
    if (client.ok()) return client;
    last = client.status();
  }
  return seeds.size() == 1 ? last : Status::Unavailable("none of the " + std::to_string(seeds.size()) +
                                                        " servers answered; last: " + last.message());
}

}  // namespace strata
