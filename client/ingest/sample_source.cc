// SampleSource::Open picks a source kind from the path; the helpers the
// sources share live here too.
#include "client/ingest/sample_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "client/ingest/sources_internal.h"
#include "common/input_limits.h"
#include "common/unique_fd.h"

namespace strata {
namespace ingest_internal {
namespace {

namespace fs = std::filesystem;

std::string Lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

Status ReadWholeFile(const std::string& path, std::string* out) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(path, errno);
  if (S_ISDIR(st.st_mode)) return Status::IOError(path + " is a directory");
  constexpr size_t kLimit = InputLimits::kMaxSampleBytes;
  STRATA_RETURN_IF_ERROR(CheckSampleBytes(path, static_cast<uint64_t>(std::max<off_t>(st.st_size, 0))));
  // One byte of slack so that a file of the size fstat saw ends in one pass;
  // a file that grows meanwhile is still read to its end, or the limit.
  out->resize(static_cast<size_t>(std::max<off_t>(st.st_size, 0)) + 1);
  size_t got = 0;
  for (;;) {
    STRATA_RETURN_IF_ERROR(CheckSampleBytes(path, got));
    if (got == out->size()) out->resize(std::min(out->size() * 2, kLimit + 1));
    const ssize_t n = ::read(fd.get(), out->data() + got, out->size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(path, errno);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out->resize(got);
  return Status::OK();
}

std::string FieldNameFor(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext.size() <= 1 ? std::string("bin") : Lowercase(ext.substr(1));
}

std::string SourceName(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) p = path;
  p = p.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "/data/cats/"
  return p.filename().string();
}

void AddSourceAttribute(const std::string& source_name, Sample* sample) {
  sample->attributes.insert({"source", source_name});  // keeps an existing one
}

std::string JsonAttributeText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ingest_internal

Result<std::unique_ptr<SampleSource>> SampleSource::Open(const std::string& path) {
  namespace fs = std::filesystem;
  using ingest_internal::ManifestFormat;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) return ErrnoStatus(path, ENOENT);
  if (ec) return ErrnoStatus(path, ec.value());
  if (fs::is_directory(st)) return ingest_internal::OpenFolderSource(path);

  const std::string name = ingest_internal::Lowercase(fs::path(path).filename().string());
  if (name.ends_with(".csv")) {
    return ingest_internal::OpenManifestSource(path, ManifestFormat::kCsv);
  }
  if (name.ends_with(".jsonl")) {
    return ingest_internal::OpenManifestSource(path, ManifestFormat::kJsonl);
  }
  if (name.ends_with(".tar") || name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
    return ingest_internal::OpenTarSource(path);
  }
  return Status::InvalidArgument("unsupported source " + path +
                                 " (expected a directory, .csv, .jsonl, .tar, .tar.gz or .tgz)");
}

}  // namespace strata
