#include "client/cli/command.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string_view>

#include "common/dataset_ref.h"

namespace strata::cli {

namespace {

// TLS and token flags, shared by every subcommand (only one runs).
struct SecurityFlags {
  std::string tls_ca, tls_cert, tls_key, token_file;
};
SecurityFlags& Security() {
  static SecurityFlags flags;
  return flags;
}

// The token: --token-file, else $STRATA_TOKEN, else none. Never printed.
Result<std::string> LoadToken() {
  std::string token;
  if (!Security().token_file.empty()) {
    std::ifstream in(Security().token_file);
    if (!in) return Status::IOError("cannot read the token file " + Security().token_file);
    std::stringstream text;
    text << in.rdbuf();
    token = text.str();
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
    // Sent as no token at all, it would be refused as "pass --token-file".
    if (token.empty()) return Status::InvalidArgument("the token file " + Security().token_file + " is empty");
  } else if (const char* env = std::getenv("STRATA_TOKEN")) {
    token = env;
  }
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  return token;
}

// The options AddServerOption adds, each taking a value.
constexpr std::array<std::string_view, 5> kConnectionOptions = {"--server", "--tls-ca", "--tls-cert", "--tls-key",
                                                                "--token-file"};

}  // namespace

std::vector<std::string> ConnectionOptionsAfterSubcommand(std::vector<std::string> args, const CLI::App& app) {
  std::vector<std::string> moved;
  size_t at = 1;
  while (at < args.size()) {
    const std::string& arg = args[at];
    const std::string_view name = std::string_view(arg).substr(0, arg.find('='));
    if (std::find(kConnectionOptions.begin(), kConnectionOptions.end(), name) == kConnectionOptions.end()) break;
    const bool inline_value = arg.size() > name.size();  // --server=H:P
    const size_t end = std::min(args.size(), at + (inline_value ? 1 : 2));
    moved.insert(moved.end(), args.begin() + static_cast<std::ptrdiff_t>(at),
                 args.begin() + static_cast<std::ptrdiff_t>(end));
    at = end;
  }
  if (moved.empty() || at >= args.size()) return args;
  const std::vector<const CLI::App*> subcommands = app.get_subcommands({});
  const bool is_subcommand =
      std::any_of(subcommands.begin(), subcommands.end(), [&](const CLI::App* c) { return c->check_name(args[at]); });
  if (!is_subcommand) return args;
  std::vector<std::string> out = {args[0], args[at]};
  out.insert(out.end(), moved.begin(), moved.end());
  out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(at) + 1, args.end());
  return out;
}

void AddServerOption(CLI::App* command, std::vector<std::string>* servers) {
  command->add_option("--tls-ca", Security().tls_ca, "connect with TLS, trusting servers signed by this CA (PEM)")
      ->check(CLI::ExistingFile);
  command->add_option("--tls-cert", Security().tls_cert, "client certificate (PEM) for servers that require one")
      ->check(CLI::ExistingFile);
  command->add_option("--tls-key", Security().tls_key, "the private key of --tls-cert")->check(CLI::ExistingFile);
  command
      ->add_option("--token-file", Security().token_file,
                   "file holding the bearer token to send (default: $STRATA_TOKEN; needs --tls-ca)")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--server", *servers,
                   std::string("stratad address HOST:PORT: any node of the cluster; several, comma-separated or "
                               "repeated, are tried in turn (default: $STRATA_SERVER, else ") +
                       kDefaultServer + ")")
      ->envname("STRATA_SERVER")
      ->type_name("ADDR[,ADDR...]")
      ->delimiter(',')
      ->allow_extra_args(false);  // one address per --server, so positionals stay positionals
}

CLI::Validator StatusValidator(std::function<Status(const std::string&)> parse) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& text) {
        const Status status = parse(text);
        return status.ok() ? std::string() : status.message();
      },
      "");
}

CLI::Validator Uint64Validator() {
  return StatusValidator([](const std::string& text) {
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      return Status::InvalidArgument("must be an integer from 0 to 18446744073709551615, not '" + text + "'");
    }
    return Status::OK();
  });
}

CLI::Validator DatasetRefValidator() {
  return StatusValidator([](const std::string& text) { return ParseDatasetRef(text).status(); });
}

Result<std::unique_ptr<Client>> ConnectToServer(const std::vector<std::string>& servers, const std::string& zone,
                                                int64_t stall_timeout_ms) {
  ClientOptions options;
  options.zone = zone;
  if (stall_timeout_ms > 0) options.stall_timeout_ms = stall_timeout_ms;
  options.tls_ca_file = Security().tls_ca;
  options.tls_cert_file = Security().tls_cert;
  options.tls_key_file = Security().tls_key;
  auto token = LoadToken();
  if (!token.ok()) return token.status();
  options.token = std::move(token).value();
  // Any node of a cluster will do: the first that answers.
  if (servers.empty()) return Client::Connect(std::string(kDefaultServer), options);
  return Client::Connect(servers, options);
}

int PrintError(const Status& status) {
  std::cerr << "error: " << status.ToString() << std::endl;
  return 1;
}

int PrintUsageError(const std::string& message) {
  std::cerr << "error: " << message << std::endl;
  return 2;
}

int PrintJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) return PrintError(Status::Internal("cannot print JSON: " + std::string(status.message())));
  std::cout << json;  // add_whitespace ends it with a newline
  return 0;
}

}  // namespace strata::cli
