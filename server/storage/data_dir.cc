#include "server/storage/data_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <vector>

#include "common/dataset_ref.h"
#include "server/storage/path_guard.h"

namespace strata {

namespace fs = std::filesystem;

namespace {

Status FsError(const std::string& what, const std::error_code& ec) {
  return Status::IOError(what + ": " + ec.message());
}

}  // namespace

DataDir::DataDir(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

Status DataDir::Init() const {
  std::error_code ec;
  fs::create_directories(root_ + "/shards", ec);
  if (ec) return FsError("cannot create data directory " + root_, ec);
  fs::create_directories(MetaDir(), ec);
  if (ec) return FsError("cannot create " + MetaDir(), ec);
  if (access(root_.c_str(), W_OK) != 0) return ErrnoStatus("data directory " + root_ + " is not writable", errno);
  return Status::OK();
}

std::string DataDir::MetaDir() const { return root_ + "/meta"; }

std::string DataDir::ShardRelativePath(const std::string& name, uint64_t version, uint32_t seq) const {
  char file[32];
  std::snprintf(file, sizeof(file), "%06u.shard", seq);
  return "shards/" + name + "/v" + std::to_string(version) + "/" + file;
}

std::string DataDir::Absolute(const std::string& relative) const { return root_ + "/" + relative; }

std::string DataDir::VersionDir(const std::string& name, uint64_t version) const {
  return root_ + "/shards/" + name + "/v" + std::to_string(version);
}

Status DataDir::PrepareVersionDir(const std::string& name, uint64_t version) const {
  STRATA_RETURN_IF_ERROR(RemoveVersion(name, version));
  return EnsureVersionDir(name, version);
}

Status DataDir::EnsureVersionDir(const std::string& name, uint64_t version) const {
  auto dir = CheckedVersionDir(name, version);
  if (!dir.ok()) return dir.status();
  std::error_code ec;
  fs::create_directories(dir.value(), ec);
  if (ec) return FsError("cannot create " + VersionDir(name, version), ec);
  return Status::OK();
}

Status DataDir::RemoveVersion(const std::string& name, uint64_t version) const {
  auto dir = CheckedVersionDir(name, version);
  if (!dir.ok()) return dir.status();
  constexpr int kRemoveRounds = 5;  // see the header
  std::error_code ec;
  for (int round = 0; round < kRemoveRounds; ++round) {
    ec.clear();
    fs::remove_all(dir.value(), ec);
    if (ec != std::errc::directory_not_empty) break;  // done, or a failure a new round would not mend
  }
  if (ec) return FsError("cannot remove " + VersionDir(name, version), ec);
  return Status::OK();
}

Result<uint64_t> DataDir::RemoveTempFiles() const {
  uint64_t removed = 0;
  std::error_code ec;
  fs::recursive_directory_iterator it(root_ + "/shards", ec), end;
  if (ec) return FsError("cannot scan " + root_ + "/shards", ec);
  std::vector<fs::path> doomed;
  for (; it != end; it.increment(ec)) {
    if (ec) return FsError("cannot scan " + root_ + "/shards", ec);
    if (it->is_regular_file() && it->path().filename().string().rfind(".tmp.", 0) == 0) doomed.push_back(it->path());
  }
  for (const auto& p : doomed) {
    if (fs::remove(p, ec)) ++removed;
  }
  return removed;
}

uint64_t DataDir::ShardBytes() const {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root_ + "/shards", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

std::string DataDir::FileRelativePath(const v1::FileRef& file) const {
  if (file.kind() == v1::FileRef::STRATA_INDEX) {
    return "shards/" + file.dataset() + "/v" + std::to_string(file.version()) + "/strata.idx";
  }
  if (file.kind() == v1::FileRef::PARITY) {
    char name[32];
    std::snprintf(name, sizeof(name), "%06u.parity", file.seq());
    return "shards/" + file.dataset() + "/v" + std::to_string(file.version()) + "/" + name;
  }
  return ShardRelativePath(file.dataset(), file.version(), file.seq());
}

Result<std::string> DataDir::CheckedFilePath(const v1::FileRef& file) const {
  STRATA_RETURN_IF_ERROR(ValidateFileRef(file));
  return ResolveInside(root_, FileRelativePath(file));
}

Result<std::string> DataDir::CheckedVersionDir(const std::string& name, uint64_t version) const {
  STRATA_RETURN_IF_ERROR(ValidateDatasetName(name));
  if (version == 0) return Status::InvalidArgument("dataset versions are numbered from 1");
  return ResolveInside(root_, "shards/" + name + "/v" + std::to_string(version));
}

Result<std::vector<v1::FileRef>> DataDir::ScanFiles() const {
  std::vector<v1::FileRef> out;
  std::error_code ec;
  const fs::path base = root_ + "/shards";
  for (fs::recursive_directory_iterator it(base, ec), end; it != end; it.increment(ec)) {
    if (ec) return FsError("cannot scan " + base.string(), ec);
    if (!it->is_regular_file(ec)) continue;
    const fs::path rel = fs::relative(it->path(), base, ec);
    // <name>/v<version>/<file>
    auto part = rel.begin();
    if (std::distance(rel.begin(), rel.end()) != 3) continue;
    const std::string name = (part++)->string();
    const std::string vdir = (part++)->string();
    const std::string file = part->string();
    if (vdir.size() < 2 || vdir[0] != 'v' || file.rfind(".tmp.", 0) == 0) continue;
    v1::FileRef ref;
    ref.set_dataset(name);
    ref.set_version(std::strtoull(vdir.c_str() + 1, nullptr, 10));
    if (file == "strata.idx") {
      ref.set_kind(v1::FileRef::STRATA_INDEX);
    } else if (file.size() == 12 && file.substr(6) == ".shard") {
      ref.set_kind(v1::FileRef::SHARD);
      ref.set_seq(static_cast<uint32_t>(std::strtoul(file.c_str(), nullptr, 10)));
    } else if (file.size() == 13 && file.substr(6) == ".parity") {
      ref.set_kind(v1::FileRef::PARITY);
      ref.set_seq(static_cast<uint32_t>(std::strtoul(file.c_str(), nullptr, 10)));
    } else {
      continue;
    }
    out.push_back(std::move(ref));
  }
  return out;
}

Status DataDir::Quarantine(const v1::FileRef& file) const {
  auto from = CheckedFilePath(file);
  if (!from.ok()) return from.status();
  std::error_code ec;
  fs::create_directories(root_ + "/quarantine", ec);
  if (ec) return FsError("cannot create " + root_ + "/quarantine", ec);
  std::string flat = FileRelativePath(file);
  for (char& c : flat) {
    if (c == '/') c = '_';
  }
  const std::string to = root_ + "/quarantine/" + std::to_string(std::time(nullptr)) + "-" + flat;
  fs::rename(from.value(), to, ec);
  if (ec) return FsError("cannot quarantine " + FileRelativePath(file), ec);
  return Status::OK();
}

Status DataDir::RemoveFile(const v1::FileRef& file) const {
  auto path = CheckedFilePath(file);
  if (!path.ok()) return path.status();
  std::error_code ec;
  fs::remove(path.value(), ec);
  if (ec) return FsError("cannot remove " + FileRelativePath(file), ec);
  return Status::OK();
}

}  // namespace strata
