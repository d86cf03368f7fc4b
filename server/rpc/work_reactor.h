// The ServeWork call: one long-lived stream per node for a client that plans
// (docs/design.md, "The client plans"). The client's first message opens the
// stream as StreamBatches would open one with work, after the same checks;
// each later one gives the node the steps it owes next (WorkMore), which the
// reactor appends to the stream (BatchStream::AddWork validates them) and
// builds as they come. A message that is not valid ends the call with
// InvalidArgument. When the client half-closes, the call ends OK once every
// step given has been sent.
//
// One read is outstanding at a time, from the first message to the
// half-close; the batches go out as StreamBatches' do (BatchSender).
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/rpc/stream_reactor.h"

namespace strata {

class WorkReactor final : public BatchSender<grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>> {
 public:
  // Reads the first message; calls->admit opens the stream.
  WorkReactor(const StreamCalls* calls, std::string peer);

  void OnReadDone(bool ok) override;

 private:
  // The first message: opens the stream and starts it, or ends the call.
  void Open(bool ok);

  grpc::ByteBuffer in_;  // the message being read
};

}  // namespace strata
