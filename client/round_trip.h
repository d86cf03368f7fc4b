// Private to libstrata: how far a node is, for the receive window
// (ClientOptions::receive_window_bytes). A fixed HTTP/2 window moves at most
// its size per round trip, which is plenty near a node (1 MiB in 0.2 ms is 5
// GB/s) and too little far from it (1 MiB in 4 ms is 260 MB/s); gRPC's own
// window grows with the measured bandwidth instead.
//
// Thread-safety: free functions; RoundTrip blocks the calling thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>

namespace strata::client_internal {

// The least of `calls` round trips of gRPC's health check on `channel` (the
// node's gRPC server answers it on its own threads; any answer counts, a
// refusal too). nullopt if a call got no answer within `deadline`.
std::optional<std::chrono::microseconds> RoundTrip(const std::shared_ptr<grpc::Channel>& channel, int calls,
                                                   std::chrono::milliseconds deadline);

// The window a stream's calls get, given ClientOptions' `window` and the
// measured round trip: `window` where it moves at least kFixedWindowMinRate
// per round trip (or the round trip is unknown), 0 (gRPC's own) beyond.
inline constexpr double kFixedWindowMinRate = 1e9;  // bytes per second
int WindowFor(int window, std::optional<std::chrono::microseconds> round_trip);

}  // namespace strata::client_internal
