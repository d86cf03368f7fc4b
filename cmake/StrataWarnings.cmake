# Warning flags for every strata target: on, and clean.
function(strata_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wformat=2 -Wimplicit-fallthrough)
  if(STRATA_THREAD_SAFETY)
    target_compile_options(${target} PRIVATE -Wthread-safety -Werror=thread-safety)
  endif()
  if(STRATA_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
