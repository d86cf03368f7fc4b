#include "server/ingest/ingest_session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "common/dataset_ref.h"
#include "common/ingest_errors.h"
#include "common/mutex.h"
#include "common/wall_clock.h"

namespace strata {

namespace {

constexpr size_t kMaxDuplicateExamples = 5;
constexpr size_t kMaxKeysPerExample = 4;

bool ValidFieldName(const std::string& name) { return IsSimpleName(name, 64); }

// Content identity of a sample: its field names and bytes, not its key or label.
Hash128 ContentOf(const v1::Sample& s) {
  ContentHashStream h;
  for (const auto& f : s.fields()) {
    h.Update(f.name());
    h.Update(std::string_view("\0", 1));
    const uint64_t size = f.data().size();
    h.Update(std::string_view(reinterpret_cast<const char*>(&size), sizeof(size)));
    h.Update(f.data());
  }
  return h.Digest();
}

void CopyCounts(const std::map<std::string, uint64_t>& from, google::protobuf::RepeatedPtrField<v1::StratumCount>* to) {
  for (const auto& [key, count] : from) {
    v1::StratumCount* c = to->Add();
    c->set_key(key);
    c->set_count(count);
  }
}

}  // namespace

Result<std::unique_ptr<IngestSession>> IngestSession::Open(const v1::IngestOptions& options, Catalog* catalog,
                                                           const DataDir* dir, Metrics* metrics,
                                                           const IngestLimits& limits,
                                                           std::unique_ptr<IngestObserver> observer,
                                                           const std::string& coordinator) {
  auto checked = CheckIngestOptions(options, limits);
  if (!checked.ok()) return checked.status();
  const DatasetRef& ref = checked->ref;
  auto created = catalog->CreateVersion(ref.name, ref.version, NewVersionRecord(options, *checked, coordinator));
  if (!created.ok()) return created.status();
  const uint64_t version = created->info().version();
  if (Status s = dir->PrepareVersionDir(ref.name, version); !s.ok()) {
    catalog->AbortVersion(ref.name, version).IgnoreError();  // the directory error is the one to report
    return s;
  }
  metrics->active_ingests.Increment();
  spdlog::info("ingest {}@{}: started (shard target {} bytes)", ref.name, version, checked->shard_target);
  auto session = std::unique_ptr<IngestSession>(new IngestSession(ref.name, version, checked->shard_target,
                                                                  std::move(checked->keyer), catalog, dir, metrics,
                                                                  limits, std::move(observer)));
  session->write_options_ = checked->write_options;
  return session;
}

Result<std::unique_ptr<IngestSession>> IngestSession::OpenPart(const v1::IngestOptions& options, Catalog* catalog,
                                                               const DataDir* dir, Metrics* metrics,
                                                               const IngestLimits& limits,
                                                               std::unique_ptr<IngestObserver> observer,
                                                               IngestPartOptions part) {
  auto checked = CheckIngestOptions(options, limits);
  if (!checked.ok()) return checked.status();
  const DatasetRef& ref = checked->ref;
  if (!ref.version) return Status::InvalidArgument("a part names its version");
  if (part.writers < 1 || part.writers > kMaxIngestWriters || part.writer >= part.writers) {
    return Status::InvalidArgument("writer out of range");
  }
  // Not emptied: other writers' shards, and copies of them, may be here already.
  STRATA_RETURN_IF_ERROR(dir->EnsureVersionDir(ref.name, *ref.version));
  metrics->active_ingests.Increment();
  spdlog::info("ingest {}@{}: writer {} of ingest {} started (shard target {} bytes)", ref.name, *ref.version,
               part.writer, part.ingest_id, checked->shard_target);
  auto session = std::unique_ptr<IngestSession>(new IngestSession(ref.name, *ref.version, checked->shard_target,
                                                                  std::move(checked->keyer), catalog, dir, metrics,
                                                                  limits, std::move(observer)));
  session->write_options_ = checked->write_options;
  session->next_seq_ = part.writer * PartSeqSpan(part.writers);
  session->part_ = std::move(part);
  return session;
}

IngestSession::IngestSession(std::string name, uint64_t version, uint64_t shard_target, StratumKeyer keyer,
                             Catalog* catalog, const DataDir* dir, Metrics* metrics, const IngestLimits& limits,
                             std::unique_ptr<IngestObserver> observer)
    : name_(std::move(name)),
      version_(version),
      shard_target_(shard_target),
      keyer_(std::move(keyer)),
      catalog_(catalog),
      dir_(dir),
      metrics_(metrics),
      limits_(limits),
      observer_(std::move(observer)) {}

IngestSession::~IngestSession() {
  if (!committed_) Abort("the ingest ended before it was committed");
}

Status IngestSession::Validate(const v1::Sample& s) const {
  const std::string who = "sample '" + s.key().substr(0, 200) + "' (#" + std::to_string(samples_) + ")";
  if (s.fields().empty()) return Status::InvalidArgument(who + " has no fields");
  if (s.fields_size() > static_cast<int>(limits_.max_fields)) {
    return Status::InvalidArgument(who + " has more than " + std::to_string(limits_.max_fields) + " fields");
  }
  if (s.label().size() > limits_.max_label_bytes) {
    return Status::InvalidArgument(who + " has a label longer than " + std::to_string(limits_.max_label_bytes) +
                                   " bytes");
  }
  if (s.key().size() > limits_.max_key_bytes) return Status::InvalidArgument(who + " has an over-long key");
  if (s.attributes_size() > static_cast<int>(limits_.max_attributes)) {
    return Status::InvalidArgument(who + " has more than " + std::to_string(limits_.max_attributes) + " attributes");
  }
  std::set<std::string> names;
  for (const auto& f : s.fields()) {
    if (!ValidFieldName(f.name())) {
      return Status::InvalidArgument(who + " has an invalid field name '" + f.name().substr(0, 80) +
                                     "' (use 1-64 letters, digits, '.', '_' or '-')");
    }
    if (!names.insert(f.name()).second) return Status::InvalidArgument(who + " has field '" + f.name() + "' twice");
    if (f.data().size() > limits_.max_field_bytes) {
      return Status::InvalidArgument(who + " field '" + f.name() + "' exceeds " +
                                     std::to_string(limits_.max_field_bytes) + " bytes");
    }
  }
  return Status::OK();
}

Status IngestSession::Add(const v1::Sample& sample) {
  if (committed_ || aborted_) return Status::FailedPrecondition("the ingest is no longer open");
  Status s = Validate(sample);
  if (s.ok()) s = AddValidated(sample);
  if (!s.ok()) {
    s = Explain(s);
    Abort(s.ToString());
  }
  return s;
}

Status IngestSession::Explain(const Status& s) const {
  if (s.ok() || !part_) return s;
  // The home aborted the version for every writer, and this node learnt it
  // (its files went, which is likely what failed here): say so. An operator's
  // `strata rm --abort` deletes it right after.
  auto record = catalog_->GetVersion(name_, version_);
  if (!record.ok()) return s;
  const v1::VersionState state = record->info().state();
  if (state != v1::VERSION_ABORTED && state != v1::VERSION_DELETED) return s;
  return IngestAbortedForAll(part_->ingest_id, s.message());
}

Status IngestSession::AddValidated(const v1::Sample& sample) {
  auto stratum = keyer_.KeyOf(sample);
  if (!stratum.ok()) return stratum.status();
  if (part_) {
    if (samples_ >= kMaxPartSamples) {
      return Status::InvalidArgument("a writer's part holds at most " + std::to_string(kMaxPartSamples) +
                                     " samples; use more writers");
    }
    auto [at, fresh] = ordinal_of_.try_emplace(stratum.value(), static_cast<uint32_t>(part_strata_.size()));
    if (fresh) part_strata_.push_back(stratum.value());
    const uint32_t ordinal = at->second;
    char le[4] = {static_cast<char>(ordinal), static_cast<char>(ordinal >> 8), static_cast<char>(ordinal >> 16),
                  static_cast<char>(ordinal >> 24)};
    ordinals_.append(le, sizeof(le));
  } else if (!index_) {
    auto w = StratumIndexWriter::Create(dir_->VersionDir(name_, version_) + "/" + kStratumIndexFileName);
    if (!w.ok()) return w.status();
    index_ = std::move(w).value();
  }
  if (!writer_) {
    if (part_ && next_seq_ >= (part_->writer + 1) * PartSeqSpan(part_->writers)) {
      return Status::InvalidArgument("a writer's part holds at most " + std::to_string(PartSeqSpan(part_->writers)) +
                                     " shards with " + std::to_string(part_->writers) +
                                     " writers; use a larger --shard-size");
    }
    ShardIdentity id{name_, version_, next_seq_, samples_};
    auto w =
        ShardWriter::Create(dir_->Absolute(dir_->ShardRelativePath(name_, version_, next_seq_)), id, write_options_);
    if (!w.ok()) return w.status();
    writer_ = std::move(w).value();
  }
  const uint64_t id = samples_;
  v1::RecordHeader header;
  header.set_id(id);
  header.set_key(sample.key());
  header.set_label(sample.label());
  header.set_stratum(stratum.value());
  header.mutable_attributes()->insert(sample.attributes().begin(), sample.attributes().end());
  std::vector<std::string_view> fields;
  uint64_t bytes = 0;
  for (const auto& f : sample.fields()) {
    header.add_field_names(f.name());
    header.add_field_sizes(f.data().size());
    fields.push_back(f.data());
    bytes += f.data().size();
  }
  STRATA_RETURN_IF_ERROR(writer_->Append(header, fields));
  if (index_) STRATA_RETURN_IF_ERROR(index_->Add(stratum.value()));

  const Hash128 content = ContentOf(sample);
  auto [it, inserted] = first_by_hash_.try_emplace(content, id);
  if (!inserted) {
    ++duplicates_;
    auto ex = std::find_if(examples_.begin(), examples_.end(), [&](const auto& e) { return e.hash == content; });
    if (ex != examples_.end()) {
      ++ex->count;
      if (ex->keys.size() < kMaxKeysPerExample) ex->keys.push_back(sample.key());
    } else if (examples_.size() < kMaxDuplicateExamples) {
      examples_.push_back({content, it->second, {sample.key()}, 2});
    }
  }
  ++label_counts_[sample.label()];
  ++stratum_counts_[stratum.value()];
  ++samples_;
  payload_bytes_ += bytes;
  metrics_->samples_ingested.Increment();
  metrics_->bytes_ingested.Increment(static_cast<double>(bytes));
  if (writer_->bytes_written() >= shard_target_) STRATA_RETURN_IF_ERROR(FinishShard());
  return Status::OK();
}

Status IngestSession::FinishShard() {
  if (!writer_) return Status::OK();
  const uint64_t first_id = samples_ - writer_->records();
  auto summary = writer_->Finish();
  writer_.reset();
  if (!summary.ok()) return summary.status();
  v1::ShardRecord rec;
  rec.set_path(dir_->ShardRelativePath(name_, version_, next_seq_));
  v1::ShardInfo* info = rec.mutable_info();
  info->set_seq(next_seq_);
  info->set_first_id(first_id);
  info->set_samples(summary->records);
  info->set_bytes(summary->file_bytes);
  info->set_checksum(summary->file_checksum);
  if (!part_) STRATA_RETURN_IF_ERROR(catalog_->PutShard(name_, version_, rec));  // a part's: the home's
  if (observer_) {
    v1::FileRef file;
    file.set_dataset(name_);
    file.set_version(version_);
    file.set_kind(v1::FileRef::SHARD);
    file.set_seq(next_seq_);
    observer_->FileWritten(file, summary->file_bytes);
  }
  shards_.push_back(std::move(rec));
  file_bytes_ += summary->file_bytes;
  ++next_seq_;
  metrics_->shards_written.Increment();
  return Status::OK();
}

Status IngestSession::FinishStratumIndex() {
  if (!index_) return Status::Internal("no stratum index writer");  // Commit refuses an empty ingest first
  auto summary = index_->Finish();
  index_.reset();
  if (!summary.ok()) return summary.status();
  // The index and the catalog's counts come from the same keys; a mismatch is a bug.
  if (summary->keys.size() != stratum_counts_.size()) return Status::Internal("stratum index disagrees with counts");
  size_t i = 0;
  for (const auto& [key, count] : stratum_counts_) {
    if (summary->keys[i] != key || summary->counts[i] != count) {
      return Status::Internal("stratum index disagrees with the count of '" + key + "'");
    }
    ++i;
  }
  index_record_.set_bytes(summary->file_bytes);
  index_record_.set_checksum(summary->checksum);
  if (observer_) {
    v1::FileRef file;
    file.set_dataset(name_);
    file.set_version(version_);
    file.set_kind(v1::FileRef::STRATA_INDEX);
    observer_->FileWritten(file, summary->file_bytes);
  }
  return Status::OK();
}

void IngestSession::FillDuplicateExamples(v1::IngestReply* reply) const {
  for (const auto& ex : examples_) {
    v1::DuplicateGroup* g = reply->add_duplicate_examples();
    g->set_hash_hi(ex.hash.hi);
    g->set_hash_lo(ex.hash.lo);
    g->set_count(ex.count);
    // The first copy's key is in its record; read it back from its shard.
    for (const auto& shard : shards_) {
      const auto& si = shard.info();
      if (ex.first_id < si.first_id() || ex.first_id >= si.first_id() + si.samples()) continue;
      auto reader = ShardReader::Open(dir_->Absolute(shard.path()));
      RecordView view;
      std::string raw;
      v1::RecordHeader header;
      if (reader.ok() && reader.value()->ReadCopy(ex.first_id - si.first_id(), &raw, &view).ok() &&
          view.ParseHeader(&header).ok()) {
        g->add_keys(header.key());
      }
    }
    for (const auto& k : ex.keys) g->add_keys(k);
  }
}

Result<v1::IngestReply> IngestSession::Commit(uint64_t expected_samples) {
  Mutex mu;
  CondVar cv;
  std::optional<Status> copies;  // under mu (a local: the analysis checks members only)
  BeginCommit(expected_samples, [&](Status s) {
    MutexLock lock(&mu);
    copies = std::move(s);
    cv.SignalAll();
  });
  {
    MutexLock lock(&mu);
    cv.Wait(&mu, [&] { return copies.has_value(); });
  }
  return FinishCommit(*copies);
}

void IngestSession::BeginCommit(uint64_t expected_samples, std::function<void(Status)> copies_done) {
  Status s;
  if (committed_ || aborted_) {
    s = Status::FailedPrecondition("the ingest is no longer open");
  } else if (expected_samples != samples_) {
    s = Status::InvalidArgument("the client sent " + std::to_string(expected_samples) + " samples but the server got " +
                                std::to_string(samples_) + "; nothing was sealed");
  } else if (samples_ == 0) {
    s = Status::FailedPrecondition("no samples were sent; an empty dataset cannot be sealed");
  } else {
    s = FinishShard();
    if (s.ok() && !part_) s = FinishStratumIndex();  // a part's strata go to the home
    s = Explain(s);
  }
  // Last: `copies_done` may hand the session to another thread at once.
  if (s.ok() && observer_) {
    observer_->BeforeSeal(std::move(copies_done));
  } else {
    copies_done(std::move(s));
  }
}

Result<v1::IngestReply> IngestSession::FinishCommit(const Status& copies) {
  if (committed_) return Status::FailedPrecondition("the ingest is no longer open");
  if (aborted_ && copies.ok()) return Status::FailedPrecondition("the ingest is no longer open");
  if (!copies.ok()) {
    Abort(copies.ToString());
    return copies;
  }
  auto record = catalog_->GetVersion(name_, version_);
  if (!record.ok()) {
    Abort(record.status().ToString());
    return record.status();
  }
  v1::VersionRecord sealed = std::move(record).value();
  v1::DatasetInfo* info = sealed.mutable_info();
  info->set_state(v1::VERSION_SEALED);
  info->set_samples(samples_);
  info->set_bytes(payload_bytes_);
  info->set_file_bytes(file_bytes_);
  info->set_shards(static_cast<uint32_t>(shards_.size()));
  info->set_duplicate_samples(duplicates_);
  info->set_sealed_unix_ms(UnixNowMs());
  CopyCounts(label_counts_, info->mutable_label_counts());
  CopyCounts(stratum_counts_, info->mutable_stratum_counts());
  *sealed.mutable_strata_index() = index_record_;
  if (Status seal = catalog_->SealVersion(sealed); !seal.ok()) {
    Abort(seal.ToString());
    return seal;
  }
  committed_ = true;
  if (observer_) observer_->AfterSeal(sealed);
  metrics_->active_ingests.Decrement();
  metrics_->versions_sealed.Increment();
  spdlog::info("ingest {}@{}: sealed {} samples, {} payload bytes, {} shards, {} duplicates", name_, version_, samples_,
               payload_bytes_, shards_.size(), duplicates_);
  v1::IngestReply reply;
  *reply.mutable_dataset() = *info;
  FillDuplicateExamples(&reply);
  return reply;
}

Result<v1::IngestPart> IngestSession::FinishPart(const Status& copies) {
  if (!part_ || committed_ || aborted_) return Status::FailedPrecondition("the ingest is no longer open");
  if (!copies.ok()) {
    const Status why = Explain(copies);
    Abort(why.ToString());
    return why;
  }
  v1::IngestPart out;
  out.set_ingest_id(part_->ingest_id);
  out.set_dataset(name_);
  out.set_version(version_);
  out.set_writer(part_->writer);
  for (const auto& shard : shards_) out.add_shard_records(shard.SerializeAsString());
  out.set_samples(samples_);
  out.set_payload_bytes(payload_bytes_);
  out.set_file_bytes(file_bytes_);
  out.set_duplicates(duplicates_);
  CopyCounts(label_counts_, out.mutable_label_counts());
  for (const auto& key : part_strata_) out.add_strata(key);
  out.set_stratum_ordinals(std::move(ordinals_));
  committed_ = true;
  metrics_->active_ingests.Decrement();
  spdlog::info("ingest {}@{}: writer {} committed {} samples, {} payload bytes, {} shards", name_, version_,
               part_->writer, samples_, payload_bytes_, shards_.size());
  return out;
}

void IngestSession::Abort(const std::string& why, std::function<void()> told) {
  if (committed_ || aborted_) {
    if (told && home_answer_) {
      MutexLock lock(&home_answer_->mu);
      if (!home_answer_->answered) {
        home_answer_->waiting.push_back(std::move(told));
        return;
      }
    }
    if (told) told();
    return;
  }
  aborted_ = true;
  writer_.reset();  // removes its temporary file
  index_.reset();   // and the stratum index's
  Status files = dir_->RemoveVersion(name_, version_);
  // A part's version is the home's to abort, for every writer.
  Status meta = part_ ? Status::OK() : catalog_->AbortVersion(name_, version_);
  if (observer_) observer_->AfterAbort();
  metrics_->active_ingests.Decrement();
  metrics_->ingests_aborted.Increment();
  spdlog::warn("ingest {}@{}: aborted after {} samples: {}", name_, version_, samples_, why);
  if (!files.ok()) spdlog::error("ingest {}@{}: {}", name_, version_, files.ToString());
  if (!meta.ok()) spdlog::error("ingest {}@{}: {}", name_, version_, meta.ToString());
  // Last, touching nothing of this session after: `told` may let its owner
  // destroy it on another thread, even before the hook returns (the hook is
  // moved out of the session first).
  if (part_ && part_->on_abort) {
    auto answer = home_answer_ = std::make_shared<HomeAnswer>();
    auto tell_home = std::move(part_->on_abort);
    tell_home(why, [answer, told = std::move(told)] {
      std::vector<std::function<void()>> waiting;
      {
        MutexLock lock(&answer->mu);
        answer->answered = true;
        waiting.swap(answer->waiting);
      }
      for (auto& w : waiting) w();
      if (told) told();
    });
  } else if (told) {
    told();
  }
}

void IngestSession::Withdraw(const std::string& why, std::function<void()> told) {
  if (committed_ || aborted_ || !part_ || !part_->on_withdraw || samples_ > 0) return Abort(why, std::move(told));
  aborted_ = true;
  writer_.reset();  // removes its temporary file, if it had one
  index_.reset();
  metrics_->active_ingests.Decrement();
  spdlog::info("ingest {}@{}: writer {} of ingest {} withdrew before its first sample: {}", name_, version_,
               part_->writer, part_->ingest_id, why);
  // Last, as in Abort: `told` may have the session destroyed.
  auto tell_home = std::move(part_->on_withdraw);
  tell_home(why, std::move(told));
}

}  // namespace strata
