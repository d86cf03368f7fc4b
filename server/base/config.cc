// Loading stratad's configuration: the YAML file, then the flags, both read
// through the table of fields (config_fields.cc), then validation.
#include "server/base/config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "common/units.h"

namespace strata {

namespace {

Status Bad(const std::string& where, const std::string& what) { return Status::InvalidArgument(where + ": " + what); }

// Parsers of a field's text (a flag's value, or a YAML scalar), by type. The
// error says what was expected; the caller names where.
Status ParseText(const std::string& text, std::string* out) {
  *out = text;
  return Status::OK();
}

Status ParseText(const std::string& text, uint32_t* out) {
  uint64_t v = 0;
  bool ok = !text.empty() && text.size() <= 10;
  for (char ch : text) {
    if (ch < '0' || ch > '9') ok = false;
    if (ok) v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  if (!ok || v > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("expected a number, got '" + text + "'");
  }
  *out = static_cast<uint32_t>(v);
  return Status::OK();
}

Status ParseText(const std::string& text, uint64_t* out) {
  auto parsed = ParseByteSize(text);
  if (!parsed.ok()) return parsed.status();
  *out = parsed.value();
  return Status::OK();
}

// "a,b,c"; empty items are dropped.
Status ParseText(const std::string& text, std::vector<std::string>* out) {
  out->clear();
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out->push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return Status::OK();
}

// "node-1=127.0.0.1:7400,node-2=127.0.0.1:7401/127.0.0.1:7501@zone-a/rack-3"
Status ParseText(const std::string& text, std::vector<ClusterConfig::Peer>* out) {
  out->clear();
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string zone, rack;
    if (const size_t at = item.find('@'); at != std::string::npos) {
      const std::string domains = item.substr(at + 1);
      item.resize(at);
      const size_t slash = domains.find('/');
      zone = domains.substr(0, slash);
      if (slash != std::string::npos) rack = domains.substr(slash + 1);
      if (zone.empty() || (slash != std::string::npos && rack.empty())) {
        return Status::InvalidArgument("expected @ZONE or @ZONE/RACK after '" + item + "', got '@" + domains + "'");
      }
    }
    const size_t eq = item.find('=');
    const size_t slash = item.find('/');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size() || slash + 1 == item.size() ||
        (slash != std::string::npos && slash < eq + 2)) {
      return Status::InvalidArgument("expected ID=HOST:PORT[/PEER_HOST:PEER_PORT][@ZONE[/RACK]][,...], got '" + item +
                                     "'");
    }
    if (slash == std::string::npos) {
      out->push_back({item.substr(0, eq), item.substr(eq + 1), "", zone, rack});
    } else {
      out->push_back({item.substr(0, eq), item.substr(eq + 1, slash - eq - 1), item.substr(slash + 1), zone, rack});
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::OK();
}

Status ReadScalarText(const YAML::Node& node, const char* expected, std::string* out) {
  if (!node.IsScalar())
    return Status::InvalidArgument(std::string("expected ") + expected + ", got '" + YAML::Dump(node) + "'");
  *out = node.Scalar();
  return Status::OK();
}

// Reads one YAML value into the field it belongs to.
Status ReadYaml(const YAML::Node& node, std::string* out) { return ReadScalarText(node, "a string", out); }

Status ReadYaml(const YAML::Node& node, uint32_t* out) {
  std::string text;
  STRATA_RETURN_IF_ERROR(ReadScalarText(node, "a number", &text));
  return ParseText(text, out);
}

Status ReadYaml(const YAML::Node& node, uint64_t* out) {
  std::string text;
  STRATA_RETURN_IF_ERROR(ReadScalarText(node, "a size", &text));
  return ParseText(text, out);
}

Status ReadYaml(const YAML::Node& node, std::vector<std::string>* out) {
  if (!node.IsSequence()) return Status::InvalidArgument("expected a list of HOST:PORT");
  out->clear();
  for (const auto& item : node) {
    std::string text;
    STRATA_RETURN_IF_ERROR(ReadScalarText(item, "a string", &text));
    out->push_back(text);
  }
  return Status::OK();
}

Status ReadYaml(const YAML::Node& node, std::vector<ClusterConfig::Peer>* out) {
  if (!node.IsSequence()) return Status::InvalidArgument("expected a list of {id, address}");
  out->clear();
  for (const auto& n : node) {
    if (!n.IsMap() || !n["id"] || !n["address"]) return Status::InvalidArgument("each node needs an id and an address");
    ClusterConfig::Peer peer;
    STRATA_RETURN_IF_ERROR(ReadScalarText(n["id"], "a string", &peer.id));
    STRATA_RETURN_IF_ERROR(ReadScalarText(n["address"], "a string", &peer.address));
    if (n["peer_address"]) STRATA_RETURN_IF_ERROR(ReadScalarText(n["peer_address"], "a string", &peer.peer_address));
    if (n["zone"]) STRATA_RETURN_IF_ERROR(ReadScalarText(n["zone"], "a string", &peer.zone));
    if (n["rack"]) STRATA_RETURN_IF_ERROR(ReadScalarText(n["rack"], "a string", &peer.rack));
    out->push_back(std::move(peer));
  }
  return Status::OK();
}

const ConfigField* FindField(const std::string& key) {
  for (const auto& f : ConfigFields()) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

bool IsSection(const std::string& prefix) {
  for (const auto& f : ConfigFields()) {
    if (std::string(f.key).rfind(prefix + ".", 0) == 0) return true;
  }
  return false;
}

// Applies one mapping of the file; `prefix` is "" at the top, "cluster" inside
// cluster:. Unknown keys are errors, so a typo is not silently ignored.
Status ApplyMapping(const YAML::Node& map, const std::string& path, const std::string& prefix, NodeConfig* c) {
  const std::string here = prefix.empty() ? path : path + ": " + prefix;
  if (!map.IsMap()) return Bad(here, "expected a mapping of keys to values");
  std::set<std::string> seen;  // yaml-cpp keeps a key given twice: the last would win unsaid
  for (const auto& kv : map) {
    std::string name;
    STRATA_RETURN_IF_ERROR(ReadScalarText(kv.first, "a key", &name).WithContext(here));
    if (!seen.insert(name).second) return Bad(here, "key '" + name + "' is given twice");
    // "tls.cert" is cert inside tls: (a dotted name would be a second way
    // to set it, which the check above could not see twice).
    if (name.find('.') != std::string::npos) {
      return Bad(here, "unknown key '" + name + "' (a key holds no '.': write " + name.substr(0, name.find('.')) +
                           ": {" + name.substr(name.find('.') + 1) + ": ...})");
    }
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    if (const ConfigField* f = FindField(key)) {
      Status s = std::visit([&](auto* member) { return ReadYaml(kv.second, member); }, f->ref(*c));
      if (!s.ok()) return Bad(path + ": " + key, s.message());
    } else if (IsSection(key)) {
      STRATA_RETURN_IF_ERROR(ApplyMapping(kv.second, path, key, c));
    } else {
      return Bad(here, "unknown key '" + name + "'");
    }
  }
  return Status::OK();
}

Status ApplyFile(const std::string& path, NodeConfig* c) {
  if (!std::filesystem::exists(path)) return Status::NotFound("config file " + path + " does not exist");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("config file " + path + ": " + e.what());
  }
  if (root.IsNull()) return Status::OK();  // an empty file keeps the defaults
  if (!root.IsMap()) return Status::InvalidArgument("config file " + path + ": expected a mapping of keys to values");
  return ApplyMapping(root, path, "", c);
}

// "64MiB" where the size is a whole number of a unit, else bytes.
std::string ExactSize(uint64_t bytes) {
  static const char* kUnits[] = {"", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes != 0 && bytes % 1024 == 0 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kUnits[u];
}

std::string DefaultText(const ConfigField& f) {
  if (f.default_text) return f.default_text;
  NodeConfig defaults;
  struct Format {
    std::string operator()(std::string* v) const { return v->empty() ? "" : "`" + *v + "`"; }
    std::string operator()(uint32_t* v) const { return "`" + std::to_string(*v) + "`"; }
    std::string operator()(uint64_t* v) const { return "`" + ExactSize(*v) + "`"; }
    std::string operator()(std::vector<std::string>* v) const { return v->empty() ? "" : "(a list)"; }
    std::string operator()(std::vector<ClusterConfig::Peer>* v) const { return v->empty() ? "" : "(a list)"; }
  };
  return std::visit(Format{}, f.ref(defaults));
}

}  // namespace

uint64_t DecompressedCacheBytes(const NodeConfig& config) {
  if (config.memory_budget == 0) return config.decompressed_cache_bytes;
  return std::min(config.decompressed_cache_bytes, config.memory_budget / 4);
}

uint64_t DefaultCacheBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 1ull << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4;
}

std::string FlagName(const std::string& key) {
  std::string flag = "--" + key;
  for (char& ch : flag) {
    if (ch == '.' || ch == '_') ch = '-';
  }
  return flag;
}

std::string ConfigReferenceMarkdown() {
  std::string out = "| key | flag | default | meaning |\n| --- | --- | --- | --- |\n";
  for (const auto& f : ConfigFields()) {
    std::string flags = "`" + FlagName(f.key) + "`";
    if (f.alias) flags += ", `" + std::string(f.alias) + "`";
    out += "| `" + std::string(f.key) + "` | " + flags + " | " + DefaultText(f) + " | " + f.help + " |\n";
  }
  return out;
}

void AddConfigFlags(CLI::App& app, NodeFlags* flags) {
  struct TypeName {
    const char* operator()(std::string*) const { return "TEXT"; }
    const char* operator()(uint32_t*) const { return "N"; }
    const char* operator()(uint64_t*) const { return "SIZE"; }
    const char* operator()(std::vector<std::string>*) const { return "A,B,..."; }
    const char* operator()(std::vector<ClusterConfig::Peer>*) const {
      return "ID=HOST:PORT[/PEER_HOST:PEER_PORT][@ZONE[/RACK]],...";
    }
  };
  NodeConfig probe;
  for (const auto& f : ConfigFields()) {
    std::string names = FlagName(f.key);
    if (f.alias) names += "," + std::string(f.alias);
    const std::string key = f.key;
    const std::string def = DefaultText(f);
    app.add_option_function<std::string>(
           names, [flags, key](const std::string& text) { flags->values[key] = text; },
           std::string(f.help) + (def.empty() ? "" : " (default " + def + ")"))
        ->type_name(std::visit(TypeName{}, f.ref(probe)))
        ->group(key.rfind("cluster.", 0) == 0                       ? "Cluster"
                : key.rfind("tls.", 0) == 0 || key == "auth_tokens" ? "Security"
                                                                    : "Node");
  }
}

Status ValidateNodeConfig(const NodeConfig& c) {
  for (const auto& f : ConfigFields()) {
    if (!f.validate) continue;
    Status s = f.validate(c);
    if (s.ok()) continue;
    if (s.message().find(f.key) == std::string::npos) return Bad(f.key, s.message());
    return s;
  }
  return Status::OK();
}

Result<NodeConfig> LoadNodeConfig(const NodeFlags& flags) {
  NodeConfig c;
  if (!flags.config_file.empty()) STRATA_RETURN_IF_ERROR(ApplyFile(flags.config_file, &c));
  for (const auto& f : ConfigFields()) {
    if (f.on_flag && flags.values.count(f.key)) f.on_flag(c);
  }
  for (const auto& kv : flags.values) {
    const std::string& key = kv.first;
    const std::string& text = kv.second;  // not a structured binding: clang 14 cannot capture those
    const ConfigField* f = FindField(key);
    if (!f) return Status::InvalidArgument("no setting '" + key + "'");
    Status s = std::visit([&](auto* member) { return ParseText(text, member); }, f->ref(c));
    if (!s.ok()) return Status::InvalidArgument(FlagName(key) + " (" + key + "): " + s.message());
  }
  STRATA_RETURN_IF_ERROR(ValidateNodeConfig(c));
  return c;
}

}  // namespace strata
