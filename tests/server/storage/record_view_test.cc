// ParseRecord reads a record's serving fields from the encoded header with
// protobuf's wire-format reader: these tests hold it to what protobuf's own
// parser makes of the same bytes, including encodings our writer never
// produces but the format allows.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/checksum.h"
#include "common/little_endian.h"
#include "server/storage/shard_format.h"

namespace strata {
namespace {

using google::protobuf::internal::WireFormatLite;

// A raw record (length prefix to checksum) around `header` and `payload`.
std::string RawRecord(const std::string& header, const std::string& payload) {
  std::string raw;
  PutU32(&raw, static_cast<uint32_t>(header.size()));
  raw += header;
  raw += payload;
  PutU64(&raw, Checksum64(raw));
  return raw;
}

// Encodes fields by hand, the way another protobuf writer might.
class HeaderBytes {
 public:
  HeaderBytes& Varint(int field, uint64_t v) {
    WireFormatLite::WriteUInt64(field, v, &out_);
    return *this;
  }
  HeaderBytes& String(int field, const std::string& s) {
    WireFormatLite::WriteString(field, s, &out_);
    return *this;
  }
  HeaderBytes& Packed(int field, const std::vector<uint64_t>& values) {
    std::string body;
    {
      google::protobuf::io::StringOutputStream s(&body);
      google::protobuf::io::CodedOutputStream c(&s);
      for (uint64_t v : values) c.WriteVarint64(v);
    }
    return String(field, body);
  }
  std::string bytes() {
    out_.Trim();
    return buffer_;
  }

 private:
  std::string buffer_;
  google::protobuf::io::StringOutputStream stream_{&buffer_};
  google::protobuf::io::CodedOutputStream out_{&stream_};
};

// The serving fields of `view` equal those protobuf parses from its header.
void ExpectViewMatchesMessage(const RecordView& view) {
  v1::RecordHeader h;
  ASSERT_TRUE(view.ParseHeader(&h).ok());
  EXPECT_EQ(view.id, h.id());
  EXPECT_EQ(view.label, h.label());
  EXPECT_EQ(view.stratum, h.stratum());
  ASSERT_EQ(view.field_names.size(), static_cast<size_t>(h.field_names_size()));
  for (int i = 0; i < h.field_names_size(); ++i) EXPECT_EQ(view.field_names[i], h.field_names(i));
  ASSERT_EQ(view.field_sizes.size(), static_cast<size_t>(h.field_sizes_size()));
  for (int i = 0; i < h.field_sizes_size(); ++i) EXPECT_EQ(view.field_sizes[i], h.field_sizes(i));
}

TEST(RecordViewTest, ServingFieldsAreViewsAndKeyAndAttributesStayEncoded) {
  v1::RecordHeader h;
  h.set_id(7);
  h.set_key("sample-0007");
  h.set_label("cat");
  h.set_stratum("cat|night");
  (*h.mutable_attributes())["source"] = "camera-3";
  (*h.mutable_attributes())["split"] = "train";
  h.add_field_names("jpg");
  h.add_field_names("cls");
  h.add_field_sizes(5);
  h.add_field_sizes(3);
  const std::string raw = RawRecord(h.SerializeAsString(), "imagecat");

  RecordView view;
  ASSERT_TRUE(ParseRecord(raw, 7, &view).ok());
  ExpectViewMatchesMessage(view);
  EXPECT_EQ(view.field("jpg"), "image");
  EXPECT_EQ(view.field("cls"), "cat");
  // The views point into the raw bytes: nothing was copied.
  EXPECT_GE(view.label.data(), raw.data());
  EXPECT_LT(view.label.data(), raw.data() + raw.size());
  v1::RecordHeader whole;
  ASSERT_TRUE(view.ParseHeader(&whole).ok());
  EXPECT_EQ(whole.key(), "sample-0007");
  EXPECT_EQ(whole.attributes().at("source"), "camera-3");
}

TEST(RecordViewTest, AcceptsEveryEncodingProtobufAccepts) {
  // Fields out of order, a repeated singular field (the last wins), field
  // sizes unpacked and packed in two runs, and fields this version does not know.
  const std::string header = HeaderBytes()
                                 .Varint(7, 2)
                                 .String(3, "first")
                                 .String(6, "a")
                                 .Varint(99, 12345)
                                 .String(98, "unknown")
                                 .Packed(7, {1, 3})
                                 .String(6, "b")
                                 .String(6, "c")
                                 .Varint(1, 5)
                                 .String(3, "last")
                                 .String(4, "s")
                                 .bytes();
  const std::string raw = RawRecord(header, "abbccc");  // the views point into it
  RecordView view;
  ASSERT_TRUE(ParseRecord(raw, 5, &view).ok());
  ExpectViewMatchesMessage(view);
  EXPECT_EQ(view.label, "last");
  EXPECT_EQ(view.field("a"), "ab");
  EXPECT_EQ(view.field("b"), "b");
  EXPECT_EQ(view.field("c"), "ccc");
}

TEST(RecordViewTest, MalformedHeaderWithAGoodChecksumIsCorruption) {
  const std::string good = HeaderBytes().Varint(1, 5).String(3, "label").Packed(7, {4}).bytes();
  std::vector<std::string> bad = {
      good.substr(0, good.size() - 1),            // cut inside the packed sizes
      good + std::string("\x1a\x7f", 2),          // a string longer than the header
      good + std::string("\x80", 1),              // a tag cut in its varint
      good + std::string("\x00", 1),              // tag 0
      good + std::string("\x3a\x02\xff\xff", 4),  // packed sizes with a cut varint
      good + std::string("\x0f", 1),              // wire type 7
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    RecordView view;
    view.label = "left over";
    const Status s = ParseRecord(RawRecord(bad[i], "data"), 5, &view);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_TRUE(view.label.empty());
    EXPECT_TRUE(view.payload.empty());
    EXPECT_TRUE(view.field_sizes.empty());
  }
  RecordView view;
  EXPECT_TRUE(ParseRecord(RawRecord(good, "data"), 5, &view).ok());
}

TEST(RecordViewTest, WrongIdOrSizesAreCorruption) {
  const std::string header = HeaderBytes().Varint(1, 5).Packed(7, {2, 2}).bytes();
  RecordView view;
  EXPECT_TRUE(ParseRecord(RawRecord(header, "data"), 5, &view).ok());
  EXPECT_TRUE(ParseRecord(RawRecord(header, "data"), 6, &view).IsCorruption());
  EXPECT_TRUE(ParseRecord(RawRecord(header, "dat"), 5, &view).IsCorruption());
  EXPECT_TRUE(ParseRecord(RawRecord(header, "datax"), 5, &view).IsCorruption());
}

TEST(RecordViewTest, ReusedViewKeepsNoFieldsOfTheRecordBefore) {
  const std::string two = HeaderBytes().Varint(1, 1).String(6, "x").String(6, "y").Packed(7, {1, 1}).bytes();
  const std::string one = HeaderBytes().Varint(1, 2).String(6, "z").Packed(7, {2}).bytes();
  const std::string first = RawRecord(two, "ab"), second = RawRecord(one, "cd");
  RecordView view;
  ASSERT_TRUE(ParseRecord(first, 1, &view).ok());
  ASSERT_TRUE(ParseRecord(second, 2, &view).ok());
  ASSERT_EQ(view.field_names.size(), 1u);
  EXPECT_EQ(view.field("z"), "cd");
  EXPECT_TRUE(view.field("x").empty());
}

}  // namespace
}  // namespace strata
