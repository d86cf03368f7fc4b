// WebDataset shards: consecutive tar members with one key form one sample.
#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "client/ingest/sources_internal.h"
#include "common/input_limits.h"

namespace strata::ingest_internal {
namespace {

namespace fs = std::filesystem;

constexpr size_t kReadBlockBytes = 256 << 10;
constexpr int64_t kTarBlockBytes = 512;
// A member's declared size is only a hint: a damaged header may claim
// terabytes, so never reserve more than this up front.
constexpr int64_t kMaxReserveBytes = 64 << 20;

struct ArchiveFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveFree>;

Status Damaged(const std::string& path, archive* a) {
  const char* message = archive_error_string(a);
  return Status::InvalidArgument("truncated or damaged tar archive " + path + ": " +
                                 (message != nullptr ? message : "unknown error"));
}

// Splits "dir/000017.seg.png" into key "dir/000017" and field "seg.png".
// False for names WebDataset ignores: no extension, or a hidden base name
// ("._000017.jpg" as macOS tar writes them).
bool SplitMemberName(std::string_view name, std::string* key, std::string* field) {
  while (name.starts_with("./")) name.remove_prefix(2);
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string_view::npos || dot == base || dot + 1 == name.size()) return false;
  key->assign(name.substr(0, dot));
  field->assign(name.substr(dot + 1));
  return true;
}

std::string Trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(begin, end - begin + 1));
}

class TarSource final : public SampleSource {
 public:
  TarSource(std::string path, ArchivePtr archive, uint64_t total_bytes)
      : path_(std::move(path)),
        source_name_(SourceName(path_)),
        archive_(std::move(archive)),
        total_bytes_(total_bytes) {}

  // After an error the archive's state is unknown: every later call repeats it.
  Status Next(Sample* sample) override {
    if (!failed_.ok()) return failed_;
    Status status = ReadSample(sample);
    if (!status.ok() && status.code() != Code::kOutOfRange) failed_ = status;
    return status;
  }

  uint64_t total_bytes() const override { return total_bytes_; }
  uint64_t bytes_read() const override {
    const int64_t n = archive_filter_bytes(archive_.get(), -1);  // raw bytes of the file
    return std::min<uint64_t>(total_bytes_, n > 0 ? static_cast<uint64_t>(n) : 0);
  }
  std::string description() const override { return "tar " + path_; }

 private:
  Status ReadSample(Sample* sample) {
    if (!has_pending_) {
      if (!at_end_) STRATA_RETURN_IF_ERROR(NextMember());
      if (at_end_) return Status::OutOfRange("end of tar " + path_);
    }
    const std::string key = pending_key_;
    if (!seen_keys_.insert(key).second) {
      return Status::InvalidArgument("tar " + path_ + ": the members of key \"" + key + "\" are not adjacent");
    }
    *sample = Sample();
    sample->key = key;
    do {
      STRATA_RETURN_IF_ERROR(ReadPendingMember(sample));
      STRATA_RETURN_IF_ERROR(NextMember());
    } while (has_pending_ && pending_key_ == key);
    SetLabelAndAttributes(sample);
    return Status::OK();
  }

  // Advances to the next member that is a field, leaving its data unread; at
  // the end of the archive sets at_end_ instead.
  Status NextMember() {
    has_pending_ = false;
    for (;;) {
      const int64_t before = archive_filter_bytes(archive_.get(), 0);
      archive_entry* entry = nullptr;
      const int r = archive_read_next_header(archive_.get(), &entry);
      if (r == ARCHIVE_EOF) {
        // libarchive also reports a clean end when the file stops right after
        // a member; only the end-of-archive blocks tell a whole archive.
        if (archive_filter_bytes(archive_.get(), 0) - before < kTarBlockBytes) {
          return Status::InvalidArgument("truncated or damaged tar archive " + path_ + ": no end-of-archive marker");
        }
        at_end_ = true;
        return Status::OK();
      }
      if (r < ARCHIVE_WARN) return Damaged(path_, archive_.get());
      // UTF-8 where libarchive can tell, else the raw bytes of the header.
      const char* name = archive_entry_pathname_utf8(entry);
      if (name == nullptr) name = archive_entry_pathname(entry);
      if (name == nullptr) return Damaged(path_, archive_.get());
      if (archive_entry_filetype(entry) != AE_IFREG || !SplitMemberName(name, &pending_key_, &pending_field_)) {
        // Skipped here rather than inside the next header read, so that the
        // end-of-archive check above measures only what follows the member.
        if (archive_read_data_skip(archive_.get()) < ARCHIVE_WARN) {
          return Damaged(path_, archive_.get());
        }
        continue;
      }
      pending_size_ = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
      has_pending_ = true;
      return Status::OK();
    }
  }

