// The public types and the wire messages carry the same fields: a message
// with every field set survives proto -> public -> proto unchanged, so a
// field added to the .proto and forgotten in client/proto_convert.cc fails here.
#include "client/proto_convert.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>

namespace strata::client_internal {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Sets every field of `m` (recursively, two elements per repeated field and
// map) to a value that differs from its default and from its neighbours'.
void FillAll(Message* m, int* counter) {
  const google::protobuf::Descriptor* d = m->GetDescriptor();
  const google::protobuf::Reflection* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const int copies = f->is_repeated() ? 2 : 1;
    for (int k = 0; k < copies; ++k) {
      const int v = ++*counter;
      const bool rep = f->is_repeated();
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32: rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v); break;
        case FieldDescriptor::CPPTYPE_INT64: rep ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v); break;
        case FieldDescriptor::CPPTYPE_UINT32:
          rep ? r->AddUInt32(m, f, static_cast<uint32_t>(v)) : r->SetUInt32(m, f, static_cast<uint32_t>(v));
          break;
        case FieldDescriptor::CPPTYPE_UINT64:
          rep ? r->AddUInt64(m, f, static_cast<uint64_t>(v)) : r->SetUInt64(m, f, static_cast<uint64_t>(v));
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE: rep ? r->AddDouble(m, f, v + 0.5) : r->SetDouble(m, f, v + 0.5); break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          rep ? r->AddFloat(m, f, static_cast<float>(v)) : r->SetFloat(m, f, static_cast<float>(v));
          break;
        case FieldDescriptor::CPPTYPE_BOOL: rep ? r->AddBool(m, f, true) : r->SetBool(m, f, true); break;
        case FieldDescriptor::CPPTYPE_ENUM: {
          // The last value the enum names: never the default.
          const auto* e = f->enum_type()->value(f->enum_type()->value_count() - 1);
          rep ? r->AddEnum(m, f, e) : r->SetEnum(m, f, e);
          break;
        }
        case FieldDescriptor::CPPTYPE_STRING:
          rep ? r->AddString(m, f, "s" + std::to_string(v)) : r->SetString(m, f, "s" + std::to_string(v));
          break;
        case FieldDescriptor::CPPTYPE_MESSAGE:
          FillAll(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), counter);
          break;
      }
    }
  }
}

template <typename M>
M Full() {
  M m;
  int counter = 0;
  FillAll(&m, &counter);
  return m;
}

template <typename M>
void ExpectRoundTrip() {
  const M original = Full<M>();
  const M back = ToProto(FromProto(original));
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(original, back)) << M::descriptor()->full_name() << ": " << diff;
}

TEST(ProtoConvertTest, EveryFieldSurvivesARoundTrip) {
  ExpectRoundTrip<v1::SamplerSpec>();
  ExpectRoundTrip<v1::IngestOptions>();
  ExpectRoundTrip<v1::DatasetInfo>();
  ExpectRoundTrip<v1::DescribeDatasetReply>();
  ExpectRoundTrip<v1::IngestReply>();
  ExpectRoundTrip<v1::StatusReply>();
  ExpectRoundTrip<v1::ClusterMap>();
  ExpectRoundTrip<v1::FileRef>();
}

TEST(ProtoConvertTest, SampleSurvivesARoundTripAndReusesTheMessage) {
  const v1::Sample original = Full<v1::Sample>();
  v1::Sample back = Full<v1::Sample>();  // more fields than the sample: the extra ones go
  back.add_fields()->set_name("extra");
  ToProto(FromProto(original), &back);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(original, back)) << back.DebugString();
}

TEST(ProtoConvertTest, PublicValuesMapToTheWireNames) {
  SamplerSpec spec;
  spec.kind = SamplerSpec::Kind::kWeighted;
  spec.weights = {{"cat", 2.0}};
  EXPECT_EQ(ToProto(spec).kind(), v1::SamplerSpec::WEIGHTED);
  EXPECT_EQ(ToProto(spec).weights().at("cat"), 2.0);
  EXPECT_EQ(ToProto(Remainder::kDrop), v1::REMAINDER_DROP);
  IngestOptions o;
  o.write_policy = WritePolicy::kQuorum;
  EXPECT_EQ(ToProto(o).write_policy(), v1::WRITE_QUORUM);
  v1::DatasetInfo info;
  info.set_state(v1::VERSION_SEALED);
  EXPECT_EQ(FromProto(info).state, VersionState::kSealed);
  v1::FileRef file;
  file.set_kind(v1::FileRef::STRATA_INDEX);
  EXPECT_EQ(FromProto(file).kind, FileRef::Kind::kStrataIndex);
  v1::ClusterMap map;
  map.add_nodes()->set_state(v1::NODE_DOWN);
  EXPECT_EQ(FromProto(map).nodes[0].state, NodeState::kDown);
}

}  // namespace
}  // namespace strata::client_internal
