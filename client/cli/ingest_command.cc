// strata ingest: reads samples from folders, manifests and WebDataset tars
// and sends them to a server as one new dataset version.
//
// Every source is opened before anything is sent, and the ingest starts at
// the first sample, so a bad path or an empty source set never creates a
// version. A source error part-way aborts the ingest on the server.
#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/command.h"
#include "client/cli/format.h"
#include "client/cli/progress.h"
#include "client/ingest/sample_source.h"
#include "common/dataset_ref.h"
#include "common/ingest_errors.h"

namespace strata::cli {

namespace {

constexpr size_t kMaxIngestLabelRows = 30;
constexpr size_t kMaxDuplicateExamples = 5;

struct IngestArgs {
  std::vector<std::string> servers;
  std::string dataset;
  std::string shard_size;
  std::vector<std::string> stratify_by;
  std::string time_bucket;  // FIELD:WIDTH
  uint32_t replication = 0;
  std::string write_policy = "sync";
  uint32_t write_quorum = 0;
  std::string compression = "none";
  std::string compression_block;
  std::string redundancy;  // ec:K+M
  uint32_t keep_versions = 0;
  uint32_t writers = 1;
  std::string ingest_id;
  int64_t writer = -1;  // -1: every writer, in this process
  std::vector<std::string> sources;
  bool quiet = false;
};

struct TimeBucket {
  std::string field;
  uint64_t seconds = 0;
};

Result<TimeBucket> ParseTimeBucket(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("invalid time bucket '" + text + "': expected FIELD:WIDTH, e.g. ts:1h");
  }
  auto seconds = ParseDurationSeconds(text.substr(colon + 1));
  if (!seconds.ok()) return seconds.status();
  return TimeBucket{text.substr(0, colon), *seconds};
}

struct CompressionChoice {
  Compression codec = Compression::kNone;
  int level = 0;
};

// "none", "zstd" or "zstd:LEVEL" (1..19).
Result<CompressionChoice> ParseCompression(const std::string& text) {
  if (text == "none") return CompressionChoice{};
  if (text == "zstd") return CompressionChoice{Compression::kZstd, 0};
  const std::string prefix = "zstd:";
  if (text.starts_with(prefix) && text.size() > prefix.size() && text.size() <= prefix.size() + 2 &&
      text.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
    const int level = std::stoi(text.substr(prefix.size()));
    if (level >= 1 && level <= 19) return CompressionChoice{Compression::kZstd, level};
  }
  return Status::InvalidArgument("invalid compression '" + text + "': expected none, zstd or zstd:LEVEL (1..19)");
}

// The flags as IngestOptions. REQUIRES: the flags passed their validators.
IngestOptions MakeOptions(const IngestArgs& args) {
  IngestOptions options;
  options.dataset = args.dataset;
  if (!args.shard_size.empty()) options.shard_target_bytes = ParseSize(args.shard_size).value();
  options.stratify_by = args.stratify_by;
  options.replication = args.replication;
  if (!args.redundancy.empty()) (void)SetRedundancy(args.redundancy, &options);  // validated
  options.write_policy = args.write_policy == "async"    ? WritePolicy::kAsync
                         : args.write_policy == "quorum" ? WritePolicy::kQuorum
                                                         : WritePolicy::kSync;
  options.write_quorum = args.write_quorum;
  options.keep_versions = args.keep_versions;
  const CompressionChoice compression = ParseCompression(args.compression).value();
  options.compression = compression.codec;
  options.compression_level = compression.level;
  if (!args.compression_block.empty()) {
    options.compression_block_bytes = static_cast<uint32_t>(ParseSize(args.compression_block).value());
  }
  if (!args.time_bucket.empty()) {
    const TimeBucket bucket = ParseTimeBucket(args.time_bucket).value();
    options.time_bucket_field = bucket.field;
    options.time_bucket_seconds = bucket.seconds;
  }
  if (args.writers > 1 || !args.ingest_id.empty()) {
    options.writers = args.writers;
    options.ingest_id = args.ingest_id;
  }
  return options;
}

// A fresh ingest id for the writers of one `strata ingest --writers N`.
std::string NewIngestId() {
  std::random_device random;
  const uint64_t bits = (static_cast<uint64_t>(random()) << 32) ^ random();
  char id[32];
  std::snprintf(id, sizeof(id), "cli-%016llx", static_cast<unsigned long long>(bits));
  return id;
}

ProgressSnapshot Snapshot(const std::vector<std::unique_ptr<SampleSource>>& sources, const IngestWriter* writer) {
  uint64_t total = 0;
  uint64_t read = 0;
  for (const auto& source : sources) {
    total += source->total_bytes();
    read += source->bytes_read();
  }
  ProgressSnapshot s;
  if (total > 0) s.fraction = static_cast<double>(read) / static_cast<double>(total);
  if (writer != nullptr) {
    s.samples = writer->samples_written();
    s.bytes = writer->bytes_written();
  }
  return s;
}

void PrintIngestSummary(const IngestSummary& reply, double elapsed_s) {
  const DatasetInfo& d = reply.dataset;
  const double seconds = elapsed_s > 0 ? elapsed_s : 1e-9;
  std::cout << "ingested " << d.name << "@" << d.version << ": " << FormatCount(d.samples) << " samples, "
            << FormatBytes(d.bytes) << " payload in " << FormatCount(d.shards) << " shards\n";
  std::cout << "elapsed " << FormatDuration(elapsed_s) << ": "
            << FormatCount(static_cast<uint64_t>(static_cast<double>(d.samples) / seconds)) << " samples/s, "
            << FormatFixed(static_cast<double>(d.bytes) / 1e6 / seconds, 1) << " MB/s\n";

  Counts labels;
  for (const StratumCount& c : d.label_counts) labels.emplace_back(c.key, c.count);
  std::cout << "labels (" << labels.size() << "):\n";
  PrintCounts(std::cout, "LABEL", std::move(labels), kMaxIngestLabelRows, "  ");

  if (d.duplicate_samples == 0) {
    std::cout << "duplicates: none\n";
    return;
  }
  std::cout << "duplicates: " << FormatCount(d.duplicate_samples) << " exact duplicate samples";
  if (!reply.duplicate_examples.empty()) std::cout << "; for example:";
  std::cout << "\n";
  for (size_t i = 0; i < reply.duplicate_examples.size() && i < kMaxDuplicateExamples; ++i) {
    const DuplicateGroup& group = reply.duplicate_examples[i];
    std::string keys;
    for (const std::string& key : group.keys) keys += (keys.empty() ? "" : ", ") + key;
    std::cout << "  " << FormatCount(group.count) << " identical samples: " << keys << "\n";
  }
}

// Sends every sample of `sources`, one source after another, through one
// writer started at the first sample, and commits it. `on_sample` runs after
// each sample. The writer is aborted on any error. One of several writers
// that fails before its first sample (an unreadable or empty source) joins
// only to abort: the version waits for every writer, and would wait for
// this one for ever.
Result<IngestSummary> WriteSources(Client& client, const IngestOptions& options,
                                   const std::vector<std::unique_ptr<SampleSource>>& sources,
                                   const std::function<void(const IngestWriter&)>& on_sample) {
  std::unique_ptr<IngestWriter> writer;  // started at the first sample
  auto fail = [&](const Status& status) {
    if (!writer && !options.ingest_id.empty()) {
      if (auto joined = client.StartIngest(options); joined.ok()) writer = std::move(*joined);
    }
    if (writer) writer->Abort();
    return status;
  };
  Sample sample;
  for (const auto& source : sources) {
    for (;;) {
      const Status read = source->Next(&sample);
      if (read.code() == Code::kOutOfRange) break;
      if (!read.ok()) return fail(read);
      if (!writer) {
        auto started = client.StartIngest(options);
        if (!started.ok()) return fail(started.status());
        writer = std::move(*started);
      }
      const Status written = writer->Write(sample);
      if (!written.ok()) return fail(written);
      on_sample(*writer);
    }
  }
  if (!writer) {
    std::string names;
    for (const auto& source : sources) names += (names.empty() ? "" : ", ") + source->description();
    return fail(Status::InvalidArgument("no samples found in " + names));
  }
  return writer->Commit();
}

// All writers of a --writers N ingest in this process, one thread each; the
// sources are dealt out among them in turn.
Result<IngestSummary> RunWriters(Client& client, const IngestOptions& options,
                                 std::vector<std::unique_ptr<SampleSource>> sources, Progress& progress) {
  struct Writer {
    std::vector<std::unique_ptr<SampleSource>> sources;
    std::atomic<uint64_t> samples{0}, bytes{0}, read{0};
    uint64_t total = 0;
    Result<IngestSummary> result = Status::Internal("not run");
  };
  std::vector<Writer> writers(options.writers);
  for (size_t i = 0; i < sources.size(); ++i) {
    Writer& w = writers[i % writers.size()];
    w.total += sources[i]->total_bytes();
    w.sources.push_back(std::move(sources[i]));
  }
  std::atomic<int> running{static_cast<int>(writers.size())};
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < writers.size(); ++i) {
    // Owner: this function (joined below). Purpose: writer i's part.
    threads.emplace_back([&, i] {
      Writer& w = writers[i];
      IngestOptions mine = options;
      mine.writer = i;
      w.result = WriteSources(client, mine, w.sources, [&w](const IngestWriter& writer) {
        w.samples.store(writer.samples_written(), std::memory_order_relaxed);
        w.bytes.store(writer.bytes_written(), std::memory_order_relaxed);
        uint64_t read = 0;
        for (const auto& source : w.sources) read += source->bytes_read();
        w.read.store(read, std::memory_order_relaxed);
      });
      running.fetch_sub(1);
    });
  }
  auto snapshot = [&] {
    ProgressSnapshot snap;
    uint64_t total = 0, read = 0;
    for (const Writer& w : writers) {
      total += w.total;
      read += w.read.load(std::memory_order_relaxed);
      snap.samples += w.samples.load(std::memory_order_relaxed);
      snap.bytes += w.bytes.load(std::memory_order_relaxed);
    }
    if (total > 0) snap.fraction = static_cast<double>(read) / static_cast<double>(total);
    return snap;
  };
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (progress.Due()) progress.Draw(snapshot());
  }
  for (auto& t : threads) t.join();
  progress.Finish(snapshot());
  // The writer whose commit sealed the version has the whole version's summary.
  // Of the errors, the cause: one writer's failure aborts the version for
  // all, and the others then report only that it was aborted, from their
  // home ("ingest ID was aborted: ...") or from a node a replica of theirs
  // went to ("... dataset version V was deleted or aborted", inside an
  // Unavailable: too few copies): common/ingest_errors.h.
  Status cause, consequence;
  for (uint32_t i = 0; i < writers.size(); ++i) {
    const Result<IngestSummary>& r = writers[i].result;
    if (!r.ok()) {
      Status& kept = IsVersionAbortedError(r.status()) ? consequence : cause;
      if (kept.ok()) kept = r.status().WithContext("writer " + std::to_string(i));
      continue;
    }
    if (r->dataset.state == VersionState::kSealed) return r;
  }
  if (!cause.ok()) return cause;
  if (!consequence.ok()) return consequence;
  return Status::Internal("every writer committed but none saw the version sealed");
}

