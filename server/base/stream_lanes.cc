#include "server/base/stream_lanes.h"

#include <algorithm>

namespace strata {

StreamLanes::StreamLanes(uint32_t lanes) : streams_(std::max<uint32_t>(lanes, 1), 0) {
  for (size_t i = 0; i < streams_.size(); ++i) lanes_.push_back(std::make_unique<boost::asio::thread_pool>(1));
}

StreamLanes::~StreamLanes() { Join(); }

uint32_t StreamLanes::Acquire() {
  MutexLock lock(&mu_);
  const auto least = std::min_element(streams_.begin(), streams_.end());
  ++*least;
  return static_cast<uint32_t>(least - streams_.begin());
}

void StreamLanes::Release(uint32_t lane) {
  MutexLock lock(&mu_);
  if (lane < streams_.size() && streams_[lane] > 0) --streams_[lane];
}

uint32_t StreamLanes::streams_on(uint32_t lane) const {
  MutexLock lock(&mu_);
  return lane < streams_.size() ? streams_[lane] : 0;
}

void StreamLanes::Join() {
  for (auto& lane : lanes_) lane->join();
}

}  // namespace strata
