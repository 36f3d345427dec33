#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_thread_exit.py - allocations made while a thread or the process is
being torn down: pthread key destructors (two rounds), C++ thread_local
destructors and an atexit handler. They must neither crash nor hang the
program, and they must be counted."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, diff, eq, main  # noqa: E402

T, KS = 8, 1000


def test_pthread_key_destructor(env):
    prog = env.prog("key_dtor")
    s, _ = env.traced([prog, str(T), "1", str(KS)], timeout=60)
    s0, _ = env.traced([prog, str(T), "0", str(KS)], timeout=60)
    # Per thread: two destructor rounds of (leak KS, free KS+1); plus the
    # atexit handler's KS.
    eq(diff(s, s0, "allocations"), T * 4 + 1, "allocations difference")
    eq(diff(s, s0, "frees"), T * 2, "frees difference")
    eq(diff(s, s0, "bytes_allocated"), T * 2 * (KS + KS + 1) + KS, "bytes_allocated difference")
    eq(diff(s, s0, "leaked_bytes"), T * 2 * KS + KS, "leaked_bytes difference")
    eq(diff(s, s0, "leaked_allocations"), T * 2 + 1, "leaked_allocations difference")
    eq(s["unmatched_frees"], 0, "unmatched_frees")


def test_thread_local_destructor(env):
    prog = env.prog("tls_dtor_cxx")
    s, _ = env.traced([prog, str(T), "1", str(KS)], timeout=60)
    s0, _ = env.traced([prog, str(T), "0", str(KS)], timeout=60)
    # Per thread: the constructor's block (freed by the destructor) and the
    # destructor's own leak.
    eq(diff(s, s0, "allocations"), T * 2, "allocations difference")
    eq(diff(s, s0, "frees"), T, "frees difference")
    eq(diff(s, s0, "bytes_allocated"), T * 2 * KS, "bytes_allocated difference")
    eq(diff(s, s0, "leaked_bytes"), T * KS, "leaked_bytes difference")
    eq(s["unmatched_frees"], 0, "unmatched_frees")


def test_dlopen_tls_not_lost(env):
    """Libraries with TLS of their own, dlopened one after another. The
    loader grows the thread's DTV with malloc; if our hook unwound there,
    libunwind's first touch of its own TLS re-entered that DTV update and
    glibc aborted on a double free (this program died with SIGABRT). Hooks
    called by the loader now take its return address as the stack. And a
    call nested in our hook by the unwinder (its TLS, its cache mappings)
    is the tracker's doing, not a lost event of the program (`import torch`
    reported 5)."""
    lib = os.path.join(env.progdir, "libtls_lib.so")
    if not os.access(lib, os.R_OK):
        from harness import Skip
        raise Skip("libtls_lib.so not built")
    d = env.tmpdir("tls")
    n = 40  # well past the DTV's initial surplus of 14 slots
    for i in range(n):
        shutil.copyfile(lib, os.path.join(d, "libtls_%d.so" % i))
    s0, _ = env.traced([env.prog("tls_dlopen"), d, "0"], timeout=60)
    s, v = env.traced([env.prog("tls_dlopen"), d, str(n)], timeout=60)
    eq(v.get("loaded"), n, "libraries loaded")
    eq(s["lost_events"], 0, "lost_events")
    eq(s["unmatched_frees"], 0, "unmatched_frees")
    # Each load: tls_touch's 64-byte pair and main's (100 + i)-byte pair;
    # the loader's own allocations come on top, so only a floor is exact.
    check(diff(s, s0, "allocations") >= 2 * n, "allocations: at least the program's 2 per load")


if __name__ == "__main__":
    sys.exit(main(globals()))
