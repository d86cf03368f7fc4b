// Background threads that must not compete with serving: the scrubber's
// checksum verification runs pass after pass for the life of a node, and on a
// busy node (or several nodes on one host) every core it takes is one a
// stream's lane did not get. At nice 19 it takes what serving leaves: CFS
// still gives a nice-19 thread about 1.5% of a busy core, more than its
// default 32 MiB/s of XXH3 needs, so it keeps its pace on all but a saturated
// node.
//
// Thread-safety: acts on the calling thread only.
#pragma once

#include "common/status.h"

namespace strata {

// Names the calling thread `name` (at most 15 characters: what top -H, perf
// and /proc/PID/task/TID/comm show), and lowers its CPU priority to nice 19
// and its I/O priority to the lowest of the best-effort class. Linux keeps
// both per thread. Lowering needs no privilege; an error (a kernel without
// ioprio_set) is returned and changes nothing else.
Status RunAtBackgroundPriority(const char* name);

}  // namespace strata
