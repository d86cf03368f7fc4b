// Builds samples and a NodeConfig for tests that open a Server (the core, unserved) on a temporary directory.
#pragma once

#include <memory>
#include <string>

#include "server/daemon/server.h"
#include "tests/support/temp_dir.h"

namespace strata::testing {

inline v1::Sample MakeSample(const std::string& key, const std::string& label, const std::string& data,
                             const std::string& field = "bin") {
  v1::Sample s;
  s.set_key(key);
  s.set_label(label);
  v1::Field* f = s.add_fields();
  f->set_name(field);
  f->set_data(data);
  return s;
}

inline NodeConfig TestNodeConfig(const std::string& dir) {
  NodeConfig c;
  c.data_dir = dir;
  c.metrics_listen = "";
  c.shard_target_bytes = 4096;  // many small shards
  c.io_threads = 2;
  return c;
}

}  // namespace strata::testing
