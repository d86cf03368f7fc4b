#include "client/cli/command.h"

#include <google/protobuf/util/json_util.h>

#include <iostream>

#include "common/dataset_ref.h"

namespace strata::cli {

void AddServerOption(CLI::App* command, std::vector<std::string>* servers) {
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

CLI::Validator DatasetRefValidator() {
  return StatusValidator([](const std::string& text) { return ParseDatasetRef(text).status(); });
}

Result<std::unique_ptr<Client>> ConnectToServer(const std::vector<std::string>& servers) {
  // Any node of a cluster will do: the first that answers.
  if (servers.empty()) return Client::Connect(std::string(kDefaultServer));
  return Client::Connect(servers);
}

int PrintError(const Status& status) {
  std::cerr << "error: " << status.ToString() << std::endl;
  return 1;
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
