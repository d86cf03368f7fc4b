#include "server/cluster/multi_ingest.h"

#include <google/protobuf/util/message_differencer.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "common/dataset_ref.h"
#include "common/ingest_errors.h"
#include "common/wall_clock.h"
#include "server/cluster/ingest_coordinator.h"
#include "server/cluster/ingest_replication.h"
#include "server/cluster/request_validation.h"
#include "server/ingest/stratum_index_writer.h"

namespace strata {

namespace {

constexpr size_t kMaxIngests = 4096;  // entries kept, sealed and aborted ones included

// The options every writer of one ingest must share (all but the writer) in
// which `a` and `b` differ, by name: "" if none.
std::string Differing(const v1::IngestOptions& a, const v1::IngestOptions& b) {
  std::string out;
  const google::protobuf::Descriptor* d = v1::IngestOptions::descriptor();
  google::protobuf::util::MessageDifferencer differ;
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->number() == v1::IngestOptions::kWriterFieldNumber) continue;
    if (!differ.CompareWithFields(a, b, {f}, {f})) {
      out += (out.empty() ? "" : ", ") + f->name();
    }
  }
  return out;
}

uint32_t Ordinal(const std::string& ordinals, uint64_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(ordinals.data() + 4 * i);
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

MultiIngests::MultiIngests(Deps deps, IngestLimits limits) : d_(deps), limits_(limits) {}

Result<v1::JoinIngestReply> MultiIngests::Join(const v1::IngestOptions& options, JoinMode mode,
                                               const std::string& writer_node) {
  if (!ValidIngestId(options.ingest_id())) {
    return Status::InvalidArgument("an ingest id is 1 to 128 letters, digits, '.', '_' or '-'");
  }
  if (options.writers() < 1 || options.writers() > kMaxIngestWriters || options.writer() >= options.writers()) {
    return Status::InvalidArgument("writer " + std::to_string(options.writer()) + " of " +
                                   std::to_string(options.writers()) + ": writers must be 1 to " +
                                   std::to_string(kMaxIngestWriters) + " and the writer below them");
  }
  if (options.ec_data() != 0 || options.ec_parity() != 0) {
    return Status::InvalidArgument("an erasure coded version is written by one writer (leave out --writers)");
  }
  auto ref = ParseDatasetRef(options.dataset());
  if (!ref.ok()) return ref.status();
  if (ref->version) return Status::InvalidArgument("an ingest with several writers names the dataset only, not @N");
  const std::string& self = d_.view->self_id();
  const v1::ClusterMap map = d_.view->Current();
  // Before a number may be taken (IngestCoordinator::Start says why); not
  // under the lock, which the other writers' joins wait on.
  if (mode != JoinMode::kOpenOnly && d_.versions != nullptr) d_.versions->CatchUp(ref->name);
  MutexLock lock(&mu_);
  auto it = entries_.find(options.ingest_id());
  if (it == entries_.end()) {
    // An ingest open here is joined here even when the home has moved since;
    // only the home creates one.
    if (mode == JoinMode::kOpenOnly) {
      return Status::NotFound("ingest " + options.ingest_id() + " is not open at " + self);
    }
    auto home = DatasetHome(ref->name, map);
    if (!home.ok()) return home.status();
    if ((*home)->id() != self) {
      return Status::FailedPrecondition("ingests of dataset '" + ref->name + "' are coordinated by " + (*home)->id());
    }
    if (entries_.size() >= kMaxIngests) {
      // Forget a finished ingest; refuse when every one is still open.
      auto done = std::find_if(entries_.begin(), entries_.end(),
                               [](const auto& e) { return e.second.sealed || !e.second.aborted.empty(); });
      if (done == entries_.end()) return Status::ResourceExhausted("too many ingests with several writers are open");
      entries_.erase(done);
    }
    auto resolved = ResolveIngestOptions(options, map, self);
    if (!resolved.ok()) return resolved.status();
    uint64_t number = 0;
    if (d_.numbers != nullptr) {
      auto n = d_.numbers->Next(ref->name, self);
      if (!n.ok()) return n.status();
      number = n.value();
    }
    auto checked = CheckIngestOptions(resolved.value(), limits_);
    if (!checked.ok()) return checked.status();
    auto created = d_.catalog->CreateVersion(ref->name, number != 0 ? std::optional<uint64_t>(number) : std::nullopt,
                                             NewVersionRecord(resolved.value(), *checked, self));
    if (!created.ok()) return created.status();
    Entry entry;
    entry.name = ref->name;
    entry.version = created->info().version();
    entry.options = std::move(resolved).value();
    entry.options.set_dataset(ref->name);
    entry.joined.assign(options.writers(), false);
    entry.writer_nodes.assign(options.writers(), "");
    entry.shards.resize(options.writers());
    if (Status s = d_.dir->PrepareVersionDir(entry.name, entry.version); !s.ok()) {
      d_.catalog->AbortVersion(entry.name, entry.version).IgnoreError();
      return s;
    }
    spdlog::info("ingest {}@{}: {} writers (ingest {})", entry.name, entry.version, options.writers(),
                 options.ingest_id());
    it = entries_.emplace(options.ingest_id(), std::move(entry)).first;
  }
  Entry& e = it->second;
  if (!e.aborted.empty()) return IngestAborted(it->first, e.aborted);
  if (e.sealed) return Status::FailedPrecondition("ingest " + it->first + " is already sealed");
  v1::IngestOptions mine = options;
  if (mine.replication() == 0) mine.set_replication(e.options.replication());  // as the first join resolved 0
  if (const std::string differing = e.name != ref->name ? "dataset" : Differing(mine, e.options); !differing.empty()) {
    return Status::InvalidArgument("writer " + std::to_string(options.writer()) + " of ingest " + it->first +
                                   " brings other options than the first writer's: " + differing +
                                   " (every writer must give the same ones)");
  }
  if (e.joined[options.writer()]) {
    return Status::AlreadyExists("writer " + std::to_string(options.writer()) + " of ingest " + it->first +
                                 " has already joined");
  }
  e.joined[options.writer()] = true;
  e.writer_nodes[options.writer()] = writer_node;
  v1::JoinIngestReply reply;
  reply.set_version(e.version);
  *reply.mutable_options() = e.options;
  reply.mutable_options()->set_writer(options.writer());
  return reply;
}

Result<std::vector<v1::ShardRecord>> MultiIngests::CheckPart(const Entry& e, const v1::IngestPart& part) const {
  const std::string who = "writer " + std::to_string(part.writer()) + "'s part";
  if (part.samples() == 0) return Status::InvalidArgument(who + " has no samples");
  if (part.samples() > kMaxPartSamples) return Status::InvalidArgument(who + " has too many samples");
  if (part.stratum_ordinals().size() != 4 * part.samples()) {
    return Status::InvalidArgument(who + " has " + std::to_string(part.stratum_ordinals().size() / 4) + " strata for " +
                                   std::to_string(part.samples()) + " samples");
  }
  if (part.strata_size() == 0 || static_cast<uint64_t>(part.strata_size()) > part.samples()) {
    return Status::InvalidArgument(who + " names an impossible number of strata");
  }
  for (const auto& key : part.strata()) {
    if (key.size() > limits_.max_key_bytes) return Status::InvalidArgument(who + " has an over-long stratum key");
  }
  for (uint64_t i = 0; i < part.samples(); ++i) {
    if (Ordinal(part.stratum_ordinals(), i) >= static_cast<uint32_t>(part.strata_size())) {
      return Status::InvalidArgument(who + " has a sample in no stratum it names");
    }
  }
  uint64_t labelled = 0;
  for (const auto& c : part.label_counts()) {
    if (c.key().size() > limits_.max_label_bytes) return Status::InvalidArgument(who + " has an over-long label");
    labelled += c.count();
  }
  if (labelled != part.samples()) return Status::InvalidArgument(who + "'s label counts do not add up");
  std::vector<v1::ShardRecord> shards;
  const uint64_t span = PartSeqSpan(static_cast<uint32_t>(e.joined.size()));
  const uint64_t first_seq = part.writer() * span;
  uint64_t next_id = 0, next_seq = first_seq;
  for (const auto& bytes : part.shard_records()) {
    v1::ShardRecord rec;
    if (!rec.ParseFromString(bytes)) return Status::InvalidArgument(who + " has an unreadable shard record");
    const v1::ShardInfo& info = rec.info();
    if (info.seq() < next_seq || info.seq() >= first_seq + span) {
      return Status::InvalidArgument(who + " has shard " + std::to_string(info.seq()) + " out of its range or order");
    }
    if (info.first_id() != next_id || info.samples() == 0) {
      return Status::InvalidArgument(who + " has shard " + std::to_string(info.seq()) + " with ids out of order");
    }
    next_seq = info.seq() + 1;
    next_id += info.samples();
    // The path is the home's own, from the shard's identity: never a sender's.
    rec.set_path(d_.dir->ShardRelativePath(e.name, e.version, info.seq()));
    shards.push_back(std::move(rec));
  }
  if (next_id != part.samples()) return Status::InvalidArgument(who + "'s shards do not hold its samples");
  return shards;
}

Result<v1::CommitPartReply> MultiIngests::Commit(const v1::IngestPart& part) {
  MutexLock lock(&mu_);
  auto it = entries_.find(part.ingest_id());
  if (it == entries_.end()) {
    return Status::FailedPrecondition("ingest " + part.ingest_id().substr(0, 128) +
                                      " is unknown here (its coordinator may have restarted): write it again");
  }
  Entry& e = it->second;
  if (!e.aborted.empty()) return IngestAborted(it->first, e.aborted);
  if (e.sealed) return Status::FailedPrecondition("ingest " + it->first + " is already sealed");
  if (part.dataset() != e.name || part.version() != e.version || part.writer() >= e.joined.size() ||
      !e.joined[part.writer()]) {
    return Status::InvalidArgument("the part names another version or a writer that did not join ingest " + it->first);
  }
  if (e.parts.count(part.writer()) != 0) {
    return Status::AlreadyExists("writer " + std::to_string(part.writer()) + " has already committed");
  }
  auto shards = CheckPart(e, part);
  if (!shards.ok()) {
    AbortLocked(&e, shards.status().ToString()).IgnoreError();
    return shards.status();
  }
  e.shards[part.writer()] = std::move(shards).value();
  e.parts.emplace(part.writer(), part);
  v1::CommitPartReply reply;
  reply.set_writers_committed(static_cast<uint32_t>(e.parts.size()));
  if (e.parts.size() < e.joined.size()) {
    auto record = d_.catalog->GetVersion(e.name, e.version);
    if (!record.ok()) return record.status();
    *reply.mutable_dataset() = record->info();
    spdlog::info("ingest {}@{}: writer {} committed ({} of {})", e.name, e.version, part.writer(), e.parts.size(),
                 e.joined.size());
    return reply;
  }
  auto sealed = Seal(&e);
  if (!sealed.ok()) {
    AbortLocked(&e, sealed.status().ToString()).IgnoreError();
    return sealed.status();
  }
  *reply.mutable_dataset() = std::move(sealed).value();
  return reply;
}

Result<v1::DatasetInfo> MultiIngests::Seal(Entry* e) {
  // Dense ids in writer order: writer w's part-local ids move up by the
  // samples of the writers before it.
  uint64_t base = 0, payload = 0, file_bytes = 0, duplicates = 0;
  uint32_t shard_count = 0;
  std::map<std::string, uint64_t> labels;
  for (uint32_t w = 0; w < e->joined.size(); ++w) {
    const v1::IngestPart& part = e->parts.at(w);
    for (v1::ShardRecord rec : e->shards[w]) {
      rec.mutable_info()->set_first_id(rec.info().first_id() + base);
      rec.mutable_info()->set_id_offset(base);  // its records count from 0 in the part
      STRATA_RETURN_IF_ERROR(d_.catalog->PutShard(e->name, e->version, rec));
      ++shard_count;
    }
    for (const auto& c : part.label_counts()) labels[c.key()] += c.count();
    base += part.samples();
    payload += part.payload_bytes();
    file_bytes += part.file_bytes();
    duplicates += part.duplicates();
  }
  // The stratum index over the dense ids, sample by sample in id order.
  auto writer = StratumIndexWriter::Create(d_.dir->VersionDir(e->name, e->version) + "/" + kStratumIndexFileName);
  if (!writer.ok()) return writer.status();
  for (uint32_t w = 0; w < e->joined.size(); ++w) {
    const v1::IngestPart& part = e->parts.at(w);
    for (uint64_t i = 0; i < part.samples(); ++i) {
      STRATA_RETURN_IF_ERROR((*writer)->Add(part.strata(Ordinal(part.stratum_ordinals(), i))));
    }
  }
  auto index = (*writer)->Finish();
  if (!index.ok()) return index.status();
  auto record = d_.catalog->GetVersion(e->name, e->version);
  if (!record.ok()) return record.status();
  v1::VersionRecord sealed = std::move(record).value();
  v1::DatasetInfo* info = sealed.mutable_info();
  info->set_state(v1::VERSION_SEALED);
  info->set_samples(base);
  info->set_bytes(payload);
  info->set_file_bytes(file_bytes);
  info->set_shards(shard_count);
  info->set_duplicate_samples(duplicates);
  info->set_sealed_unix_ms(UnixNowMs());
  for (const auto& [key, count] : labels) {
    auto* c = info->add_label_counts();
    c->set_key(key);
    c->set_count(count);
  }
  for (size_t k = 0; k < index->keys.size(); ++k) {  // the index counted them, in the canonical order
    auto* c = info->add_stratum_counts();
    c->set_key(index->keys[k]);
    c->set_count(index->counts[k]);
  }
  sealed.mutable_strata_index()->set_bytes(index->file_bytes);
  sealed.mutable_strata_index()->set_checksum(index->checksum);
  // The index goes to every node as any ingest's does; the parts' shards were
  // copied by their writers' nodes before they committed.
  auto observer = d_.coordinator->Observer(e->options);
  v1::FileRef file;
  file.set_dataset(e->name);
  file.set_version(e->version);
  file.set_kind(v1::FileRef::STRATA_INDEX);
  observer->FileWritten(file, index->file_bytes);
  STRATA_RETURN_IF_ERROR(d_.catalog->SealVersion(sealed));
  e->sealed = true;
  observer->AfterSeal(sealed);
  d_.metrics->versions_sealed.Increment();
  spdlog::info("ingest {}@{}: sealed {} samples from {} writers, {} shards", e->name, e->version, base,
               e->joined.size(), shard_count);
  return *info;
}

Status MultiIngests::Abort(const std::string& ingest_id, const std::string& why) {
  MutexLock lock(&mu_);
  auto it = entries_.find(ingest_id);
  if (it == entries_.end()) return Status::OK();
  return AbortLocked(&it->second, why);
}

Result<bool> MultiIngests::AbortVersion(const std::string& name, uint64_t version, const std::string& why) {
  MutexLock lock(&mu_);
  for (auto& [id, e] : entries_) {
    if (e.name != name || e.version != version) continue;
    if (e.sealed) return false;
    STRATA_RETURN_IF_ERROR(AbortLocked(&e, why));
    return true;
  }
  return false;
}

Status MultiIngests::Withdraw(const std::string& ingest_id, uint32_t writer, const std::string& why) {
  MutexLock lock(&mu_);
  auto it = entries_.find(ingest_id);
  if (it == entries_.end()) return Status::OK();
  Entry& e = it->second;
  if (e.sealed || !e.aborted.empty() || writer >= e.joined.size() || !e.joined[writer]) return Status::OK();
  if (e.parts.count(writer) > 0) {
    return Status::FailedPrecondition("writer " + std::to_string(writer) + " of ingest " + ingest_id +
                                      " has committed its part");
  }
  e.joined[writer] = false;
  e.writer_nodes[writer].clear();
  spdlog::info("ingest {}@{}: writer {} withdrew its join and may join again: {}", e.name, e.version, writer,
               why.substr(0, 1000));
  return Status::OK();
}

v1::FindIngestReply MultiIngests::Find(const std::string& ingest_id) const {
  MutexLock lock(&mu_);
  v1::FindIngestReply reply;
  auto it = entries_.find(ingest_id);
  if (it == entries_.end() || it->second.sealed || !it->second.aborted.empty()) return reply;
  reply.set_open(true);
  reply.set_dataset(it->second.name);
  reply.set_version(it->second.version);
  return reply;
}

std::vector<MultiIngests::WatchedWriter> MultiIngests::WritersToWatch() const {
  MutexLock lock(&mu_);
  std::vector<WatchedWriter> out;
  for (const auto& [id, e] : entries_) {
    if (e.sealed || !e.aborted.empty()) continue;
    for (uint32_t w = 0; w < e.joined.size(); ++w) {
      if (e.joined[w] && e.parts.count(w) == 0 && !e.writer_nodes[w].empty()) {
        out.push_back(WatchedWriter{id, w, e.writer_nodes[w]});
      }
    }
  }
  return out;
}

void MultiIngests::WriterLost(const std::string& ingest_id, uint32_t writer, const std::string& node,
                              const std::string& why) {
  MutexLock lock(&mu_);
  auto it = entries_.find(ingest_id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  // Since it was asked: committed (its part now here), withdrawn, or joined
  // again from another node: not lost.
  if (writer >= e.joined.size() || !e.joined[writer] || e.parts.count(writer) != 0 || e.writer_nodes[writer] != node) {
    return;
  }
  AbortLocked(&e, "writer " + std::to_string(writer) + "'s part on " + node + " is gone: " + why).IgnoreError();
}

Status MultiIngests::AbortLocked(Entry* e, const std::string& why) {
  if (e->sealed || !e->aborted.empty()) return Status::OK();
  e->aborted = why.empty() ? "aborted" : why.substr(0, 1000);
  STRATA_RETURN_IF_ERROR(d_.catalog->AbortVersion(e->name, e->version));
  Status removed = d_.versions->RemoveLocalCopy(e->name, e->version);
  d_.metrics->ingests_aborted.Increment();
  spdlog::warn("ingest {}@{}: aborted for all {} writers: {}", e->name, e->version, e->joined.size(), e->aborted);
  // The writers' nodes and the holders of their copies drop their files when
  // the aborted record reaches them (now, or by anti-entropy).
  d_.versions->Broadcast(e->name, e->version);
  return removed;
}

}  // namespace strata
