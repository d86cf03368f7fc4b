#include "server/cluster/ec_rebuild.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>

#include "common/checksum.h"
#include "common/grpc_status.h"
#include "server/cluster/file_transfer.h"
#include "server/cluster/membership.h"
#include "server/storage/ec_stripes.h"
#include "server/storage/erasure_code.h"
#include "server/storage/parity_file.h"
#include "server/storage/shard_format.h"

namespace strata {

namespace {

constexpr std::chrono::seconds kReadTimeout{60};
constexpr size_t kLocalPieceBytes = size_t{1} << 20;
// Peers' answers a failed chunk read names in its error (the others counted).
constexpr size_t kToldAnswers = 3;

// Paces one read: called with each piece's size before it is read (empty: no
// pacing); false stops the read with Cancelled.
using Pace = std::function<bool(size_t)>;

// The whole of a local file, read piece by piece, or NotFound.
Status ReadLocalFile(const RebuildDeps& d, const v1::FileRef& file, const Pace& pace, std::string* out) {
  if (!d.files->Has(file)) return Status::NotFound(FileName(file) + " is not held here");
  std::ifstream in(d.dir->Absolute(d.dir->FileRelativePath(file)), std::ios::binary);
  if (!in) return Status::NotFound(FileName(file) + " is not held here");
  if (!pace) {
    out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return Status::OK();
  }
  out->clear();
  std::string piece(kLocalPieceBytes, '\0');
  while (in) {
    if (!pace(piece.size())) return Status::Cancelled("reading " + FileName(file) + " stopped");
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    out->append(piece.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return Status::IOError("reading " + FileName(file));
  return Status::OK();
}

// The whole of `file` from `peer`, at most `limit` bytes.
Status ReadPeerFile(PeerClients* peers, const v1::NodeInfo& node, const v1::FileRef& file, uint64_t limit,
                    const Pace& pace, std::string* out) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kReadTimeout);
  // Tracked: a holder that stops answering mid-read ends it once the view has it down.
  const PeerClients::Tracked tracked = peers->Track(node.id(), &context);
  v1::GetFileRequest request;
  *request.mutable_file() = file;
  auto reader = peers->Peer(node)->GetFile(&context, request);
  v1::FileChunk chunk;
  out->clear();
  bool too_long = false, stopped = false;
  while (reader->Read(&chunk)) {
    if (pace && !pace(chunk.data().size())) stopped = true;
    if (!stopped && out->size() + chunk.data().size() > limit) too_long = true;
    if (stopped || too_long) {
      context.TryCancel();
      while (reader->Read(&chunk)) {
      }
      break;
    }
    out->append(chunk.data());
  }
  Status remote = FromGrpcStatus(reader->Finish());
  if (stopped) return Status::Cancelled("reading " + FileName(file) + " stopped");
  if (too_long) return Status::Corruption(FileName(file) + " from a peer is longer than its stripe allows");
  // Cancelled by PeerClients (the view has the holder down): the holder's
  // fault, as Unavailable, so that the next holder is asked; Cancelled is
  // this read stopping.
  if (remote.code() == Code::kCancelled) return Status::Unavailable(remote.message());
  return remote;
}

// How a chunk is decoded: which chunks may be sources, how reads are paced,
// and the data shards' checksums (empty: not checked here; the result is
// verified as a whole when it is committed).
struct DecodeOptions {
  bool data_only = false;  // sources: the K data shards only
  Pace pace_local;
  Pace pace_remote;
  const std::vector<uint64_t>* shard_checksums = nullptr;  // by seq, from the catalog
  std::vector<uint32_t> skip;                              // chunks (0..K+M-1) not to use
};

// Reads K chunks of `file`'s stripe other than `file` and decodes `file`:
// the whole file (a parity file with its trailer). Adds the bytes read to
// `*read`; `*sources` (may be null) gets the chunks decoded from.
Result<std::string> DecodeChunk(const RebuildDeps& d, const v1::DatasetInfo& info,
                                const std::vector<uint64_t>& shard_bytes, const v1::FileRef& file,
                                const DecodeOptions& o, uint64_t* read, std::vector<uint32_t>* sources = nullptr) {
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
  std::string errors;
  for (uint32_t c = 0; c < (o.data_only ? k : k + m) && present.size() < k; ++c) {
    if (c == wanted || std::find(o.skip.begin(), o.skip.end(), c) != o.skip.end()) continue;
    if (lengths[c] == 0 && c < k) {  // past the last shard: an empty chunk
      chunks[c].assign(len, '\0');
      present.push_back(c);
      continue;
    }
    const v1::FileRef source = StripeFile(file.dataset(), file.version(), stripe, c, k, m);
    const uint64_t file_bytes = c < k ? lengths[c] : len + kParityTrailerBytes;
    std::string bytes;
    Status s = ReadLocalFile(d, source, o.pace_local, &bytes);
    if (s.code() == Code::kCancelled) return s;
    if (!s.ok()) {
      // The first answers go into the error (the holder's first: the last
      // alone, a node that never had the chunk, hid why the holder did not
      // give it), the rest counted, so a large cluster's error stays short.
      std::string tried = "here: " + s.message();
      size_t told = 0, untold = 0;
      const auto tell = [&](const std::string& id, const std::string& answer) {
        if (told < kToldAnswers) {
          tried += "; " + id + ": " + answer;
          ++told;
        } else {
          ++untold;
        }
      };
      for (const std::string& id : EcRanked(members, source, k, m)) {
        const v1::NodeInfo* n = FindNode(map, id);
        if (id == d.view->self_id() || n == nullptr) continue;
        if (n->state() != v1::NODE_UP) {
          tell(id, "down");
          continue;
        }
        s = ReadPeerFile(d.peers, *n, source, file_bytes, o.pace_remote, &bytes);
        if (s.ok() || s.code() == Code::kCancelled) break;
        tell(id, s.ToString());
      }
      if (s.code() == Code::kCancelled) return s;
      if (untold > 0) tried += "; " + std::to_string(untold) + " more";
      if (!s.ok()) s = Status(s.code(), tried);
    }
    if (s.ok() && bytes.size() != file_bytes) {
      s = Status::Corruption(FileName(source) + " is " + std::to_string(bytes.size()) + " bytes, not " +
                             std::to_string(file_bytes));
    }
    if (s.ok() && c < k && o.shard_checksums != nullptr) {  // a data shard against its catalog checksum
      const uint64_t seq = uint64_t{stripe} * k + c;
      if (seq >= o.shard_checksums->size() || bytes.size() < kShardTrailerSize ||
          Checksum64(bytes.data(), bytes.size() - kShardTrailerSize) != (*o.shard_checksums)[seq]) {
        s = Status::Corruption(FileName(source) + ": file checksum mismatch");
      }
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
    *read += bytes.size();
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
    // Neither read nor wanted: not touched, so not allocated (memory: K + 1 chunks).
    const bool used = c == wanted || std::find(present.begin(), present.end(), c) != present.end();
    pointers[c] = used ? reinterpret_cast<uint8_t*>(chunks[c].data()) : nullptr;
  }
  const std::vector<uint32_t> want{wanted};
  STRATA_RETURN_IF_ERROR(code->Reconstruct(pointers, len, present, want));
  if (sources != nullptr) *sources = present;
  std::string out = std::move(chunks[wanted]);
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
  return out;
}

// The data shards' catalog lengths and checksums, by seq.
void LengthsAndChecksums(const std::vector<v1::ShardInfo>& shards, std::vector<uint64_t>* bytes,
                         std::vector<uint64_t>* checksums) {
  for (const v1::ShardInfo& s : shards) {
    bytes->push_back(s.bytes());
    checksums->push_back(s.checksum());
  }
}

}  // namespace

Result<uint64_t> RebuildChunk(const RebuildDeps& d, const v1::DatasetInfo& info,
                              const std::vector<v1::ShardInfo>& shards, const v1::FileRef& file, RateLimiter* limiter) {
  std::vector<uint64_t> bytes, checksums;
  LengthsAndChecksums(shards, &bytes, &checksums);
  DecodeOptions o;
  o.shard_checksums = &checksums;  // a damaged data shard is never a source
  if (limiter) {
    o.pace_remote = [limiter](size_t n) { return limiter->Acquire(n); };
  }
  const auto decode_and_commit = [&](uint64_t* read, std::vector<uint32_t>* used) -> Status {
    auto out = DecodeChunk(d, info, bytes, file, o, read, used);
    if (!out.ok()) return out.status();
    auto receiver = FileReceiver::Begin(*d.dir, file);
    if (!receiver.ok()) return receiver.status();
    STRATA_RETURN_IF_ERROR(receiver.value()->Append(out.value()));
    auto committed = receiver.value()->Commit();
    if (!committed.ok()) return committed.status().WithContext("rebuilt " + FileName(file));
    return Status::OK();
  };
  uint64_t read = 0;
  std::vector<uint32_t> used;
  Status s = decode_and_commit(&read, &used);
  // A data shard that fails its own checks was decoded from a parity file
  // whose body is wrong though its checksum is right (written so): decoded
  // again without each parity file used, in turn.
  const uint32_t k = info.ec_data();
  if (s.code() == Code::kDataLoss && file.kind() == v1::FileRef::SHARD) {
    for (uint32_t c : used) {
      if (c < k) continue;
      o.skip = {c};
      s = decode_and_commit(&read, nullptr);
      if (s.code() != Code::kDataLoss) break;
    }
  }
  if (!s.ok()) return s;
  d.files->Add(file);
  spdlog::info("erasure coding: rebuilt {} from {} chunks of stripe {} ({} bytes read)", FileName(file), info.ec_data(),
               StripeOf(file, info.ec_data(), info.ec_parity()), read);
  return read;
}

Result<uint64_t> CheckStripeParity(const RebuildDeps& d, const v1::DatasetInfo& info,
                                   const std::vector<v1::ShardInfo>& shards, const v1::FileRef& file,
                                   const std::function<bool(size_t)>& pace) {
  if (file.kind() != v1::FileRef::PARITY) return Status::InvalidArgument(FileName(file) + " is not a parity file");
  if (!d.files->Has(file)) return Status::NotFound(FileName(file) + " is not held here");
  std::vector<uint64_t> bytes, checksums;
  LengthsAndChecksums(shards, &bytes, &checksums);
  DecodeOptions o;
  o.data_only = true;
  o.pace_local = pace;
  o.pace_remote = pace;
  o.shard_checksums = &checksums;
  uint64_t read = 0;
  auto want = DecodeChunk(d, info, bytes, file, o, &read);
  if (!want.ok()) return want.status();
  std::string held;
  STRATA_RETURN_IF_ERROR(ReadLocalFile(d, file, pace, &held));
  read += held.size();
  if (held != want.value()) {
    return Status::Corruption(FileName(file) + " does not match the parity of its stripe's data shards");
  }
  return read;
}

}  // namespace strata