int RunIngest(const IngestArgs& args) {
  if (args.writer >= 0 && args.ingest_id.empty()) {
    return PrintUsageError("--writer needs --ingest-id, the id every writer of the version shares");
  }
  if (args.writer >= static_cast<int64_t>(args.writers)) {
    return PrintUsageError("--writer " + std::to_string(args.writer) + " is not below --writers " +
                           std::to_string(args.writers));
  }
  if (args.write_quorum != 0 && args.write_policy != "quorum") {
    return PrintUsageError("--write-quorum W goes with --write-policy quorum (the policy is " + args.write_policy +
                           ")");
  }
  if (args.write_policy == "quorum" && args.write_quorum == 0) {
    return PrintUsageError("--write-policy quorum needs --write-quorum W, the copies to wait for");
  }
  std::vector<std::unique_ptr<SampleSource>> sources;
  for (const std::string& path : args.sources) {
    auto source = SampleSource::Open(path);
    if (!source.ok() && args.writer >= 0) {  // one of several writers: the version waits for it
      return PrintError(source.status().WithContext(
          "writer " + std::to_string(args.writer) + " of ingest " + args.ingest_id +
          " did not join, and the version waits for it: run it again with sources it can open (or give "
          "up on the version: strata rm --abort NAME@N)"));
    }
    if (!source.ok()) return PrintError(source.status());
    sources.push_back(std::move(*source));
  }
  IngestOptions options = MakeOptions(args);
  const bool all_here = options.writers > 1 && args.writer < 0;
  if (all_here && sources.size() < options.writers) {
    return PrintError(Status::InvalidArgument("--writers " + std::to_string(options.writers) +
                                              " deals the sources out among the writers and needs at "
                                              "least as many; " +
                                              std::to_string(sources.size()) +
                                              " given (split the input, or run each writer with "
                                              "--ingest-id and --writer)"));
  }
  if (all_here && options.ingest_id.empty()) options.ingest_id = NewIngestId();
  if (args.writer >= 0) options.writer = static_cast<uint32_t>(args.writer);
  auto client = ConnectToServer(args.servers);
  if (!client.ok()) return PrintError(client.status());

  Progress progress(!args.quiet);
  Result<IngestSummary> reply = Status::Internal("not run");
  if (all_here) {
    reply = RunWriters(**client, options, std::move(sources), progress);
  } else {
    ProgressSnapshot sent;  // the writer's counts at its last sample (it is gone after the commit)
    reply = WriteSources(**client, options, sources, [&](const IngestWriter& writer) {
      sent.samples = writer.samples_written();
      sent.bytes = writer.bytes_written();
      if (progress.Due()) progress.Draw(Snapshot(sources, &writer));
    });
    if (reply.ok()) {
      ProgressSnapshot done = Snapshot(sources, nullptr);
      done.samples = sent.samples;
      done.bytes = sent.bytes;
      progress.Finish(done);
    }
  }
  if (!reply.ok()) {
    progress.Abandon();
    return PrintError(reply.status());
  }
  if (reply->writers > 1 && reply->dataset.state != VersionState::kSealed) {
    std::cout << "writer " << options.writer << " of ingest " << options.ingest_id << " committed; "
              << reply->writers_committed << " of " << reply->writers << " writers have: " << reply->dataset.name << "@"
              << reply->dataset.version << " seals when the last one commits (should one never come: strata rm --abort "
              << reply->dataset.name << "@" << reply->dataset.version << ")\n";
    return 0;
  }
  PrintIngestSummary(*reply, progress.elapsed_s());
  return 0;
}

}  // namespace

