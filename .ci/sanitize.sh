#!/usr/bin/env bash
# CI: the server, the client and the Python module under sanitizers.
#   .ci/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer, in ./build-fuzz
#   .ci/sanitize.sh tsan   ThreadSanitizer (clang, with the thread-safety analysis), in ./build-tsan
# Builds stratad, the strata CLI and a chosen set of test binaries with every
# target instrumented, runs them, and fails on any sanitizer report. The
# integration tests start the instrumented stratad as real processes, so a
# report from a server is caught too: every process writes its reports under
# <build>/sanitizer-logs/, and a non-empty folder fails the step even when the
# test itself passed.
#
# The asan step shares its build with the fuzzers: clang 14 with
# -DSTRATA_FUZZ=ON instruments everything with ASan, UBSan and libFuzzer's
# coverage (fuzz/CMakeLists.txt), so after the tests the same build runs the
# libFuzzer smoke of every target (bench/fuzz.sh, STRATA_FUZZ_SECONDS each,
# default 5). One build instead of two keeps CI inside its budget.
#
# Which tests: the whole suite under ASan and TSan would take longer than CI's
# budget on two cores, so each mode runs the tests that drive the code paths
# the sanitizer is good at. ASan/UBSan: every integration test (real stratad
# processes: ingest, streaming, failover, restarts, bad input, peer attacks,
# TLS, disk faults), the parsers of untrusted bytes and the storage layer, the
# client, and the Python module (pytest with the ASan runtime preloaded).
# TSan: the concurrent serving path (stream reactor, part building, drain,
# timers, replication callbacks) and the cluster, restart and endurance tests.
# Suppressions (.ci/tsan.supp) each say why.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."
mode=${1:?usage: .ci/sanitize.sh asan|tsan}
case "$mode" in
  asan) python=ON; dir=build-fuzz ;;
  tsan) python=OFF; dir=build-tsan ;;
  *) echo "usage: .ci/sanitize.sh asan|tsan" >&2; exit 2 ;;
esac
if ! command -v ninja >/dev/null 2>&1; then bash deploy/setup-debian.sh; fi

# Not here: memory_budget_test and unread_streams_test measure the server's
# resident memory against its budget, and ASan's shadow memory and quarantine
# add hundreds of MiB to it (RssAnon 377 MiB under a 112 MiB budget): their
# finding would be ASan's own memory, not ours. So is block_cache_test's
# whole-process budget case (both modes).
integration=(stream_epoch_test restart_test bad_input_test serve_work_test cli_test cluster_test damage_test endurance_test frozen_node_test
             health_test peer_attack_test tls_auth_test stratified_test disk_test peer_listen_test
             ingest_compat_test disk_fault_test multi_writer_test multi_writer_abort_test multi_writer_home_test "scale_test:*SmallStepsJoin*"
             open_files_test ingest_limits_test drain_test)
if [ "$mode" = asan ]; then
  tests=("${integration[@]}"
         shard_format_test shard_footer_test shard_copy_test shard_refill_test record_view_test id_ranges_test stratum_index_test aligned_writer_test
         path_guard_test kv_store_test catalog_test "block_cache_test:-*MemoryBudget*" block_cache_locks_test step_blocks_test
         ingest_session_test
         stratum_key_test verified_records_test open_version_test
         batch_stream_test part_builder_test wire_part_test composition_recorder_test auth_test config_test
         sample_source_test batch_test received_part_test resume_token_test proto_convert_test format_test epoch_plan_test
         stratified_sampler_test work_planner_test parallel_copy_test staging_test read_loop_test part_queue_test)
else
  # TSan slows these 5-15x: the long endurance runs are left to ASan, and of
  # the cluster tests the failover and rebalance ones run (NAME:FILTER).
  tests=(stream_epoch_test serve_work_test "cluster_test:*KillNine*:*Joining*" restart_test batch_stream_test
         part_builder_test periodic_task_test active_work_test stream_lanes_test "block_cache_test:-*MemoryBudget*"
         block_cache_locks_test parallel_copy_test staging_test read_loop_test part_queue_test
         replicator_test verified_records_test open_version_test
         multi_writer_test multi_writer_abort_test multi_writer_home_test "scale_test:*SmallStepsJoin*" open_files_test
         ingest_limits_test drain_test)
fi

source deploy/local/ccache.sh  # sets launcher
# -O1 -g1: the optimisation level the sanitizers recommend, and line tables
# for the reports' stacks; both compile faster than RelWithDebInfo's -O2 -g.
# Warnings are the main build's business (-DSTRATA_WERROR there).
common=(-G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1"
        -DSTRATA_WITH_CUDA=OFF -DSTRATA_WITH_PYTHON=$python -DSTRATA_WERROR=OFF "${launcher[@]}"
        -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF)  # pybind11's LTO drops the coverage constructors
if [ ! -f "$dir/build.ninja" ]; then
  if [ "$mode" = asan ]; then
    if ! command -v clang++-14 >/dev/null 2>&1; then bash deploy/setup-debian.sh; fi
    cmake -S . -B "$dir" "${common[@]}" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DSTRATA_FUZZ=ON >/dev/null
  else
    # clang, not gcc: the same build carries clang's thread-safety analysis
    # of the lock annotations and clang's warnings, as errors (the -DSTRATA_WERROR
    # given last wins), so CI needs no separate clang build for them.
    if ! command -v clang++-14 >/dev/null 2>&1; then bash deploy/setup-debian.sh; fi
    cmake -S . -B "$dir" "${common[@]}" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DSTRATA_SANITIZE=thread -DSTRATA_THREAD_SAFETY=ON -DSTRATA_WERROR=ON >/dev/null
  fi
