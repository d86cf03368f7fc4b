// Which sanitizer this translation unit is built with, for the few places
// that must know: STRATA_TSAN is defined under ThreadSanitizer (gcc's
// __SANITIZE_THREAD__, clang's __has_feature(thread_sanitizer)).
#pragma once

#if defined(__SANITIZE_THREAD__)
#define STRATA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRATA_TSAN 1
#endif
#endif
