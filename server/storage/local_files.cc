#include "server/storage/local_files.h"

#include "common/mutex.h"

namespace strata {

Status LocalFiles::Load() {
  auto files = dir_->ScanFiles();
  if (!files.ok()) return files.status();
  MutexLock lock(&mu_);
  files_.clear();
  for (const auto& f : files.value()) files_.insert(KeyOf(f));
  return Status::OK();
}

bool LocalFiles::Has(const v1::FileRef& file) const {
  MutexLock lock(&mu_);
  return files_.count(KeyOf(file)) > 0;
}

void LocalFiles::Add(const v1::FileRef& file) {
  MutexLock lock(&mu_);
  files_.insert(KeyOf(file));
}

void LocalFiles::Remove(const v1::FileRef& file) {
  MutexLock lock(&mu_);
  files_.erase(KeyOf(file));
}

std::vector<v1::FileRef> LocalFiles::List(const std::string& dataset, uint64_t version) const {
  std::vector<v1::FileRef> out;
  MutexLock lock(&mu_);
  for (const auto& [name, v, kind, seq] : files_) {
    if (!dataset.empty() && (name != dataset || (version != 0 && v != version))) continue;
    v1::FileRef f;
    f.set_dataset(name);
    f.set_version(v);
    f.set_kind(static_cast<v1::FileRef::Kind>(kind));
    f.set_seq(seq);
    out.push_back(std::move(f));
  }
  return out;
}

size_t LocalFiles::size() const {
  MutexLock lock(&mu_);
  return files_.size();
}

v1::FileRef IndexRef(const std::string& dataset, uint64_t version) {
  v1::FileRef f;
  f.set_dataset(dataset);
  f.set_version(version);
  f.set_kind(v1::FileRef::STRATA_INDEX);
  return f;
}

std::string FileName(const v1::FileRef& file) {
  std::string s = file.dataset() + "@" + std::to_string(file.version()) + "/";
  if (file.kind() == v1::FileRef::STRATA_INDEX) return s + "strata.idx";
  if (file.kind() == v1::FileRef::PARITY) return s + std::to_string(file.seq()) + ".parity";
  return s + std::to_string(file.seq()) + ".shard";
}

}  // namespace strata
