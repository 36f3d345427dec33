#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_pprof_main.py - `go tool pprof` takes a profile's first mapping for
the main binary ("File:"). A run whose first blocks are made inside
libstdc++.so (progs/cxx_string.cpp: std::string's code lives there) must
still name the traced program, not libstdc++ (issue 10 §2 saw
"File: libstdc++" on a PyTorch run); libstdc++'s frames stay in the
profile, innermost, under their own mapping."""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, main  # noqa: E402


def go_pprof(env, *args):
    go = shutil.which("go")
    if not go:
        raise Skip("go not installed (Debian: golang-go)")
    home = env.tmpdir("gohome")
    cp = env.run_raw([go, "tool", "pprof"] + list(args), timeout=120,
                     env={"HOME": home, "GOCACHE": os.path.join(home, "cache"),
                          "PPROF_BINARY_PATH": home})
    eq(cp.returncode, 0, "go tool pprof %s: %s" % (" ".join(args),
                                                   cp.stderr.decode(errors="replace")))
    return cp.stdout.decode(errors="replace")


def test_main_binary_with_libstdcxx_frames(env):
    prog = env.prog("cxx_string")
    if not os.path.exists(prog):
        raise Skip("no C++ compiler: cxx_string not built")
    _, out, v = env.run([prog, "20"])
    eq(v.get("kept"), 20, "the program ran")
    for sel in ("--peak", "--allocated", "--leaks"):
        path = os.path.join(env.tmpdir("pp"), "p.pb.gz")
        cp = env.run_raw([env.tracker, "export", "--format", "pprof", sel, out, "-o", path])
        eq(cp.returncode, 0, "export pprof %s: %s" % (sel, cp.stderr.decode(errors="replace")))
        top = go_pprof(env, "-top", "-nodecount=100000", path)
        check(re.search(r"^File: cxx_string$", top, re.M),
              "%s: the main binary is the program:\n%s" % (sel, top[:1200]))
        # libstdc++'s own code holds the strings' bytes (flat), under its
        # own mapping.
        check(re.search(r"^\s*[0-9.]+[kMG]?B\s.*basic_string", top, re.M),
              "%s: a libstdc++ string frame with bytes of its own:\n%s" % (sel, top[:3000]))
        raw = go_pprof(env, "-raw", path)
        maps = raw[raw.index("Mappings"):]
        check(re.search(r"libstdc\+\+\.so", maps), "%s: libstdc++'s mapping:\n%s" % (sel, maps))
        first = maps.splitlines()[1] if len(maps.splitlines()) > 1 else ""
        check(first.rstrip().endswith("cxx_string") or "/cxx_string " in first,
              "%s: mapping 1 is the program: %r" % (sel, first))


if __name__ == "__main__":
    sys.exit(main(globals()))
