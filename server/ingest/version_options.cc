#include "server/ingest/version_options.h"

#include "server/storage/erasure_code.h"

namespace strata {

Result<CheckedIngestOptions> CheckIngestOptions(const v1::IngestOptions& options, const IngestLimits& limits) {
  auto ref = ParseDatasetRef(options.dataset());
  if (!ref.ok()) return ref.status();
  uint64_t target = options.shard_target_bytes() ? options.shard_target_bytes() : limits.default_shard_target_bytes;
  if (target < 4096 || target > (64ull << 30)) {
    return Status::InvalidArgument("shard target size must be between 4 KiB and 64 GiB");
  }
  STRATA_RETURN_IF_ERROR(ValidateCompression(options.compression(), options.compression_level()));
  if (options.ec_data() != 0 || options.ec_parity() != 0) {
    auto code = ErasureCode::Create(options.ec_data(), options.ec_parity());
    if (!code.ok()) return code.status();
    if (options.replication() != 0) {
      return Status::InvalidArgument("a version is either replicated or erasure coded, not both");
    }
  }
  ShardWriteOptions write_options;
  write_options.compression = options.compression();
  write_options.level = options.compression_level() != 0 ? options.compression_level() : kDefaultZstdLevel;
  if (options.compression_block_bytes() != 0) {
    if (options.compression_block_bytes() < kMinCompressedBlockBytes ||
        options.compression_block_bytes() > kMaxCompressedBlockBytes) {
      return Status::InvalidArgument("compression block size must be between 4 KiB and 16 MiB");
    }
    write_options.block_bytes = options.compression_block_bytes();
  }
  auto keyer = StratumKeyer::Create({options.stratify_by().begin(), options.stratify_by().end()},
                                    options.time_bucket_field(), options.time_bucket_seconds());
  if (!keyer.ok()) return keyer.status();
  return CheckedIngestOptions{std::move(ref).value(), target, write_options, std::move(keyer).value()};
}

v1::VersionRecord NewVersionRecord(const v1::IngestOptions& options, const CheckedIngestOptions& checked,
                                   const std::string& coordinator) {
  v1::VersionRecord initial;
  initial.set_shard_target_bytes(checked.shard_target);
  for (const auto& k : checked.keyer.stratify_by()) initial.mutable_info()->add_stratify_by(k);
  initial.mutable_info()->set_time_bucket_field(options.time_bucket_field());
  initial.mutable_info()->set_time_bucket_seconds(options.time_bucket_seconds());
  initial.mutable_info()->set_replication(options.replication());
  initial.mutable_info()->set_write_policy(options.write_policy());
  initial.mutable_info()->set_write_quorum(options.write_quorum());
  initial.mutable_info()->set_coordinator(coordinator);
  initial.mutable_info()->set_keep_versions(options.keep_versions());
  initial.mutable_info()->set_compression(options.compression());
  initial.mutable_info()->set_ec_data(options.ec_data());
  initial.mutable_info()->set_ec_parity(options.ec_parity());
  if (options.compression() != v1::COMPRESSION_NONE) {
    initial.mutable_info()->set_compression_level(checked.write_options.level);
    initial.mutable_info()->set_compression_block_bytes(static_cast<uint32_t>(checked.write_options.block_bytes));
  }
  return initial;
}

}  // namespace strata
