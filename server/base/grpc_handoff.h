// Tells ThreadSanitizer about the ordering gRPC's callback API gives a
// reactor: what a thread did before StartRead, StartWrite,
// StartSendInitialMetadata or Finish happens before the reaction that
// operation leads to (OnReadDone, OnWriteDone, OnDone), on whatever thread
// gRPC runs it. Debian's gRPC is not instrumented and makes that hand-off
// with atomics and futexes TSan cannot see, so a reactor's members written on
// one pool thread before StartRead and read on another after OnReadDone
// would be reported as a race that is not one.
//
// A reactor derives from HandOffVisible<grpc::Server...Reactor<T>>: its calls
// to the Start* operations and Finish go through the versions here, which
// publish what the thread did first; and each reaction it overrides calls
// TakeBackFromGrpc(this) first. Without TSan all of it compiles to the plain
// calls.
#pragma once

#include <utility>

#include "common/sanitizers.h"

#ifdef STRATA_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace strata {

inline void HandOffToGrpc([[maybe_unused]] void* reactor) {
#ifdef STRATA_TSAN
  __tsan_release(reactor);
#endif
}

inline void TakeBackFromGrpc([[maybe_unused]] void* reactor) {
#ifdef STRATA_TSAN
  __tsan_acquire(reactor);
#endif
}

template <typename Reactor>
class HandOffVisible : public Reactor {
 public:
  template <typename... Args>
  void StartRead(Args&&... args) {
    HandOffToGrpc(this);
    Reactor::StartRead(std::forward<Args>(args)...);
  }
  template <typename... Args>
  void StartWrite(Args&&... args) {
    HandOffToGrpc(this);
    Reactor::StartWrite(std::forward<Args>(args)...);
  }
  void StartSendInitialMetadata() {
    HandOffToGrpc(this);
    Reactor::StartSendInitialMetadata();
  }
  template <typename... Args>
  void Finish(Args&&... args) {
    HandOffToGrpc(this);
    Reactor::Finish(std::forward<Args>(args)...);
  }
};

}  // namespace strata
