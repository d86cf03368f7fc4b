#include "server/base/thread_priority.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace strata {

namespace {

// <linux/ioprio.h>'s values (glibc has no wrapper).
constexpr int kIoprioWhoProcess = 1;  // IOPRIO_WHO_PROCESS: a thread id
constexpr int kIoprioClassBestEffort = 2;
constexpr int kIoprioClassShift = 13;
constexpr int kLowestBestEffort = 7;

}  // namespace

Status RunAtBackgroundPriority(const char* name) {
  if (int err = pthread_setname_np(pthread_self(), name); err != 0) return ErrnoStatus("naming a thread", err);
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 19) != 0) return ErrnoStatus("setpriority", errno);
  if (syscall(SYS_ioprio_set, kIoprioWhoProcess, tid,
              (kIoprioClassBestEffort << kIoprioClassShift) | kLowestBestEffort) != 0) {
    return ErrnoStatus("ioprio_set", errno);
  }
  return Status::OK();
}

}  // namespace strata
