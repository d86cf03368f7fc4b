#include "server/cluster/scrubber.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "server/cluster/file_transfer.h"
#include "server/storage/ec_stripes.h"

namespace strata {

namespace {

// A pause between passes, so an idle node's disk is not read continuously.
constexpr std::chrono::seconds kPassPause{10};

}  // namespace

Scrubber::Scrubber(const LocalFiles* files, const DataDir* dir, Metrics* metrics,
                   std::function<void(const v1::FileRef&)> quarantine, uint64_t bytes_per_sec,
                   boost::asio::any_io_executor executor, StripeDeps stripes)
    : files_(files),
      dir_(dir),
      metrics_(metrics),
      quarantine_(std::move(quarantine)),
      bytes_per_sec_(bytes_per_sec),
      stripes_(stripes),
      limiter_(bytes_per_sec),
      task_(std::move(executor), [this] { return Step(); }) {}

Scrubber::~Scrubber() { Stop(); }

void Scrubber::Start() {
  if (bytes_per_sec_ == 0) return;
  task_.Start();
}

void Scrubber::Stop() {
  limiter_.Stop();  // a slow rate's wait ends now, not at its piece's turn
  task_.Stop();
}

std::chrono::milliseconds Scrubber::Step() {
  if (next_ >= pass_.size()) {  // a new pass
    pass_ = files_->List("", 0);
    next_ = 0;
  }
  if (next_ < pass_.size()) Verify(pass_[next_++]);
  if (next_ < pass_.size()) return std::chrono::milliseconds(0);
  pass_.clear();
  return kPassPause;
}

void Scrubber::Verify(const v1::FileRef& file) {
  const std::string path = dir_->Absolute(dir_->FileRelativePath(file));
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) {
    // Gone since the pass listed it: removed with its version, or lost from
    // under the inventory, which would keep the repairer from fetching it.
    if (files_->Has(file)) {
      spdlog::error("scrub: {} is listed here but gone from disk", FileName(file));
      quarantine_(file);
    }
    return;
  }
  // Paced piece by piece: the reads are spread at the configured rate,
  // never a whole shard at full speed after a long sleep (a burst that
  // took a core from the streams just when a new dataset was first read).
  uint64_t verified = 0;
  const auto pace = [this, &verified](size_t piece) {
    if (!limiter_.Acquire(piece)) return false;  // stopping
    verified += piece;
    return !task_.stopping();
  };
  Status s = VerifyLocalFile(file.kind(), path, pace);
  metrics_->scrubbed_bytes.Increment(static_cast<double>(verified));
  if (s.code() == Code::kCancelled) return;  // stopping
  if (s.IsCorruption()) {
    spdlog::error("scrub: {} is corrupt: {}", FileName(file), s.message());
    quarantine_(file);
  } else if (!s.ok() && !s.IsNotFound()) {
    spdlog::warn("scrub: {}: {}", FileName(file), s.ToString());
  } else if (s.ok() && file.kind() == v1::FileRef::PARITY) {
    CheckParity(file, pace);
  }
}

void Scrubber::CheckParity(const v1::FileRef& file, const std::function<bool(size_t)>& pace) {
  if (stripes_.catalog == nullptr) return;
  auto record = stripes_.catalog->GetVersion(file.dataset(), file.version());
  if (!record.ok() || record->info().state() != v1::VERSION_SEALED || !IsErasureCoded(record->info())) return;
  auto shards = stripes_.catalog->ListShards(file.dataset(), file.version());
  if (!shards.ok() || shards->size() != record->info().shards()) return;
  std::vector<v1::ShardInfo> infos;
  for (const v1::ShardRecord& r : shards.value()) infos.push_back(r.info());
  for (size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].seq() != i) return;  // not the version's shards in order
  }
  auto checked = CheckStripeParity(stripes_.rebuild, record->info(), infos, file, pace);
  metrics_->scrubbed_bytes.Increment(static_cast<double>(checked.value_or(0)));
  if (checked.ok() || checked.status().code() == Code::kCancelled || checked.status().IsNotFound()) return;
  if (checked.status().IsCorruption()) {
    spdlog::error("scrub: {}", checked.status().message());
    metrics_->scrub_parity_mismatches.Increment();
    quarantine_(file);
  } else {
    // A data shard unreadable now (its holder down, or damaged there: its own
    // holder's scrubber finds that): the next pass tries again.
    spdlog::debug("scrub: parity of {} not checked: {}", FileName(file), checked.status().ToString());
  }
}

}  // namespace strata
