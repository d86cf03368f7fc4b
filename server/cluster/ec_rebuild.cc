#include "server/cluster/ec_rebuild.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "common/checksum.h"
#include "common/grpc_status.h"
#include "server/cluster/file_transfer.h"
#include "server/cluster/membership.h"
#include "server/storage/ec_stripes.h"
#include "server/storage/erasure_code.h"
#include "server/storage/parity_file.h"

namespace strata {

namespace {

constexpr std::chrono::seconds kReadTimeout{60};

// The whole of a local file, or NotFound.
Status ReadLocalFile(const RebuildDeps& d, const v1::FileRef& file, std::string* out) {
  if (!d.files->Has(file)) return Status::NotFound(FileName(file) + " is not held here");
  std::ifstream in(d.dir->Absolute(d.dir->FileRelativePath(file)), std::ios::binary);
  if (!in) return Status::NotFound(FileName(file) + " is not held here");
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return Status::OK();
}

// The whole of `file` from `peer`, at most `limit` bytes.
Status ReadPeerFile(v1::PeerService::Stub* peer, const v1::FileRef& file, uint64_t limit, RateLimiter* limiter,
                    std::string* out) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kReadTimeout);
  v1::GetFileRequest request;
  *request.mutable_file() = file;
  auto reader = peer->GetFile(&context, request);
  v1::FileChunk chunk;
  out->clear();
  bool too_long = false;
  while (reader->Read(&chunk)) {
    if (limiter) limiter->Acquire(chunk.data().size());
    if (out->size() + chunk.data().size() > limit) {
      too_long = true;
      context.TryCancel();
      while (reader->Read(&chunk)) {
      }
      break;
    }
    out->append(chunk.data());
  }
  Status remote = FromGrpcStatus(reader->Finish());
  if (too_long) return Status::Corruption(FileName(file) + " from a peer is longer than its stripe allows");
  return remote;
}

}  // namespace

Result<uint64_t> RebuildChunk(const RebuildDeps& d, const v1::DatasetInfo& info,
                              const std::vector<uint64_t>& shard_bytes, const v1::FileRef& file, RateLimiter* limiter) {
  if (!IsErasureCoded(info)) return Status::InvalidArgument(FileName(file) + " is not erasure coded");
  const uint32_t k = info.ec_data(), m = info.ec_parity();
  auto code = ErasureCode::Create(k, m);
  if (!code.ok()) return code.status();
  if (file.kind() != v1::FileRef::SHARD && file.kind() != v1::FileRef::PARITY) {
    return Status::InvalidArgument(FileName(file) + " is not a chunk of a stripe");
  }
  const uint32_t stripe = StripeOf(file, k, m);
  const uint32_t wanted = ChunkOf(file, k, m);
  if (uint64_t{stripe} * k >= shard_bytes.size() || (wanted < k && file.seq() >= shard_bytes.size())) {
    return Status::InvalidArgument(FileName(file) + " is past the version's last stripe");
  }
  // Each chunk's length: a data shard's own, parity the longest data shard's.
  std::vector<uint64_t> lengths(k + m, 0);
  uint64_t len = 0;
  for (uint32_t c = 0; c < k; ++c) {
    const uint64_t seq = uint64_t{stripe} * k + c;
    lengths[c] = seq < shard_bytes.size() ? shard_bytes[seq] : 0;
    len = std::max(len, lengths[c]);
  }
  if (len > (uint64_t{1} << 31)) return Status::InvalidArgument(FileName(file) + ": stripe too large to rebuild");
  for (uint32_t c = k; c < k + m; ++c) lengths[c] = len;

  const v1::ClusterMap map = d.view->Current();
  const PlacementSet members(PlacementMembers(map));
  std::vector<std::string> chunks(k + m);
  std::vector<uint32_t> present;
  uint64_t read = 0;
  std::string errors;
  for (uint32_t c = 0; c < k + m && present.size() < k; ++c) {
    if (c == wanted) continue;
    if (lengths[c] == 0 && c < k) {  // past the last shard: an empty chunk
      chunks[c].assign(len, '\0');
      present.push_back(c);
      continue;
    }
    const v1::FileRef source = StripeFile(file.dataset(), file.version(), stripe, c, k, m);
    const uint64_t file_bytes = c < k ? lengths[c] : len + kParityTrailerBytes;
    std::string bytes;
    Status s = ReadLocalFile(d, source, &bytes);
    if (!s.ok()) {
      for (const std::string& id : EcRanked(members, source, k, m)) {
        const v1::NodeInfo* n = FindNode(map, id);
        if (id == d.view->self_id() || n == nullptr || n->state() != v1::NODE_UP) continue;
        s = ReadPeerFile(d.peers->Peer(*n).get(), source, file_bytes, limiter, &bytes);
        if (s.ok()) break;
      }
    }
    if (s.ok() && bytes.size() != file_bytes) {
      s = Status::Corruption(FileName(source) + " is " + std::to_string(bytes.size()) + " bytes, not " +
                             std::to_string(file_bytes));
    }
    if (s.ok() && c >= k) {  // a parity file checks itself
      auto trailer = DecodeParityTrailer(std::string_view(bytes).substr(len), bytes.size());
      if (trailer.ok() && trailer->body_checksum != Checksum64(bytes.data(), len)) {
        trailer = Status::Corruption(FileName(source) + ": parity body checksum mismatch");
      }
      s = trailer.status();
    }
    if (!s.ok()) {
      errors += " " + FileName(source) + ": " + s.ToString() + ";";
      continue;
    }
    read += bytes.size();
    bytes.resize(len, '\0');  // data shards padded to the stripe's length; parity's trailer dropped
    chunks[c] = std::move(bytes);
    present.push_back(c);
  }
  if (present.size() < k) {
    return Status::Unavailable("cannot rebuild " + FileName(file) + ": " + std::to_string(present.size()) + " of the " +
                               std::to_string(k) + " chunks of stripe " + std::to_string(stripe) +
                               " needed could be read:" + errors);
  }
  chunks[wanted].assign(len, '\0');
  std::vector<uint8_t*> pointers(k + m, nullptr);
  for (uint32_t c = 0; c < k + m; ++c) {
    if (chunks[c].empty() && len != 0) chunks[c].assign(len, '\0');  // neither read nor wanted: scratch
    pointers[c] = reinterpret_cast<uint8_t*>(chunks[c].data());
  }
  const std::vector<uint32_t> want{wanted};
  STRATA_RETURN_IF_ERROR(code->Reconstruct(pointers, len, present, want));
  std::string& out = chunks[wanted];
  if (wanted < k) {
    out.resize(lengths[wanted]);
  } else {
    ParityTrailer t;
    t.dataset_hash = ParityDatasetHash(file.dataset(), file.version());
    t.version = file.version();
    t.seq = file.seq();
    t.k = k;
    t.m = m;
    t.body_bytes = len;
    t.body_checksum = Checksum64(out.data(), out.size());
    out += EncodeParityTrailer(t);
  }
  auto receiver = FileReceiver::Begin(*d.dir, file);
  if (!receiver.ok()) return receiver.status();
  STRATA_RETURN_IF_ERROR(receiver.value()->Append(out));
  auto committed = receiver.value()->Commit();
  if (!committed.ok()) return committed.status().WithContext("rebuilt " + FileName(file));
  d.files->Add(file);
  spdlog::info("erasure coding: rebuilt {} from {} chunks of stripe {} ({} bytes read)", FileName(file), k, stripe,
               read);
  return read;
}

}  // namespace strata
