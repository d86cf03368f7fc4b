// Fuzzes the request validation of every RPC that takes a request from the
// network (server/cluster/request_validation.h, and the FileRef check of
// PutFile, GetFile and ReadRecords). Input: one byte picks the RPC, the rest
// is its request in protobuf wire form; bytes that do not parse end the run,
// as gRPC would refuse them.
// Properties: a validator returns a Status, and an error quotes a bounded
// prefix of what it refuses (its message stays short); a path the checks
// accept (a file reference, a peer's shard records) lies inside the data
// directory.
#include <string>
#include <vector>

#include "common/dataset_ref.h"
#include "fuzz/fuzz_support.h"
#include "server/cluster/request_validation.h"
#include "server/storage/path_guard.h"

namespace {

using namespace strata;

const DataDir& Dir() {
  static const DataDir* dir = [] {
    auto* d = new DataDir(fuzz::ScratchDir() + "/data");
    if (!d->Init().ok()) fuzz::Fail("cannot create the data directory");
    return d;
  }();
  return *dir;
}

// Errors quote at most a short prefix; every message must stay far below the
// size of the fields the fuzzer can make (kilobytes).
void CheckBounded(const Status& status) {
  if (!status.ok() && status.message().size() > 1024) {
    fuzz::Fail("an error message of " + std::to_string(status.message().size()) + " bytes");
  }
}

bool Inside(const std::string& path) {
  const std::string& root = Dir().root();
  return path.size() > root.size() + 1 && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/' &&
         path.find("/../") == std::string::npos;
}

void CheckFileRef(const v1::FileRef& file) {
  const Status valid = ValidateFileRef(file);
  CheckBounded(valid);
  auto path = Dir().CheckedFilePath(file);
  CheckBounded(path.status());
  if (path.ok() && !Inside(*path)) fuzz::Fail("a checked file path outside the data directory: " + *path);
  if (path.ok() && !valid.ok()) fuzz::Fail("CheckedFilePath accepted an invalid FileRef");
}

template <typename Message>
bool Parse(std::string_view bytes, Message* m) {
  return m->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view bytes = fuzz::AsView(data + 1, size - 1);
  switch (data[0] % 9) {
    case 0: {  // DataService.StreamBatches, and ServeWork's messages
      v1::StreamRequest r;
      if (Parse(bytes, &r)) CheckBounded(ValidateStreamRequest(r));
      v1::WorkRequest w;
      if (Parse(bytes, &w)) {
        CheckBounded(ValidateWorkRequest(w, true));
        CheckBounded(ValidateWorkRequest(w, false));
      }
      break;
    }
    case 1: {  // DataService.Ingest, its first message; PeerService.JoinIngest and JoinOpenIngest
      v1::IngestRequest r;
      if (Parse(bytes, &r)) CheckBounded(ValidateIngestOptions(r.open()));
      v1::JoinIngestRequest j;
      if (Parse(bytes, &j)) CheckBounded(ValidateJoinIngest(j));
      break;
    }
    case 2: {  // AdminService.DescribeDataset and DeleteVersion; PeerService.AbortIngest
      v1::DescribeDatasetRequest r;
      if (Parse(bytes, &r)) CheckBounded(ValidateDescribeRequest(r));
      v1::DeleteVersionRequest d;
      if (Parse(bytes, &d) && ValidateDeleteRequest(d).ok() && !ParseDatasetRef(d.dataset())->version) {
        fuzz::Fail("an accepted delete that names no version");
      }
      v1::AbortIngestRequest a;
      if (Parse(bytes, &a) && ValidateAbortIngest(a).ok() && !a.dataset().empty() &&
          !ParseDatasetRef(a.dataset())->version) {
        fuzz::Fail("an accepted abort by version that names no version");
      }
      break;
    }
    case 3: {  // PeerService.Ping
      v1::PingRequest r;
      if (Parse(bytes, &r)) CheckBounded(ValidatePing(r));
      break;
    }
    case 4: {  // PeerService.ReadRecords
      v1::ReadRecordsRequest r;
      if (!Parse(bytes, &r)) break;
      CheckBounded(ValidateReadRecords(r));
      CheckFileRef(r.file());
      break;
    }
    case 5: {  // PeerService.PutVersion (and anti-entropy's VersionMeta)
      v1::PutVersionRequest r;
      if (!Parse(bytes, &r)) break;
      v1::VersionRecord record;
      std::vector<v1::ShardRecord> shards;
      const Status valid = ValidateVersionMeta(r.meta(), Dir(), &record, &shards);
      CheckBounded(valid);
      if (!valid.ok()) break;
      for (const v1::ShardRecord& shard : shards) {
        if (!Inside(Dir().Absolute(shard.path()))) fuzz::Fail("an accepted shard path outside the data directory");
      }
      break;
    }
    case 6: {  // PeerService.ListVersions
      v1::ListVersionsRequest r;
      if (Parse(bytes, &r)) CheckBounded(ValidateListVersions(r));
      break;
    }
    case 7: {  // PeerService.ListLocalFiles
      v1::ListLocalFilesRequest r;
      if (Parse(bytes, &r)) CheckBounded(ValidateListLocalFiles(r));
      break;
    }
    case 8: {  // PeerService.PutFile's first chunk and GetFile
      v1::FileChunk r;
      if (Parse(bytes, &r)) CheckFileRef(r.file());
      break;
    }
  }
  return 0;
}
