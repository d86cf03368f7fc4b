// The shard file format: immutable files of sample records with an index footer.
//
// Layout (all integers little-endian):
//   file    := file_header record* footer trailer
//   header  := magic "STRSHARD" (8 bytes) | u32 format_version (=3) | u32 flags (=0)
//   record  := u32 header_len | RecordHeader (protobuf, header_len bytes)
//              | payload (the fields' bytes, concatenated in header order)
//              | u64 checksum  (XXH3-64 of header_len, header and payload)
//   footer  := u64 record_count | u64 record_offset[record_count] (ascending)
//              | ShardFooter (protobuf: first id, dataset, version, seq)
//   trailer := u64 footer_offset | u32 footer_len | u32 format_version
//              | u64 footer_checksum (XXH3-64 of record_count and ShardFooter)
//              | u64 file_checksum   (XXH3-64 of bytes [0, footer_offset + footer_len))
//              | magic "STRTRAIL" (8 bytes)                                   = 40 bytes
//
// Records of one shard hold consecutive dense ids: record i has id first_id + i.
// The offset table is fixed-width so that opening a shard costs O(1) work and
// memory: a reader indexes the mapped table in place. The footer checksum
// leaves the table out, because a read checks the entries it uses: the range
// they give must lie among the records and hold a record that passes its own
// checksum and carries the expected id, so a wrong entry makes that read
// Corruption, never wrong bytes; the file checksum (VerifyFile, scrubbing,
// repair) covers the table too. Format 2 (still read) hashed the whole footer
// at every open: 8 bytes per record, 80 MB for 10M records, which was most of
// a first batch's cost on a fresh server. Format 1 (still read) kept the
// offsets as a varint list inside ShardFooter, which every open had to decode
// into memory: O(records) time and heap.
// Format 4 (written for a compressed version) stores the same records, each
// still framed and checksummed as above, in blocks:
//   record* := block*
//   block   := u64 raw_len | u64 stored_len | stored (one zstd frame of the
//              block's records, raw_len bytes once decompressed)
//              | u64 checksum (XXH3-64 of raw_len, stored_len and stored)
//   footer  := u64 record_count | u64 record_entry[record_count]
//              | u64 block_count | u64 block_offset[block_count] (ascending)
//              | ShardFooter (its compression names the codec)
//   record_entry := block index << 32 | offset of the record in the block's raw bytes
// A block holds whole records, about kCompressedBlockBytes of them, so one
// sample is read by decompressing one block. The block checksum covers the
// stored bytes and is verified before they are decompressed: a damaged block
// is Corruption and is never decompressed; each record's own checksum is
// verified after. The footer checksum covers both counts and the ShardFooter;
// reads check the table entries they use, as in format 3.
// A writer writes to a temporary name in the same directory, fsyncs, and renames
// into place, so a shard path either does not exist or holds a complete file.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "server/storage/aligned_writer.h"
#include "server/storage/verified_records.h"
#include "strata/v1/storage.pb.h"

