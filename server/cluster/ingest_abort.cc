#include "server/cluster/ingest_abort.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <vector>

namespace strata {

namespace {
constexpr std::chrono::seconds kAskTimeout{5};
}  // namespace

Result<bool> IngestAborter::Abort(const std::string& name, uint64_t version, const std::string& why) {
  const std::string what = name + "@" + std::to_string(version);
  auto here = multi_->AbortVersion(name, version, why);
  if (!here.ok()) return here.status().WithContext("aborting the ingest of " + what);
  bool found = here.value();

  const v1::ClusterMap map = view_->Current();
  std::vector<const v1::NodeInfo*> others;
  for (const auto& n : map.nodes()) {
    if (n.state() == v1::NODE_UP && n.id() != view_->self_id()) others.push_back(&n);
  }
  v1::AbortIngestRequest request;
  request.set_dataset(what);
  request.set_why(why);
  auto answers = peers_->CallEach<v1::AbortIngestReply>(
      others, kAskTimeout,
      [&request](v1::PeerService::Stub& stub, grpc::ClientContext* context, v1::AbortIngestReply* reply,
                 std::function<void(grpc::Status)> done) {
        stub.async()->AbortIngest(context, &request, reply, std::move(done));
      });
  for (size_t i = 0; i < others.size(); ++i) {
    const auto& [status, reply] = answers[i];
    if (!status.ok()) {
      spdlog::warn("asking {} to abort the ingest of {}: {}", others[i]->id(), what, status.error_message());
      continue;
    }
    if (reply.found()) spdlog::info("{} aborted the ingest of {}", others[i]->id(), what);
    found = found || reply.found();
  }
  return found;
}

}  // namespace strata