fi
start=$(date +%s)
targets=(stratad strata strata-make-dataset)
[ "$mode" = tsan ] && targets+=(strata_common strata_server strata_client strata_ingest strata_cli_lib)
for t in "${tests[@]}"; do targets+=("${t%%:*}"); done
[ "$python" = ON ] && targets+=(_strata)
cmake --build "$dir" --parallel "$(nproc)" --target "${targets[@]}"
echo "sanitize[$mode]: built in $(( $(date +%s) - start ))s"

logs=$PWD/$dir/sanitizer-logs
rm -rf "$logs" && mkdir -p "$logs"
export ASAN_OPTIONS="log_path=$logs/asan:abort_on_error=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/.ci/tsan.supp"
# gRPC and RocksDB spawn threads that the sanitizers' runtimes slow down; the
# test binaries' own timeouts are generous, and ctest's --timeout is not used here.
failed=()
run_start=$(date +%s)
# Two test binaries at a time (the machine's two cores), each to its own log.
run_one() {
  local t=$1 name=${1%%:*} filter='*'
  [ "$t" != "$name" ] && filter=${t#*:}
  local bin
  bin=$(find "$dir/tests" -type f -name "$name" -perm -u+x | head -1)
  if [ -z "$bin" ]; then echo "sanitize[$mode]: $name was not built" >&2; return 1; fi
  local t0=$(date +%s)
  if "$bin" --gtest_brief=1 --gtest_filter="$filter" >"$logs/$name.out" 2>&1; then
    echo "sanitize[$mode]: $name passed ($(( $(date +%s) - t0 ))s)"
  else
    echo "sanitize[$mode]: $name FAILED ($(( $(date +%s) - t0 ))s); its output:"; tail -50 "$logs/$name.out"
    return 1
  fi
}
for t in "${tests[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
  ( rc=0; run_one "$t" || rc=$?; echo "$rc" >"$logs/${t%%:*}.rc" ) &
done
wait
for t in "${tests[@]}"; do
  [ "$(cat "$logs/${t%%:*}.rc" 2>/dev/null)" = 0 ] || failed+=("${t%%:*}")
done
if [ "$python" = ON ]; then
  # CPython is not instrumented: pytest runs with clang's ASan runtime
  # preloaded, and its own allocations at exit are not ours to report, so
  # leak checking is off for this step. The programs the tests start
  # (stratad, the CLI) carry the runtime themselves: they are started through
  # wrappers that drop the preload (exec: same pid, so kill -9 still hits them).
  wrap=$PWD/$dir/sanitizer-wrappers
  mkdir -p "$wrap"
  for b in server/stratad client/strata bench/strata-make-dataset; do
    printf '#!/bin/sh\nunset LD_PRELOAD\nexec %s "$@"\n' "$PWD/$dir/$b" >"$wrap/$(basename "$b")"
    chmod +x "$wrap/$(basename "$b")"
  done
  t0=$(date +%s)
  python_failed=0
  for t in stream lifetimes dataset; do
    if ! (cd tests/python && env ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
          LD_PRELOAD="$(clang++-14 -print-file-name=libclang_rt.asan-x86_64.so)" \
          PYTHONPATH="$PWD/../../$dir/client/python" PYTHONDONTWRITEBYTECODE=1 \
          STRATA_STRATAD="$wrap/stratad" STRATA_CLI="$wrap/strata" STRATA_MAKE_DATASET="$wrap/strata-make-dataset" \
          /usr/bin/python3 -m pytest "test_$t.py" -q -p no:cacheprovider) >"$logs/python_$t.out" 2>&1; then
      echo "sanitize[$mode]: python test_$t.py FAILED; output:"; tail -60 "$logs/python_$t.out"
      python_failed=1
    fi
  done
  if [ $python_failed = 0 ]; then
    echo "sanitize[$mode]: python tests passed ($(( $(date +%s) - t0 ))s)"
  else
    failed+=(python)
  fi
fi
if [ "$mode" = asan ]; then
  # The libFuzzer smoke: every target for a few seconds from its corpus.
  if env -u ASAN_OPTIONS -u UBSAN_OPTIONS bash bench/fuzz.sh "${STRATA_FUZZ_SECONDS:-5}" >"$logs/fuzz.out" 2>&1; then
    echo "sanitize[$mode]: libFuzzer smoke clean:"; grep -v '^\[' "$logs/fuzz.out" | tail -12 || true
  else
    echo "sanitize[$mode]: libFuzzer smoke FAILED; output:"; tail -60 "$logs/fuzz.out"
    failed+=(fuzz)
  fi
fi
reports=$(find "$logs" -type f \( -name 'asan*' -o -name 'ubsan*' -o -name 'tsan*' \) | sort)
if [ -n "$reports" ]; then
  echo "sanitize[$mode]: sanitizer reports:" >&2
  for r in $reports; do echo "== $r" >&2; head -60 "$r" >&2; done
  failed+=(reports)
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "sanitize[$mode]: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "sanitize[$mode]: clean: ${#tests[@]} test binaries$([ "$python" = ON ] && echo ' and the Python tests') in $(( $(date +%s) - run_start ))s"