namespace strata {

inline constexpr uint32_t kShardFormatVersion = 3;            // what writers write without compression
inline constexpr uint32_t kCompressedShardFormatVersion = 4;  // what they write with it
inline constexpr uint32_t kNewestShardFormatVersion = 4;      // the newest readers accept
inline constexpr uint32_t kOldestShardFormatVersion = 1;      // the oldest readers accept
// Format 4: a block is closed once its records reach this many bytes.
inline constexpr size_t kCompressedBlockBytes = size_t{64} << 10;    // the default
inline constexpr size_t kMinCompressedBlockBytes = size_t{4} << 10;  // what an ingest may ask for
inline constexpr size_t kMaxCompressedBlockBytes = size_t{16} << 20;
inline constexpr size_t kBlockHeaderSize = 16;  // raw_len, stored_len
inline constexpr int kDefaultZstdLevel = 3;
inline constexpr std::string_view kShardHeaderMagic = "STRSHARD";
inline constexpr std::string_view kShardTrailerMagic = "STRTRAIL";
inline constexpr size_t kShardHeaderSize = 16;
inline constexpr size_t kShardTrailerSize = 40;

// What the writer knows about the shard it is writing.
struct ShardIdentity {
  std::string dataset;
  uint64_t version = 0;
  uint32_t seq = 0;
  uint64_t first_id = 0;
};

// How the writer stores records. The default writes format 3.
struct ShardWriteOptions {
  v1::Compression compression = v1::COMPRESSION_NONE;
  int level = kDefaultZstdLevel;               // zstd's level; REQUIRES: 1..19
  size_t block_bytes = kCompressedBlockBytes;  // format 4: records per block, in bytes
};

// Checks a compression choice from the network: the codec is known and the
// level within its range (0 means the codec's default). InvalidArgument if not.
Status ValidateCompression(v1::Compression compression, int level);

// What a finished shard looks like.
struct ShardSummary {
  uint64_t records = 0;
  uint64_t file_bytes = 0;     // size of the final file
  uint64_t payload_bytes = 0;  // sum of field bytes
  uint64_t record_bytes = 0;   // the records as framed (what format 3 would store)
  uint64_t file_checksum = 0;  // as stored in the trailer
};

// Writes one shard file. Not thread-safe: one writer per ingest session.
class ShardWriter {
 public:
  // Creates "<dir of path>/.tmp.<file name>.<random>" and writes the file header.
  // The file appears at `path` only after Finish() succeeds. Fails with
  // AlreadyExists if `path` exists.
  static Result<std::unique_ptr<ShardWriter>> Create(std::string path, ShardIdentity identity,
                                                     const ShardWriteOptions& options = {});

  // Removes the temporary file unless Finish() succeeded.
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends one record.
  // REQUIRES: header.id() == identity.first_id + records();
  //           header.field_sizes(i) == fields[i].size() and the counts match.
  Status Append(const v1::RecordHeader& header, std::span<const std::string_view> fields);

  uint64_t records() const { return records_; }
  // Bytes in the file so far (header and records, before the footer; with
  // compression, the closed blocks).
  uint64_t bytes_written() const { return out_.size(); }

  // Writes the footer and trailer, fsyncs the file, renames it to `path` and
  // fsyncs the directory. After an error the temporary file is removed.
  Result<ShardSummary> Finish();

 private:
  ShardWriter(std::string path, std::string tmp_path, int fd, ShardIdentity identity, ShardWriteOptions options);
  // Appends bytes to the body, adding them to the file checksum.
  Status Write(std::string_view bytes);
  // Format 4: adds one framed record to the open block, closing it when full.
  Status AppendToBlock(std::string_view framed);
  // Format 4: compresses the open block and writes it (no-op when empty).
  Status CloseBlock();
  // The footer's tables: format 3's offsets, or format 4's entries and blocks.
  void AppendTables(std::string* footer) const;
  // Closes and removes the temporary file (no-op once published).
  void RemoveTemp();
  // RemoveTemp(), then returns `why`: every I/O error ends the writer.
  Status Fail(Status why);

  std::string path_;
  std::string tmp_path_;
  UniqueFd fd_;  // the temporary file; invalid once finished or failed
  ShardIdentity identity_;
  v1::ShardFooter footer_;  // metadata; the offsets go in the table before it
  ShardWriteOptions options_;
  std::vector<uint64_t> record_offsets_;  // format 4: the record entries
  std::vector<uint64_t> block_offsets_;   // format 4
  std::string block_;                     // format 4: the open block's records
  std::string stored_;                    // format 4: scratch, one compressed block
  struct ZstdCCtxFree {
    void operator()(void* c) const;
  };
  std::unique_ptr<void, ZstdCCtxFree> cctx_;  // format 4: reused for every block
  uint64_t records_ = 0;
  uint64_t payload_bytes_ = 0;
  uint64_t record_bytes_ = 0;
  std::unique_ptr<class Checksum64Stream> file_sum_;
  AlignedFileWriter out_;
  std::string record_;  // scratch: one record, assembled before it is written
  bool finished_ = false;
};

// One record, read and verified, as views of its bytes: nothing is copied and
// nothing is allocated once the vectors have their capacity, so a caller that
// reads many records into one RecordView allocates nothing per record. The
// views point into the bytes it was parsed from (a reader's mapping, valid
// while the ShardReader lives, or the caller's buffer).
//
// The fields that serving needs are parsed out of the record's encoded
// v1::RecordHeader; the key and the attributes are left encoded (ParseHeader
// gives them). The header's strings were checked as UTF-8 when the record
// was written, and the record's checksum covers them since.
struct RecordView {
  uint64_t id = 0;
  std::string_view label;
  std::string_view stratum;
  std::vector<std::string_view> field_names;
  std::vector<uint64_t> field_sizes;  // sum to payload.size()
  std::string_view header_bytes;      // the encoded v1::RecordHeader
  std::string_view payload;           // all fields, concatenated in header order

