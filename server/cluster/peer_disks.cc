#include "server/cluster/peer_disks.h"

#include <spdlog/spdlog.h>

#include "server/cluster/membership.h"

namespace strata {

PeerDisks::PeerDisks(DiskSpace* self, const ClusterView* view, boost::asio::any_io_executor background,
                     std::chrono::milliseconds interval)
    : self_(self), view_(view), interval_(interval), task_(std::move(background), [this] {
        Tick();
        return interval_;
      }) {}

PeerDisks::~PeerDisks() { Stop(); }

void PeerDisks::Start() { task_.Start(); }

void PeerDisks::Stop() { task_.Stop(); }

std::set<std::string> PeerDisks::Full() const {
  std::set<std::string> out = FullNodes(view_->Current());
  // This node's own figure is its last sample, fresher than the map's.
  if (self_->BelowHigh()) {
    out.insert(view_->self_id());
  } else {
    out.erase(view_->self_id());
  }
  return out;
}

void PeerDisks::Tick() {
  const bool was_low = self_->BelowLow();
  const bool was_high = self_->BelowHigh();
  if (Status s = self_->Sample(); !s.ok()) spdlog::warn("disk: {}", s.ToString());
  const DiskFigures mine = self_->Last();
  if (self_->BelowLow() != was_low || self_->BelowHigh() != was_high) {
    spdlog::warn("disk: {} free of {}: {}", FormatBytes(mine.free_bytes), FormatBytes(mine.total_bytes),
                 self_->BelowLow()    ? "below the low watermark, refusing ingests and replicas"
                 : self_->BelowHigh() ? "below the high watermark, taking no new replicas"
                                      : "above the watermarks again");
  }
}

}  // namespace strata
