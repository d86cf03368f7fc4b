#include "client/resume_plan.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstdint>
#include <string>
#include <utility>

#include "client/proto_convert.h"

namespace strata::client_internal {

namespace {

std::string SamplerBytes(const v1::SamplerSpec& spec) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);  // map entries in key order: equal specs, equal tokens
    spec.SerializeToCodedStream(&coded);
  }
  return out;
}

std::string Describe(const v1::SamplerSpec& spec) {
  const std::string text = spec.ShortDebugString();
  return v1::SamplerSpec::Kind_Name(spec.kind()) + (text.empty() ? "" : " {" + text + "}");
}

}  // namespace

void RecordPlan(const StreamOptions& options, ResumeToken* position) {
  position->global_batch = uint64_t{options.batch_size} * options.world;
  position->drop_last = options.remainder == Remainder::kDrop;
  position->sampler = SamplerBytes(ToProto(options.sampler));
}

Status ApplyPlan(const ResumeToken& token, StreamOptions* options) {
  if (!token.complete()) return Status::OK();
  if (options->world == 0) return Status::InvalidArgument("world size must be at least 1");
  if (options->batch_size == 0) {
    if (token.global_batch % options->world != 0) {
      return Status::InvalidArgument("the resume token's global batch of " + std::to_string(token.global_batch) +
                                     " samples does not divide among " + std::to_string(options->world) + " ranks");
    }
    if (token.global_batch / options->world > UINT32_MAX) {
      return Status::InvalidArgument("the resume token's global batch of " + std::to_string(token.global_batch) +
                                     " samples gives each of " + std::to_string(options->world) +
                                     " ranks more than a batch may hold (" + std::to_string(UINT32_MAX) +
                                     " samples): resume on more ranks");
    }
    options->batch_size = static_cast<uint32_t>(token.global_batch / options->world);
  } else if (uint64_t{options->batch_size} * options->world != token.global_batch) {
    return Status::InvalidArgument("the resume token's global batch is " + std::to_string(token.global_batch) +
                                   " samples, not batch size " + std::to_string(options->batch_size) + " x world " +
                                   std::to_string(options->world) + ": leave the batch size out to take the token's");
  }
  v1::SamplerSpec sampler;
  if (!sampler.ParseFromString(token.sampler)) {
    return Status::InvalidArgument("the resume token's sampler is not a valid SamplerSpec");
  }
  const v1::SamplerSpec requested = ToProto(options->sampler);
  if (requested.ByteSizeLong() != 0 && !google::protobuf::util::MessageDifferencer::Equals(requested, sampler)) {
    return Status::InvalidArgument("the resume token's plan uses sampler " + Describe(sampler) +
                                   ", not the requested " + Describe(requested) +
                                   ": leave the sampler out to take the token's");
  }
  if (options->remainder == Remainder::kDrop && !token.drop_last) {
    return Status::InvalidArgument(
        "the resume token's plan keeps the short last batch; drop_last was asked for: leave it out to take the "
        "token's");
  }
  options->sampler = FromProto(sampler);
  options->remainder = token.drop_last ? Remainder::kDrop : Remainder::kShort;
  return Status::OK();
}

}  // namespace strata::client_internal
