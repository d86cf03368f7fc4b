// Private to strata: the public API's plain types (client/include/strata/)
// to and from the wire messages (proto/strata/v1/). The client converts at
// its gRPC edge; the CLI and the Python module use these to print a reply as
// JSON or a dict with the wire's field names.
//
// Every conversion keeps every field: FromProto(ToProto(x)) == x and
// ToProto(FromProto(m)) equals m for the messages below (with their
// sub-messages present). Enum values the public enums do not name pass
// through unchanged.
#pragma once

#include "strata/client.h"
#include "strata/v1/admin.pb.h"
#include "strata/v1/cluster.pb.h"
#include "strata/v1/data.pb.h"
#include "strata/v1/types.pb.h"

namespace strata::client_internal {

v1::SamplerSpec ToProto(const SamplerSpec& spec);
SamplerSpec FromProto(const v1::SamplerSpec& spec);
v1::Remainder ToProto(Remainder remainder);

// Fills *out (cleared first), reusing its allocated fields.
void ToProto(const Sample& sample, v1::Sample* out);
Sample FromProto(const v1::Sample& sample);

v1::IngestOptions ToProto(const IngestOptions& options);
IngestOptions FromProto(const v1::IngestOptions& options);

v1::DatasetInfo ToProto(const DatasetInfo& info);
DatasetInfo FromProto(const v1::DatasetInfo& info);
v1::DescribeDatasetReply ToProto(const DatasetDescription& description);
DatasetDescription FromProto(const v1::DescribeDatasetReply& reply);
v1::IngestReply ToProto(const IngestSummary& summary);
IngestSummary FromProto(const v1::IngestReply& reply);

v1::StatusReply ToProto(const NodeStatus& status);
NodeStatus FromProto(const v1::StatusReply& reply);
v1::ClusterMap ToProto(const ClusterMap& map);
ClusterMap FromProto(const v1::ClusterMap& map);
v1::FileRef ToProto(const FileRef& file);
FileRef FromProto(const v1::FileRef& file);

}  // namespace strata::client_internal