  // Field i's bytes. REQUIRES: i < field_sizes.size().
  std::string_view field(int i) const;
  // The field named `name`, or an empty view if there is none.
  std::string_view field(std::string_view name) const;
  // The whole header, key and attributes included (a copy). Corruption if it
  // does not parse.
  Status ParseHeader(v1::RecordHeader* out) const;
  // Empties every view (keeps the vectors' capacity).
  void Clear();
};

// Verifies and parses one raw record (length prefix to checksum), as
// ShardReader::RawRecord returns it or a peer sends it. The views point into
// `raw`. Corruption (and *out left empty) if the checksum, framing, id or
// field sizes do not match. With `checksum_verified` (a record this process
// verified and has kept locked in memory since: server/storage/verified_records.h)
// the checksum is not computed again; everything else is checked.
Status ParseRecord(std::string_view raw, uint64_t expected_id, RecordView* out, bool checksum_verified = false);

// Reads a shard file through a read-only memory mapping.
// Thread-safe: after Open, every method is const and may be called concurrently.
class ShardReader {
 public:
  // Maps the file and checks the header, trailer and footer (magic, version,
  // bounds, footer checksum). Does not read every record: records are verified
  // as they are read (their offsets included), the whole file by VerifyFile().
  // Costs O(1) (formats 1 and 2: O(records), hashing the whole footer);
  // nothing per record is allocated.
  // Errors: NotFound, IOError, Corruption (with the path in the message).
  static Result<std::unique_ptr<ShardReader>> Open(const std::string& path);

  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  // Readers open in this process now (each holds a descriptor and a mapping).
  static size_t OpenCount();
  // Retired: the dataset cache let go of this reader (its budget of open
  // readers, server/storage/dataset_cache.h). It serves the uses that hold
  // it and closes when the last lets go; the block cache keeps none of its
  // blocks once they are unpinned.
  void Retire() const { retired_.store(true, std::memory_order_relaxed); }
  bool retired() const { return retired_.load(std::memory_order_relaxed); }
  ShardReader& operator=(const ShardReader&) = delete;

  const std::string& path() const { return path_; }
  // The footer's metadata (record_offsets is empty from format 2: see RecordOffset).
  const v1::ShardFooter& footer() const { return footer_; }
  uint32_t format_version() const { return format_version_; }
  uint64_t first_id() const { return footer_.first_id(); }
  uint64_t num_records() const { return records_; }
  // File offset of record `index` as the footer states it (unverified).
  // REQUIRES: index < num_records().
  uint64_t RecordOffset(uint64_t index) const;
  uint64_t file_size() const { return size_; }
  uint64_t file_checksum() const { return file_checksum_; }

  // Reads record `index` (0-based within the shard), verifying its checksum and
  // its id. A damaged record gives Corruption and never its bytes; an index past
  // the end gives OutOfRange. On any error *out is left empty. A record it
  // verified while its pages were locked (Lock) is not hashed again until they
  // are released (server/storage/verified_records.h).
  Status Read(uint64_t index, RecordView* out) const;

  // Whether the records are stored in compressed blocks (format 4). Such a
  // shard is read with ReadBlockRecord, ReadCopy or CopyRawRecord: Read gives
  // FailedPrecondition and RawRecord is empty, since no record lies in the
  // mapping as it is served.
  bool compressed() const { return block_table_ != nullptr; }
  uint64_t num_blocks() const { return blocks_; }

