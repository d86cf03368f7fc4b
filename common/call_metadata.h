// Metadata keys of strata's own that a call carries, shared by the client
// that sets them and the server that reads them.
//
// Thread-safety: constants.
#pragma once

namespace strata {

// On an Ingest call whose options set keep_versions: retention deletes the
// dataset's older versions, so the node's token check (server/rpc/auth.h),
// which sees a call's metadata but not its messages, asks for an admin token.
// The node refuses keep_versions on a call without it where tokens are on.
inline constexpr char kKeepVersionsMetadataKey[] = "strata-keep-versions";

}  // namespace strata
