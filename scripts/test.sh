#!/bin/sh
# Second command of the README: the whole test suite, as CI runs it.
#  1. a -Werror build, all suites (unit, integration);
#  2. an ASan+UBSan build of everything that is not injected (reader,
#     analysis, CLI, unit tests), running the unit and integration suites
#     again; libtracker.so itself is never sanitized, it lives in other
#     programs;
#  3. a ThreadSanitizer build of only the unit tests that link the capture
#     code itself (intern: the lock-free table, concurrent inserts beside
#     lock-free readers; stacks: concurrent interning; writer: producers, rings
#     and the writer thread, every event once and in global order). The
#     integration order stress test cannot join them: it runs the real
#     libtracker.so inside programs, and TSan, like ASan, cannot sit under
#     an injected allocator;
#  4. the formatting check (scripts/format.sh --check), counted as a test.
# Ends with one summary line: "tests: N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
sh scripts/deps.sh || exit 1

passed=0 failed=0 skipped=0 status=0

run_suite() { # build-dir, extra meson test args...
    dir=$1
    shift
    log=$dir/suite.log
    meson test -C "$dir" --print-errorlogs --num-processes 2 "$@" >"$log" 2>&1
    rc=$?
    cat "$log"
    ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    fl=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    to=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    sk=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    passed=$((passed + ${ok:-0}))
    failed=$((failed + ${fl:-0} + ${to:-0}))
    skipped=$((skipped + ${sk:-0}))
    if [ $rc -ne 0 ] && [ "${fl:-0}" = 0 ] && [ "${to:-0}" = 0 ]; then
        failed=$((failed + 1)) # meson itself failed
    fi
    [ $rc -eq 0 ] || status=1
}

setup() { # dir, options...
    dir=$1
    shift
    if [ -d "$dir" ]; then
        meson setup --reconfigure "$dir" "$@" >/dev/null || exit 1
    else
        meson setup "$dir" "$@" >/dev/null || exit 1
    fi
    ninja -C "$dir" || { echo "tests: 0 passed, 1 failed (build failed: $dir)"; exit 1; }
}

setup build-test --buildtype=debugoptimized -Dwerror=true -Dbench=false
run_suite build-test

setup build-asan --buildtype=debug -Dwerror=true -Dbench=false -Db_sanitize=address,undefined
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_suite build-asan

# Only these tests are built: the rest of a TSan build would cost CI
# minutes and cover nothing more (libtracker.so is never sanitized).
dir=build-tsan
if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" --buildtype=debug -Dwerror=true -Dbench=false -Db_sanitize=thread >/dev/null || exit 1
else
    meson setup "$dir" --buildtype=debug -Dwerror=true -Dbench=false -Db_sanitize=thread >/dev/null || exit 1
fi
if ninja -C "$dir" tests/unit/test_intern tests/unit/test_stacks tests/unit/test_writer; then
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 run_suite "$dir" --no-rebuild intern stacks writer
else
    echo "build failed: $dir"
    failed=$((failed + 1))
    status=1
fi

if sh scripts/format.sh --check; then
    echo "format: ok"
    passed=$((passed + 1))
else
    echo "format: the sources above are not clang-formatted; run sh scripts/format.sh"
    failed=$((failed + 1))
    status=1
fi

echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
