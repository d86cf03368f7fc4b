// strata: the command-line client of a strata cluster. Parses the command
// line and runs the one subcommand given; each lives in its own file.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "client/cli/command.h"
#include "strata/allocator.h"
#include "strata/version.h"

int main(int argc, char** argv) {
  strata::TuneAllocatorForStreaming();  // batches reuse freed buffers (strata/allocator.h)
  // The library's warnings (a node failed over, a zone no node is in) go to
  // stderr: stdout carries what a command prints (--json, tables, summaries).
  auto logger = spdlog::stderr_color_mt("strata");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");  // spdlog's default, less the logger's name
  spdlog::set_default_logger(logger);
  using namespace strata::cli;
  CLI::App app("strata: ingest datasets into a strata cluster, stream balanced minibatches, inspect servers", "strata");
  app.require_subcommand(0, 1);  // none: help below; an unknown word: CLI11's "not expected"
  app.set_version_flag("--version", std::string("strata ") + strata::Version());
  const std::vector<Command> commands = {AddIngestCommand(app),   AddStreamCommand(app), AddLsCommand(app),
                                         AddDescribeCommand(app), AddStatusCommand(app), AddRmCommand(app)};
  // `strata --server H:P ingest ...` as `strata ingest --server H:P ...`.
  std::vector<std::string> args = ConnectionOptionsAfterSubcommand(std::vector<std::string>(argv, argv + argc), app);
  std::vector<char*> arg_ptrs;
  for (std::string& arg : args) arg_ptrs.push_back(arg.data());
  try {
    app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help); usage errors exit 2, as is usual.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (const Command& command : commands) {
      if (command.app->parsed()) return command.run();
    }
  } catch (const std::exception& e) {  // a bug, not a user error: still say so clearly
    return PrintError(strata::Status::Internal(e.what()));
  }
  std::cerr << app.help();
  return 2;
}