  Status ReadPendingMember(Sample* sample) {
    for (const Field& f : sample->fields) {
      if (f.name == pending_field_) {
        return Status::InvalidArgument("tar " + path_ + ": key \"" + pending_key_ + "\" has two \"" + pending_field_ +
                                       "\" members");
      }
    }
    // A member past a sample's limit is refused before its bytes are held:
    // a sparse member declares any size in a few blocks of archive.
    const std::string member = "tar " + path_ + ": member \"" + pending_key_ + "." + pending_field_ + "\"";
    if (pending_size_ > 0) STRATA_RETURN_IF_ERROR(CheckSampleBytes(member, static_cast<uint64_t>(pending_size_)));
    Field& field = sample->fields.emplace_back();
    field.name = pending_field_;
    std::string* data = &field.data;
    data->reserve(static_cast<size_t>(std::clamp<int64_t>(pending_size_, 0, kMaxReserveBytes)));
    for (;;) {
      const void* block = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      const int r = archive_read_data_block(archive_.get(), &block, &size, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) return Damaged(path_, archive_.get());
      if (offset < 0) return Damaged(path_, archive_.get());
      STRATA_RETURN_IF_ERROR(CheckSampleBytes(member, static_cast<uint64_t>(offset) + size));
      // Sparse members skip their holes: those read as zeros.
      if (offset > 0 && static_cast<uint64_t>(offset) > data->size()) {
        data->resize(static_cast<size_t>(offset));
      }
      data->append(static_cast<const char*>(block), size);
    }
    if (pending_size_ > 0 && static_cast<uint64_t>(pending_size_) > data->size()) {
      data->resize(static_cast<size_t>(pending_size_));  // a trailing hole
    }
    return Status::OK();
  }

  void SetLabelAndAttributes(Sample* sample) const {
    auto& attributes = sample->attributes;
    for (const Field& f : sample->fields) {
      if (f.name == "cls") {
        sample->label = Trim(f.data);
      } else if (f.name == "json") {
        // Not valid JSON: still a field, just no attributes.
        const nlohmann::json object = nlohmann::json::parse(f.data, nullptr, false);
        if (!object.is_object()) continue;
        for (const auto& [name, value] : object.items()) {
          if (value.is_primitive()) attributes[name] = JsonAttributeText(value);
        }
      }
    }
    AddSourceAttribute(source_name_, sample);
  }

  const std::string path_;
  const std::string source_name_;
  ArchivePtr archive_;
  const uint64_t total_bytes_;
  Status failed_;
  bool at_end_ = false;
  // The next member's header has been read and its data not yet.
  bool has_pending_ = false;
  std::string pending_key_;
  std::string pending_field_;
  int64_t pending_size_ = 0;
  std::unordered_set<std::string> seen_keys_;
};

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenTarSource(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return ErrnoStatus(path, ec.value());
  ArchivePtr a(archive_read_new());
  if (a == nullptr) return Status::ResourceExhausted("cannot allocate a tar reader");
  if (archive_read_support_filter_all(a.get()) < ARCHIVE_WARN ||
      archive_read_support_format_tar(a.get()) != ARCHIVE_OK) {
    return Status::Internal("cannot set up a tar reader for " + path);
  }
  if (archive_read_open_filename(a.get(), path.c_str(), kReadBlockBytes) != ARCHIVE_OK) {
    const int err = archive_errno(a.get());
    if (err == ENOENT || err == EACCES || err == EPERM) return ErrnoStatus(path, err);
    return Damaged(path, a.get());
  }
  return std::unique_ptr<SampleSource>(std::make_unique<TarSource>(path, std::move(a), size));
}

}  // namespace strata::ingest_internal