  // Format 4: reads record `index` out of its block, which is read with
  // pread, its checksum verified before it is decompressed, and then the
  // record verified as Read does. The views point into *block, which keeps
  // the decompressed bytes alive (shared with the process's cache of
  // decompressed blocks, server/storage/decompressed_cache.h, so that a
  // block read again is not decompressed again). Corruption for a damaged block or record, OutOfRange
  // past the end; on any error *out is left empty.
  Status ReadBlockRecord(uint64_t index, std::shared_ptr<const std::string>* block, RecordView* out) const;

  // Read, but through pread into *buffer instead of the mapping: the views
  // point into *buffer, and no page of the file is mapped into this process.
  // (CopyRawRecord, then ParseRaw.)
  Status ReadCopy(uint64_t index, std::string* buffer, RecordView* out) const;

  // The raw bytes of record `index` (as RawRecord gives them) read with pread
  // into *raw, unverified: ParseRaw verifies them. OutOfRange past the end.
  // With if_cached it reads only from the kernel's page cache: if some of the
  // record's pages are not there, it reads nothing, asks the kernel to start
  // reading them from storage (without waiting for it) and returns
  // Unavailable. A caller with many records to read asks for all of them
  // that way first, so that the reads from storage overlap, and then reads
  // the unavailable ones again without if_cached.
  Status CopyRawRecord(uint64_t index, std::string* raw, bool if_cached = false) const;

  // Verifies and parses `raw`, the bytes of record `index` (RawRecord's or
  // CopyRawRecord's), as Read does.
  Status ParseRaw(uint64_t index, std::string_view raw, RecordView* out) const;

  // The raw bytes of record `index` (length prefix to checksum) without
  // verification: for copying whole records between nodes. Empty if the
  // footer's offsets for it are out of order or out of bounds (a damaged
  // footer that still matched its checksum).
  // REQUIRES: index < num_records().
  std::string_view RawRecord(uint64_t index) const;

  // The bytes [begin, end) record `index` occupies in the file, or {0, 0} where
  // RawRecord would be empty; for a compressed shard, those of its stored
  // block. REQUIRES: index < num_records().
  std::pair<uint64_t, uint64_t> RecordRange(uint64_t index) const;

  // Hints for a caller about to read many records in a known order: each starts
  // loading memory into the CPU cache and returns without waiting; neither maps
  // a page that is not mapped already, nor changes what a read returns.
  // PrefetchOffset loads record `index`'s entry of the offset table;
  // PrefetchRecord loads the record's first bytes, reading that entry (so
  // prefetch the entry some records earlier). Indexes past the end are ignored.
  void PrefetchOffset(uint64_t index) const;
  void PrefetchRecord(uint64_t index) const;
  // Asks the kernel to start reading, from storage if need be, the page of the
  // offset table that holds record `index`'s entry, without waiting for it: a
  // caller about to look up many records of shards that may have left the
  // page cache asks for all of them first, so that their reads overlap.
  // A system call each: for a stream's first step, not for every read.
  void AdviseOffset(uint64_t index) const;

