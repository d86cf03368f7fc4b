// strata stream: streams one rank's batches of an epoch, reports throughput
// and the label mix, and optionally writes every batch's ids, labels and
// strata as JSON lines. Useful to check a plan, measure a server, or feed a
// script. With --report it streams every rank of --world itself and prints the
// balance report (client/cli/stream_report.cc).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/cli/command.h"
#include "client/cli/format.h"
#include "client/cli/progress.h"
#include "client/cli/stream_options.h"
#include "client/cli/stream_report.h"
#include "common/dataset_ref.h"
#include "common/serving_errors.h"
#include "strata/v1/types.pb.h"

namespace strata::cli {

namespace {

constexpr size_t kMaxStreamLabelRows = 50;

// What was received, for the summary.
struct Totals {
  uint64_t steps = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;
  std::unordered_map<std::string, uint64_t> labels;
};

// For counts that must be positive; other malformed numbers are left to CLI11's conversion.
CLI::Validator AtLeastOne() {
  return StatusValidator([](const std::string& text) {
    return text.find_first_not_of("0 ") == std::string::npos ? Status::InvalidArgument("must be at least 1")
                                                             : Status::OK();
  });
}

// Whether `option` (--output, --plot) names a file this process may write,
// before any server is asked (the file is written only once the stream has
// opened, or every rank has been streamed).
Status CheckWritable(const std::string& option, const std::string& path) {
  if (path.empty()) return Status::OK();
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) return Status::InvalidArgument(option + " " + path + " is a directory");
  if (std::filesystem::exists(st)) {
    if (::access(path.c_str(), W_OK) != 0) return ErrnoStatus(option + " " + path, errno);
    return Status::OK();
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::InvalidArgument(option + " " + path + ": its folder " + dir + " does not exist");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return ErrnoStatus(option + " " + path + ": folder " + dir, errno);
  return Status::OK();
}

// Checks what the server cannot see: --dataset or --resume, and that they
// agree, and that --output can be written.
Result<std::optional<ResumeToken>> CheckArgs(const StreamArgs& args) {
  STRATA_RETURN_IF_ERROR(CheckWritable("--output", args.output));
  if (args.rank >= args.world) {
    return Status::InvalidArgument("--rank " + std::to_string(args.rank) + " must be less than --world " +
                                   std::to_string(args.world));
  }
  if (args.resume.empty()) {
    if (args.dataset.empty()) return Status::InvalidArgument("--dataset is required (or --resume TOKEN)");
    if (args.batch_size == 0) return Status::InvalidArgument("--batch-size is required (or --resume TOKEN)");
    return std::optional<ResumeToken>();
  }
  auto token = ResumeToken::Decode(args.resume);
  if (!token.ok()) return token.status();
  if (!token->complete() && args.batch_size == 0) {
    return Status::InvalidArgument("this resume token (strata1) does not carry the batch size: give --batch-size");
  }
  if (!args.dataset.empty()) {
    auto ref = ParseDatasetRef(args.dataset);
    if (!ref.ok()) return ref.status();
    if (ref->name != token->dataset || (ref->version && *ref->version != token->version)) {
      return Status::InvalidArgument("--dataset " + args.dataset + " does not match the resume token's " +
                                     token->dataset + "@" + std::to_string(token->version));
    }
  }
  return std::optional<ResumeToken>(*token);
}

// Flushed line by line: a resume token printed after a failure must not
// skip lines still in a buffer that was never written.
Status WriteJsonLine(std::ofstream& out, const Batch& batch, bool with_strata) {
  out << BatchJsonLine(batch, with_strata) << '\n';
  out.flush();
  return out ? Status::OK() : Status::IOError("cannot write the output file");
}

// The first SIGINT or SIGTERM: the stream stops after the batch in hand,
// prints where to continue and exits with 128 + the signal's number. Before
// the first batch has come (the client may be planning its way to a far
// --start-step, or waiting on nodes) there is nothing to continue from, and
// the process ends at once, as it does on a second signal. A signal ignored
// at start (nohup, a shell's background job) stays ignored.
volatile std::sig_atomic_t interrupted = 0;
volatile std::sig_atomic_t first_batch_came = 0;
extern "C" void OnInterrupt(int signal_number) {
  if (!first_batch_came) {
    static const char kMessage[] = "strata stream: interrupted before the first batch\n";
    [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    _exit(128 + signal_number);
  }
  interrupted = signal_number;
  std::signal(signal_number, SIG_DFL);
}
void StopOn(int signal_number) {
  if (std::signal(signal_number, OnInterrupt) == SIG_IGN) std::signal(signal_number, SIG_IGN);
}

void PrintStreamSummary(const Stream& stream, const StreamArgs& args, const Totals& totals, double elapsed_s) {
  const ResumeToken where = stream.resume_token();
  const double seconds = elapsed_s > 0 ? elapsed_s : 1e-9;
  // A stream that ended before its first part may not have learnt its version.
  const std::string version = where.version != 0 ? "@" + std::to_string(where.version) : std::string();
  std::cout << "streamed " << where.dataset << version << ", epoch " << where.epoch << ", rank " << args.rank << " of "
            << args.world << ": " << FormatCount(totals.steps) << " steps, " << FormatCount(totals.samples)
            << " samples, " << FormatBytes(totals.bytes) << " payload\n";
  std::cout << "elapsed " << FormatDuration(elapsed_s) << ": "
            << FormatCount(static_cast<uint64_t>(static_cast<double>(totals.samples) / seconds)) << " samples/s, "
            << FormatFixed(static_cast<double>(totals.bytes) / 1e6 / seconds, 1) << " MB/s, "
            << FormatFixed(static_cast<double>(totals.steps) / seconds, 1) << " batches/s\n";
  std::cout << "labels (" << totals.labels.size() << "):\n";
  PrintCounts(std::cout, "LABEL", Counts(totals.labels.begin(), totals.labels.end()), kMaxStreamLabelRows, "  ");
  if (stream.next_step() < stream.steps_in_epoch()) {
    std::cout << "stopped at step " << stream.next_step() << " of " << stream.steps_in_epoch()
              << "; to continue: --resume " << where.Encode() << "\n";
  }
}

int RunStream(const StreamArgs& args) {
  auto spec = BuildSamplerSpec(args.sampler);
  if (!spec.ok()) return PrintError(spec.status());
  if (args.report || !args.plot.empty()) {
    if (args.batch_size == 0) return PrintUsageError("--batch-size is required");
    if (Status plot = CheckWritable("--plot", args.plot); !plot.ok()) return PrintUsageError(plot.message());
    return RunStreamReport(args, spec.value());
  }
  auto token = CheckArgs(args);  // options that do not go together, or a token that cannot be read
  if (!token.ok()) return PrintUsageError(token.status().message());
  StreamOptions options;
  options.sampler = spec.value();
  options.dataset = args.dataset;
  options.rank = args.rank;
  options.world = args.world;
  options.batch_size = args.batch_size;
  options.seed = args.seed;
  options.epoch = args.epoch;
  options.start_step = args.start_step;
  options.max_steps = args.max_steps;
  options.remainder = args.drop_last ? Remainder::kDrop : Remainder::kShort;

  auto client = ConnectToServer(args.servers, args.zone, args.stall_timeout_ms);
  if (!client.ok()) return PrintError(client.status());
  auto stream = token->has_value() ? (*client)->ResumeStream(**token, options) : (*client)->OpenStream(options);
  if (!stream.ok()) return PrintError(stream.status());
  bool with_strata = options.sampler.kind != SamplerSpec::Kind::kShuffle;
  if (token->has_value()) {  // the sampler is the token's
    v1::SamplerSpec resumed;
    with_strata = resumed.ParseFromString((*token)->sampler) && resumed.kind() != v1::SamplerSpec::SHUFFLE;
  }

  // The output is truncated when the first batch has come (or the stream
  // ends without one): a stream that fails to start leaves it as it was.
  std::ofstream out;
  const auto open_output = [&]() -> Status {
    if (args.output.empty() || out.is_open()) return Status::OK();
    out.open(args.output, std::ios::out | std::ios::trunc);
    return out ? Status::OK() : ErrnoStatus("cannot open " + args.output, errno);
  };

  Progress progress(!args.quiet);
  const uint64_t first_step = (*stream)->next_step();
  auto snapshot = [&](const Totals& t) {
    ProgressSnapshot s;
    const uint64_t end = args.max_steps != 0 ? std::min((*stream)->steps_in_epoch(), first_step + args.max_steps)
                                             : (*stream)->steps_in_epoch();
    if (end > first_step) s.fraction = static_cast<double>(t.steps) / static_cast<double>(end - first_step);
    s.position = "step " + std::to_string((*stream)->next_step()) + "/" + std::to_string((*stream)->steps_in_epoch());
    s.samples = t.samples;
    s.bytes = t.bytes;
    return s;
  };

  Totals totals;
  Batch batch;
  StopOn(SIGINT);
  StopOn(SIGTERM);
  while (args.max_steps == 0 || totals.steps < args.max_steps) {
    Status status = interrupted ? Status::Cancelled("interrupted") : (*stream)->Next(&batch);
    first_batch_came = 1;
    if (status.code() == Code::kOutOfRange) break;
    bool unwritten = false;  // the batch in hand did not reach the output
    if (status.ok() && !args.output.empty()) {
      status = open_output();
      if (status.ok()) status = WriteJsonLine(out, batch, with_strata);
      unwritten = !status.ok();
    }
    if (!status.ok()) {
      progress.Abandon();
      PrintError(status);
      // The stream's token is after its last batch; one that was not written
      // is streamed again.
      ResumeToken done = (*stream)->resume_token();
      if (unwritten) done.step = batch.step();
      // An error any node would repeat (the version deleted, a token refused)
      // would end the resumed stream too: no token for it.
      if (done.step > first_step && !IsRequestError(status)) {
        std::cerr << "stopped at step " << done.step << "; to continue: --resume " << done.Encode() << std::endl;
      }
      return interrupted != 0 ? 128 + interrupted : 1;
    }
    ++totals.steps;
    totals.samples += batch.size();
    totals.bytes += batch.payload_bytes();
    for (const std::string& label : batch.labels()) ++totals.labels[label];
    if (progress.Due()) progress.Draw(snapshot(totals));
  }
  progress.Finish(snapshot(totals));
  if (Status s = open_output(); !s.ok()) return PrintError(s);
  if (out.is_open()) {
    out.flush();
    if (!out) return PrintError(Status::IOError("cannot write " + args.output));
  }
  PrintStreamSummary(**stream, args, totals, progress.elapsed_s());
  return 0;
}

}  // namespace

Command AddStreamCommand(CLI::App& parent) {
  auto args = std::make_shared<StreamArgs>();
  CLI::App* app =
      parent.add_subcommand("stream",
                            "Stream one rank's batches of an epoch and report throughput and the label mix. Ctrl-C "
                            "(or SIGTERM) stops after the batch in hand and prints a --resume token that continues "
                            "it; exit status 128 + the signal. Before the first batch, or a second time, it ends the "
                            "command at once");
  AddServerOption(app, &args->servers);
  app->add_option("--dataset,-d", args->dataset,
                  "Dataset as NAME (latest sealed version) or NAME@N; required unless --resume")
      ->type_name("NAME[@N]")
      ->check(DatasetRefValidator());
  app->add_option("--batch-size,-b", args->batch_size,
                  "Samples per batch for this rank (global batch = B * world); required unless --resume, whose "
                  "token gives the global batch")
      ->type_name("B")
      ->check(AtLeastOne());
  auto* rank = app->add_option("--rank", args->rank, "This rank, below --world")->type_name("R")->capture_default_str();
  app->add_option("--world", args->world, "Number of ranks sharing each global batch")
      ->type_name("W")
      ->check(AtLeastOne())
      ->capture_default_str();
  // Unsigned: "-1" would wrap to 2^64 - 1 unchecked.
  auto* seed = app->add_option("--seed", args->seed, "Seed of the epoch plan")
                   ->type_name("S")
                   ->check(Uint64Validator())
                   ->capture_default_str();
  auto* epoch = app->add_option("--epoch", args->epoch, "Epoch to stream")
                    ->type_name("E")
                    ->check(Uint64Validator())
                    ->capture_default_str();
  auto* start = app->add_option("--start-step", args->start_step, "First step to stream")
                    ->type_name("K")
                    ->check(Uint64Validator())
                    ->capture_default_str();
  app->add_option("--max-steps", args->max_steps, "Stop after this many steps (0: to the end of the epoch)")
      ->type_name("M")
      ->check(Uint64Validator())
      ->capture_default_str();
  app->add_flag("--drop-last", args->drop_last,
                "Drop the last incomplete global batch (default: a short last batch, every sample once)");
  app->add_option("--output,-o", args->output,
                  "Write one JSON line per batch: {\"epoch\",\"step\",\"rank\",\"ids\",\"labels\"}, and "
                  "\"strata\" after \"labels\" with --sampler stratified or weighted")
      ->type_name("FILE.jsonl");
  AddSamplerOptions(app, &args->sampler);
  auto* report = app->add_flag("--report", args->report,
                               "Stream every rank of --world (one stream each) and print the balance report: per "
                               "stratum, target against delivered, the largest per-batch deviation and the batches "
                               "lacking a stratum, beside the same figures for torch's DistributedSampler");
  app->add_option("--plot", args->plot,
                  "With the report (implied): draw per-batch composition for both samplers into a PNG "
                  "(needs /usr/bin/python3 with matplotlib)")
      ->type_name("FILE.png");
  report->excludes(rank);
  app->add_option("--resume", args->resume,
                  "Continue from a resume token (strata2:...), as printed when a stream stops early; "
                  "it sets dataset version, seed, epoch, start step, sampler, remainder and global batch "
                  "(options that disagree with it are refused)")
      ->type_name("TOKEN")
      ->excludes(seed)
      ->excludes(epoch)
      ->excludes(start)
      ->check(StatusValidator([](const std::string& text) { return ResumeToken::Decode(text).status(); }));
  app->add_option("--zone", args->zone,
                  "This trainer's zone (as the nodes' --zone): samples with a copy on a node in it are read "
                  "from that node")
      ->type_name("ZONE");
  app->add_option("--stall-timeout", args->stall_timeout_ms,
                  "Milliseconds a node may deliver nothing while the trainer waits before its share moves to "
                  "other holders (default 5000)")
      ->type_name("MS")
      ->check(CLI::Range(int64_t{1}, int64_t{3'600'000}));
  app->add_flag("-q,--quiet", args->quiet, "Do not show the progress line");
  return {app, [args, rank] {
            args->rank_given = rank->count() > 0;
            return RunStream(*args);
          }};
}

}  // namespace strata::cli
