// Paths built from names that came over the network, checked before use.
//
// Every file a peer or client names (a dataset, version, shard) becomes a path
// under the data directory. These checks run before anything is created,
// written, read or removed there: the reference must be well formed (one
// dataset-name validator for every service), and the path, with every
// symbolic link in it resolved, must lie inside the data directory.
//
// Thread-safety: pure functions (ResolveInside reads the file system).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "strata/v1/cluster.pb.h"

namespace strata {

// The largest shard sequence number a reference may carry (shard files are
// named with 6 digits).
inline constexpr uint32_t kMaxShardSeq = 999999;

// OK if `file` names a valid dataset, a version >= 1, a known kind and (for a
// shard) seq <= kMaxShardSeq; InvalidArgument naming what is wrong otherwise.
Status ValidateFileRef(const v1::FileRef& file);

// root + "/" + relative, after checking that `relative` is relative, has no
// empty, "." or ".." component, and that the result (symbolic links of its
// existing part resolved) lies strictly inside `root` (itself resolved).
// InvalidArgument otherwise; the path need not exist.
Result<std::string> ResolveInside(const std::string& root, std::string_view relative);

}  // namespace strata
