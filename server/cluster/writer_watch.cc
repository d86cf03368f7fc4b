#include "server/cluster/writer_watch.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <set>

#include "server/cluster/membership.h"

namespace strata {

WriterWatch::WriterWatch(const ClusterView* view, PeerClients* peers, MultiIngests* multi,
                         boost::asio::any_io_executor executor)
    : view_(view), peers_(peers), multi_(multi), task_(std::move(executor), [this] {
        Round();
        return kInterval;
      }) {}

void WriterWatch::Round() {
  std::set<std::pair<std::string, uint32_t>> watched;
  const v1::ClusterMap map = view_->Current();
  for (const MultiIngests::WatchedWriter& w : multi_->WritersToWatch()) {
    if (task_.stopping()) return;
    if (w.node == view_->self_id()) continue;
    const auto key = std::make_pair(w.ingest_id, w.writer);
    watched.insert(key);
    const v1::NodeInfo* node = FindNode(map, w.node);
    std::string silence = "not in the cluster map";
    if (node != nullptr) {
      v1::FindIngestRequest request;
      request.set_ingest_id(w.ingest_id);
      request.set_part(true);
      request.set_writer(w.writer);
      v1::FindIngestReply reply;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + kAskTimeout);
      const grpc::Status s = peers_->Peer(*node)->FindIngest(&context, request, &reply);
      if (s.ok() && !reply.open()) {
        multi_->WriterLost(w.ingest_id, w.writer, w.node,
                           "the node says it is not running there (it restarted, or lost it)");
        silent_since_.erase(key);
        continue;
      }
      if (s.ok()) {
        silent_since_.erase(key);
        continue;
      }
      silence = s.error_message();
    }
    const auto now = std::chrono::steady_clock::now();
    const auto since = silent_since_.try_emplace(key, now).first->second;
    if (now - since >= kSilentFor) {
      multi_->WriterLost(w.ingest_id, w.writer, w.node,
                         "the node has not answered for " + std::to_string(kSilentFor.count() / 1000) + " s (" +
                             silence.substr(0, 200) + ")");
      silent_since_.erase(key);
    } else if (since == now) {
      spdlog::warn("ingest {}: writer {}'s node {} does not answer ({}); the ingest is aborted if it has not in {} s",
                   w.ingest_id, w.writer, w.node, silence.substr(0, 200), kSilentFor.count() / 1000);
    }
  }
  std::erase_if(silent_since_, [&](const auto& e) { return watched.count(e.first) == 0; });
}

}  // namespace strata
