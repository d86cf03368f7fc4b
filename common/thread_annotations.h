// Clang's thread-safety analysis (-Wthread-safety): the attributes that let the
// compiler check which mutex guards what. Under other compilers they expand to
// nothing. Use them on members and functions:
//
//   Mutex mu_;
//   int count_ GUARDED_BY(mu_);
//   void Bump() REQUIRES(mu_);     // the caller holds mu_
//   void Stop() EXCLUDES(mu_);     // the caller must not hold mu_ (it takes it)
//
// With -DSTRATA_THREAD_SAFETY=ON and clang, a violation is a compile error
// (.ci/clang-check.sh builds that way). Mutex, MutexLock and CondVar
// (common/mutex.h) carry the attributes; std::mutex does not.
#pragma once

// gRPC's headers bring Abseil's older macros of the same names (GUARDED_BY,
// PT_GUARDED_BY, NO_THREAD_SAFETY_ANALYSIS): the same attributes, so ours
// replace them here, and theirs, if included later, replace ours silently
// (a system header).
#undef GUARDED_BY
#undef PT_GUARDED_BY
#undef NO_THREAD_SAFETY_ANALYSIS

#if defined(__clang__)
#define STRATA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define STRATA_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (Mutex).
#define CAPABILITY(x) STRATA_THREAD_ANNOTATION(capability(x))
// An RAII type that holds a lock for its lifetime (MutexLock).
#define SCOPED_CAPABILITY STRATA_THREAD_ANNOTATION(scoped_lockable)
// Data read or written only with the lock held.
#define GUARDED_BY(x) STRATA_THREAD_ANNOTATION(guarded_by(x))
// A pointer whose pointee is read or written only with the lock held.
#define PT_GUARDED_BY(x) STRATA_THREAD_ANNOTATION(pt_guarded_by(x))
// The caller holds the lock (exclusively) / at least shared.
#define REQUIRES(...) STRATA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) STRATA_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// The function takes the lock and returns holding it / releases it.
#define ACQUIRE(...) STRATA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) STRATA_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) STRATA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) STRATA_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) STRATA_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) STRATA_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// The caller must not hold the lock: the function takes it.
#define EXCLUDES(...) STRATA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// Asserts, for the analysis, that the lock is held here.
#define ASSERT_CAPABILITY(x) STRATA_THREAD_ANNOTATION(assert_capability(x))
// Returns a reference to the lock.
#define RETURN_CAPABILITY(x) STRATA_THREAD_ANNOTATION(lock_returned(x))
// Turns the analysis off for one function; say why beside it.
#define NO_THREAD_SAFETY_ANALYSIS STRATA_THREAD_ANNOTATION(no_thread_safety_analysis)
