// A folder tree as a sample source: one file, one sample, labelled by its
// first-level sub-folder.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "client/ingest/sources_internal.h"

namespace strata::ingest_internal {
namespace {

namespace fs = std::filesystem;

struct FolderFile {
  fs::path relative;  // to the root
  uint64_t size = 0;  // 0 when it could not be stat'ed; reading it says why
};

// Appends the files below root/rel, skipping hidden entries. Symlinks are
// followed; `ancestors` holds the canonical directories being walked, so that
// a link back up the tree is reported instead of walked forever.
Status Walk(const fs::path& root, const fs::path& rel, std::vector<fs::path>* ancestors,
            std::vector<FolderFile>* files) {
  const fs::path dir = rel.empty() ? root : root / rel;
  std::error_code ec;
  fs::path canonical = fs::canonical(dir, ec);
  if (ec) return ErrnoStatus(dir.string(), ec.value());
  if (std::find(ancestors->begin(), ancestors->end(), canonical) != ancestors->end()) {
    return Status::InvalidArgument("symlink cycle at " + dir.string());
  }
  ancestors->push_back(std::move(canonical));

  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path name = it->path().filename();
    if (name.native().starts_with('.')) continue;
    std::error_code entry_ec;
    const fs::file_status st = it->status(entry_ec);  // follows symlinks
    if (fs::is_directory(st)) {
      STRATA_RETURN_IF_ERROR(Walk(root, rel / name, ancestors, files));
    } else if (fs::is_regular_file(st)) {
      const uintmax_t size = it->file_size(entry_ec);
      files->push_back({rel / name, entry_ec ? 0 : size});
    } else if (entry_ec) {
      // A dangling symlink or an entry we may not stat: keep it, so that
      // reading it fails with an error that names it.
      files->push_back({rel / name, 0});
    }  // fifos, sockets and devices are not samples
  }
  if (ec) return ErrnoStatus(dir.string(), ec.value());
  ancestors->pop_back();
  return Status::OK();
}

class FolderSource final : public SampleSource {
 public:
  FolderSource(std::string root, std::vector<FolderFile> files, uint64_t total_bytes)
      : root_(std::move(root)), source_name_(SourceName(root_)), files_(std::move(files)), total_bytes_(total_bytes) {}

  Status Next(Sample* sample) override {
    if (next_ == files_.size()) return Status::OutOfRange("end of folder " + root_);
    const fs::path& rel = files_[next_].relative;
    *sample = Sample();
    Field& field = sample->fields.emplace_back();
    field.name = FieldNameFor(rel);
    STRATA_RETURN_IF_ERROR(ReadWholeFile((fs::path(root_) / rel).string(), &field.data));
    ++next_;
    bytes_read_ += field.data.size();
    sample->key = (rel.parent_path() / rel.stem()).generic_string();
    if (rel.has_parent_path()) sample->label = rel.begin()->string();
    AddSourceAttribute(source_name_, sample);
    return Status::OK();
  }

  uint64_t total_bytes() const override { return total_bytes_; }
  uint64_t bytes_read() const override { return bytes_read_; }
  std::string description() const override { return "folder " + root_; }

 private:
  const std::string root_;
  const std::string source_name_;
  const std::vector<FolderFile> files_;  // in sorted path order
  const uint64_t total_bytes_;
  size_t next_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace

Result<std::unique_ptr<SampleSource>> OpenFolderSource(const std::string& path) {
  std::vector<FolderFile> files;
  std::vector<fs::path> ancestors;
  STRATA_RETURN_IF_ERROR(Walk(fs::path(path), fs::path(), &ancestors, &files));
  // Element-wise path order keeps each folder's files together.
  std::sort(files.begin(), files.end(),
            [](const FolderFile& a, const FolderFile& b) { return a.relative < b.relative; });
  uint64_t total = 0;
  for (const FolderFile& f : files) total += f.size;
  return std::unique_ptr<SampleSource>(std::make_unique<FolderSource>(path, std::move(files), total));
}

}  // namespace strata::ingest_internal