  // Residency of the mapping, for a cache that manages it (server/storage/block_cache.h).
  // Neither changes what a read returns; both clip the range to the file.
  // Populate maps the pages of [offset, offset + len) into this process,
  // reading them from storage first if they are not in the page cache
  // (blocking: call it off the serving path), and locks them there as Lock
  // does where it can. IOError if storage fails.
  Status Populate(uint64_t offset, uint64_t len) const;
  // Lock locks those pages in memory (mlock; it maps them, reading them from
  // storage where needed: call it off the serving path), so that the records
  // reads verify in them need not be hashed again. False where the kernel
  // refused, or the shard is compressed (read around the mapping).
  bool Lock(uint64_t offset, uint64_t len) const;
  // Whether every page of [offset, offset + len) is locked now.
  bool Locked(uint64_t offset, uint64_t len) const;
  // Refill drops [offset, offset + len) from this process's mapping and from
  // the page cache where they hold it in small folios, so that the next read
  // through the mapping (Populate, Lock) reads it again whole, into 2 MiB
  // folios that one entry each maps. Records read one at a time (pread,
  // after the page cache dropped the file) leave their pages in 4 KiB
  // folios, and faults fill the gaps between them with small ones too: a
  // node that read its shards so served 1 KiB records at about a sixth more
  // CPU, for as long as it ran (docs/performance.md). Small folios are those
  // this process maps page by page (PAGEMAP_SCAN, Linux 6.7), or where it
  // maps nothing, a page cache that holds part of the range (mincore). Only
  // whole 2 MiB spans of the records are refilled; a page some other mapping
  // holds stays. Call it off the serving path, while the range is not
  // locked (a locked page is never dropped); returns whether it dropped
  // anything, and then, once the range is read in again, call Refilled:
  // after kRefillTries ranges that came back mapped page by page (no 2 MiB
  // folios on this kernel or filesystem) and none that did not, Refill
  // does nothing more in this process.
  bool Refill(uint64_t offset, uint64_t len) const;
  void Refilled(uint64_t offset, uint64_t len) const;
  // Release unlocks those pages and drops them from this process's memory
  // (every record of the file is then verified again when next read); the
  // page cache may keep them, and a later read maps them back in.
  void Release(uint64_t offset, uint64_t len) const;
  // Whether every page of [offset, offset + len) is in the kernel's page
  // cache (mincore). Touching an uncached page through the mapping reads its
  // whole folio from storage, up to 2 MiB for one small record. True where
  // the kernel cannot say.
  bool Cached(uint64_t offset, uint64_t len) const;

  // Re-reads the whole file and compares it with the trailer's file checksum
  // (the scrubber's check, and that of a copy received from a peer).
  // Corruption on a mismatch, IOError if it cannot be read. Reads with pread
  // in 1 MiB pieces: it maps no page, so verifying a shard adds at most a
  // piece to the process's memory, whatever the shard's size.
  // `before_piece`, if given, is called with each piece's size before it is
  // read: the scrubber paces there (so it reads at its rate throughout, never
  // a whole shard in one burst) and returns false to stop (Cancelled).
  Status VerifyFile(const std::function<bool(size_t)>& before_piece = nullptr) const;

 private:
  ShardReader() = default;
  // ParseRaw, with the checksum left out where a read verified the record in
  // locked pages (VerifiedRecords::Trusted).
  Status Parse(uint64_t index, std::string_view raw, RecordView* out, bool checksum_verified) const;
  // Checks header, trailer and footer of the mapped file and fills the members.
  Status CheckLayout();
  // Format 4: parses the footer's tables and message.
  Status CheckBlockLayout(const char* footer, uint64_t footer_len, uint64_t footer_checksum);
  // Format 4: block `b`, read, verified and decompressed (or from the cache).
  Result<std::shared_ptr<const std::string>> Block(uint64_t b) const;
  // Format 4: the raw bytes of record `index` within its decompressed block.
  Status BlockRecord(uint64_t index, std::shared_ptr<const std::string>* block, std::string_view* raw) const;
  uint64_t BlockOffset(uint64_t b) const;
  // Advises the kernel how the mapping is read: records (before
  // `footer_offset`) in 2 MiB folios, the footer a page at a time.
  void AdviseMapping(uint64_t footer_offset) const;

  std::string path_;
  UniqueFd fd_;  // for ReadCopy and VerifyFile
  const char* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t body_end_ = 0;     // footer_offset + footer_len
  uint64_t records_end_ = 0;  // footer_offset
  uint64_t file_checksum_ = 0;
  uint32_t format_version_ = 0;
  uint64_t records_ = 0;
  const char* offset_table_ = nullptr;  // formats 2-4: records_ u64s in the mapping
  const char* block_table_ = nullptr;   // format 4: blocks_ u64s in the mapping
  uint64_t blocks_ = 0;
  v1::ShardFooter footer_;
  // Format 4: names this reader's blocks in the process's cache of
  // decompressed blocks (server/storage/decompressed_cache.h).
  uint64_t serial_ = 0;
  // Uncompressed shards: the records verified in locked pages.
  std::unique_ptr<VerifiedRecords> verified_;
  mutable std::atomic<bool> retired_{false};
};

}  // namespace strata
