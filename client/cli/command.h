// What every `strata` subcommand shares: how it registers, the --server
// option, connecting, and how errors and JSON are printed.
//
// Exit codes: 0 success, 1 an error reported as "error: <Code>: <message>" on
// stderr; usage errors keep CLI11's message and exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "strata/client.h"

namespace google::protobuf {
class Message;
}

namespace strata::cli {

// A subcommand, added to a parent app with its options bound to its own state.
struct Command {
  CLI::App* app = nullptr;   // owned by the parent app
  std::function<int()> run;  // runs it once parsed; returns the exit code
};

Command AddIngestCommand(CLI::App& parent);    // ingest_command.cc
Command AddStreamCommand(CLI::App& parent);    // stream_command.cc
Command AddLsCommand(CLI::App& parent);        // admin_commands.cc
Command AddDescribeCommand(CLI::App& parent);  // admin_commands.cc
Command AddStatusCommand(CLI::App& parent);    // admin_commands.cc
Command AddRmCommand(CLI::App& parent);        // admin_commands.cc

inline constexpr const char* kDefaultServer = "127.0.0.1:7400";

// Adds the connection options to `command`: the repeatable --server ADDR
// (env STRATA_SERVER), --tls-ca, --tls-cert, --tls-key and --token-file.
void AddServerOption(CLI::App* command, std::vector<std::string>* servers);

// The command line (`args[0]` the program) with the connection options given
// before the subcommand moved after its name, where the subcommand parses
// them: `strata --server H:P --token-file F ingest ...` means what
// `strata ingest --server H:P --token-file F ...` does. Anything else before
// the subcommand, or no subcommand, leaves `args` as they are (CLI11 then
// reports them).
std::vector<std::string> ConnectionOptionsAfterSubcommand(std::vector<std::string> args, const CLI::App& app);

// A CLI11 check that accepts what `parse` accepts, and reports its message otherwise.
CLI::Validator StatusValidator(std::function<Status(const std::string&)> parse);
// Accepts "NAME" or "NAME@N".
CLI::Validator DatasetRefValidator();
// Accepts a decimal integer from 0 to 2^64 - 1: a larger one is refused,
// where CLI11's own conversion would have clamped it to 2^64 - 1 (two
// different --seed values then gave the same plan).
CLI::Validator Uint64Validator();

// Connects to the first of `servers` that answers, or to the default when it is empty.
// `zone`: ClientOptions::zone (the trainer's zone; empty: none). `stall_timeout_ms`:
// ClientOptions::stall_timeout_ms (0: the library's default).
Result<std::unique_ptr<Client>> ConnectToServer(const std::vector<std::string>& servers, const std::string& zone = "",
                                                int64_t stall_timeout_ms = 0);

// Prints "error: <Code>: <message>" on stderr and returns 1, the exit code.
int PrintError(const Status& status);
// A misuse of the command line (options that do not go together): prints
// "error: <message>" and returns 2, as CLI11's own usage errors.
int PrintUsageError(const std::string& message);

// Prints `message` as JSON (proto field names, zero values included) on
// stdout and returns the exit code.
int PrintJson(const google::protobuf::Message& message);

}  // namespace strata::cli
