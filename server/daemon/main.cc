#include "common/allocator.h"
#include "server/daemon/server.h"

int main(int argc, char** argv) {
  strata::TuneAllocatorForStreaming();  // common/allocator.h
  return strata::RunStratad(argc, argv);
}
