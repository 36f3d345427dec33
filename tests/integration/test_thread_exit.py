#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_thread_exit.py - allocations made while a thread or the process is
being torn down: pthread key destructors (two rounds), C++ thread_local
destructors and an atexit handler. They must neither crash nor hang the
program, and they must be counted."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import diff, eq, main  # noqa: E402

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


if __name__ == "__main__":
    sys.exit(main(globals()))
