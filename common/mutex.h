// Mutex, SharedMutex, MutexLock, ReaderMutexLock and CondVar: std::mutex,
// std::shared_mutex and std::condition_variable with the attributes of
// common/thread_annotations.h, so that clang checks GUARDED_BY and REQUIRES.
// libstdc++'s own types carry none. Same cost: each is the std type inside.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "common/thread_annotations.h"

namespace strata {

class CondVar;

// A non-recursive exclusive lock. Thread-safe.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the calling thread holds this (it cannot check it).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// A reader-writer lock: Lock() for writers, LockShared() for readers.
class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `mu` from construction to destruction; Unlock()/Lock() let go of it
// and take it again within the scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // REQUIRES: held.
  void Unlock() RELEASE() {
    mu_->Unlock();
    held_ = false;
  }
  // REQUIRES: not held.
  void Lock() ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// Holds `mu` exclusively for its lifetime.
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() { mu_->Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds `mu` shared for its lifetime.
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderMutexLock() RELEASE() { mu_->UnlockShared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// A condition variable used with a Mutex. Wait on a condition, given as a
// predicate that reads the guarded state; mark it REQUIRES so the analysis
// checks its reads:
//   MutexLock lock(&mu_);
//   cv_.Wait(&mu_, [this]() REQUIRES(mu_) { return ready_; });
// The predicate runs with *mu held. Thread-safe.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases *mu until `ready()` holds (checked with *mu held), then returns
  // holding *mu. The analysis cannot see that `ready` runs under *mu (it names
  // the lock its own way), hence NO_THREAD_SAFETY_ANALYSIS here only.
  template <typename Predicate>
  void Wait(Mutex* mu, Predicate ready) REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock, ready);
    lock.release();
  }
  // As Wait, for at most `timeout`. Returns ready().
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout, Predicate ready)
      REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool result = cv_.wait_for(lock, timeout, ready);
    lock.release();
    return result;
  }
  // As Wait, until `deadline` at the latest. Returns ready().
  template <typename Clock, typename Duration, typename Predicate>
  bool WaitUntil(Mutex* mu, std::chrono::time_point<Clock, Duration> deadline, Predicate ready)
      REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool result = cv_.wait_until(lock, deadline, ready);
    lock.release();
    return result;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace strata