Command AddIngestCommand(CLI::App& parent) {
  auto args = std::make_shared<IngestArgs>();
  CLI::App* app = parent.add_subcommand(
      "ingest",
      "Send samples from folders, CSV/JSONL manifests or WebDataset .tar files to a server as a new dataset "
      "version");
  AddServerOption(app, &args->servers);
  app->add_option("--dataset,-d", args->dataset,
                  "Dataset to create: NAME makes the next version, NAME@N names version N")
      ->required()
      ->type_name("NAME[@N]")
      ->check(DatasetRefValidator());
  app->add_option("--shard-size", args->shard_size,
                  "Target shard file size, e.g. 64MiB or 1G (K/M/G/T are binary; KB/MB/GB decimal); "
                  "default: the server's")
      ->type_name("SIZE")
      ->check(StatusValidator([](const std::string& text) { return ParseSize(text).status(); }));
  app->add_option("--stratify-by", args->stratify_by,
                  "Comma-separated keys that form a sample's stratum: label, source, or any attribute "
                  "(default: label)")
      ->type_name("KEYS")
      ->delimiter(',')
      ->allow_extra_args(false);
  app->add_option("--time-bucket", args->time_bucket,
                  "Add a time bucket over a timestamp attribute to the stratum: FIELD:WIDTH, WIDTH in seconds "
                  "or with a unit s/m/h/d/w, e.g. ts:1h")
      ->type_name("FIELD:WIDTH")
      ->check(StatusValidator([](const std::string& text) { return ParseTimeBucket(text).status(); }));
  auto* replication = app->add_option("--replication,-r", args->replication,
                                      "Copies of every shard in the cluster (default: min(3, nodes))")
                          ->type_name("R")
                          ->check(CLI::Range(1u, 64u));
  app->add_option("--redundancy", args->redundancy,
                  "Erasure coding instead of copies: ec:K+M stores K data shards and M parity files per stripe on "
                  "K+M distinct nodes (any M may be lost; disk (K+M)/K), e.g. ec:4+2")
      ->type_name("ec:K+M")
      ->excludes(replication)
      ->check(StatusValidator([](const std::string& text) {
        IngestOptions o;
        return SetRedundancy(text, &o);
      }));
  app->add_option("--write-policy", args->write_policy,
                  "When the ingest is acknowledged: sync (every copy durable), async (one copy; the rest follow in "
                  "the background), quorum (--write-quorum copies)")
      ->type_name("POLICY")
      ->check(CLI::IsMember({"sync", "async", "quorum"}));
  app->add_option("--write-quorum", args->write_quorum, "Copies to wait for with --write-policy quorum")
      ->type_name("W")
      ->check(CLI::Range(1u, 64u));
  app->add_option("--compression", args->compression,
                  "How shards store records: none (default), zstd or zstd:LEVEL (1..19, default 3), in blocks of "
                  "about 64 KiB so one sample reads one block; streams deliver the bytes ingested")
      ->type_name("CODEC")
      ->check(StatusValidator([](const std::string& text) { return ParseCompression(text).status(); }));
  app->add_option("--compression-block", args->compression_block,
                  "Bytes of records per compressed block (default 64KiB; 4KiB..16MiB): one sample read "
                  "decompresses its block, larger blocks compress better")
      ->type_name("SIZE")
      ->check(StatusValidator([](const std::string& text) -> Status {
        auto size = ParseSize(text);
        if (!size.ok()) return size.status();
        if (*size < (4u << 10) || *size > (16u << 20)) {
          return Status::InvalidArgument("compression block size must be between 4KiB and 16MiB");
        }
        return Status::OK();
      }));
  app->add_option("--keep-versions", args->keep_versions,
                  "Retention: once this version seals, delete the dataset's older sealed versions beyond the "
                  "newest K (this one included), on every node, as `strata rm` does; recorded with the version "
                  "(describe shows it). Needs an admin token where tokens are on. Default: keep every version")
      ->type_name("K")
      ->check(CLI::Range(1u, 1000000u));
  auto* writers = app->add_option("--writers", args->writers,
                                  "Write the version with N writers at once, each to a different node, which cuts "
                                  "and copies its own shards; sealed once, when all have committed, with dense ids "
                                  "in writer order. Alone, this process runs all N and deals the sources out among "
                                  "them; with --ingest-id and --writer, it is one of them (run the others elsewhere)")
                      ->type_name("N")
                      ->check(CLI::Range(1u, 1024u));
  app->add_option("--ingest-id", args->ingest_id,
                  "The id every writer of one multi-writer version shares (1 to 128 of A-Z a-z 0-9 . _ -); "
                  "with --writers and --writer")
      ->type_name("ID")
      ->needs(writers)
      ->check(StatusValidator([](const std::string& text) -> Status {
        if (!IsSimpleName(text, 128)) return Status::InvalidArgument("an ingest id is 1 to 128 of A-Z a-z 0-9 . _ -");
        return Status::OK();
      }));
  app->add_option("--writer", args->writer, "This process's writer, 0 to N-1 (with --ingest-id and --writers)")
      ->type_name("I")
      ->needs(writers)
      ->check(CLI::Range(int64_t{0}, int64_t{1023}));
  app->add_flag("-q,--quiet", args->quiet, "Do not show the progress line");
  app->add_option("sources", args->sources,
                  "Folders (label = first sub-folder), .csv/.jsonl manifests, or WebDataset .tar/.tar.gz/.tgz files")
      ->required()
      ->type_name("SOURCE");
  return {app, [args] { return RunIngest(*args); }};
}

}  // namespace strata::cli
