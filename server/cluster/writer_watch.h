// WriterWatch: a dataset home's watch over the nodes its writers' parts run
// on (ingests with several writers, docs/design.md).
//
// A writer whose node crashes mid-part (kill -9, a power cut) never commits
// and never aborts, and its node, restarted, knows nothing of the part: the
// version would wait for it for ever, neither sealable nor deletable. So
// every kInterval the home asks the node of each writer that joined and has
// not committed whether the part still runs there (PeerService.FindIngest
// with `part`). A node that says no (it restarted, or lost the part without
// telling the home) has the ingest aborted for every writer at once; a node
// that does not answer, once it has not for kSilentFor. A writer whose node
// said nothing of itself at its join (a node built before) is not watched,
// nor one whose part runs on the home (its crash is the home's: a home that
// restarts forgets its ingests).
//
// Thread-safety: Round runs on the task's executor, one at a time.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "server/base/periodic_task.h"
#include "server/cluster/cluster_view.h"
#include "server/cluster/multi_ingest.h"
#include "server/cluster/peer_clients.h"

namespace strata {

class WriterWatch {
 public:
  static constexpr std::chrono::milliseconds kInterval{5000};
  static constexpr std::chrono::milliseconds kSilentFor{30000};
  static constexpr std::chrono::milliseconds kAskTimeout{2000};

  // Every pointer must outlive the watch. Its rounds run on `executor`
  // (they block on a peer's answer, kAskTimeout at most each).
  WriterWatch(const ClusterView* view, PeerClients* peers, MultiIngests* multi, boost::asio::any_io_executor executor);

  void Start() { task_.Start(); }
  void Stop() { task_.Stop(); }

 private:
  void Round();

  const ClusterView* view_;
  PeerClients* peers_;
  MultiIngests* multi_;
  // (ingest id, writer) -> since when its node has not answered.
  std::map<std::pair<std::string, uint32_t>, std::chrono::steady_clock::time_point> silent_since_;
  PeriodicTask task_;  // last: stopped before the rest goes
};

}  // namespace strata
