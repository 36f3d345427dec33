#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_lines.py - the per-thread line cursor per code object
(src/python/py_lines.c, issue 12) gives exactly the lines PyCode_Addr2Line
gives: python/line_cursor.py allocates from one long code object forward,
backward and in the middle, from a loop, a generator, recursion and two
threads running the same code. Every site has its own size, so the bytes
leaked at each line, with that line as the innermost Python frame, are
exact: a cursor left at a stale position moves bytes to another line."""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, main  # noqa: E402
from pyutil import SYS_PY, fixture, marker, need_python, py_at, pyrun, report  # noqa: E402

FX = "line_cursor.py"
N = 20
FILL = 400  # statements per @filler line: the body's lines run well past the first


def long_fixture(env):
    """line_cursor.py with each @filler line expanded to FILL statements,
    written where this test's files go: one long code object, without
    committing hundreds of same-shape lines."""
    out = []
    with open(fixture(FX)) as f:
        for line in f:
            if line.startswith("    x = 0  # @filler"):
                out += ["    x = %d\n" % i for i in range(FILL)]
            else:
                out.append(line)
    path = os.path.join(env.tmpdir("fx"), FX)
    with open(path, "w") as f:
        f.writelines(out)
    return path
OBJ_MAX = 256  # a bytearray object's own block, with --python-allocators


def sz(site):
    return 100000 + 1000 * site


def sites():
    """(function, marker, blocks, size of each)."""
    return [
        ("long_body", "early", 4 * N, sz(1)),
        ("long_body", "middle", 4 * N, sz(2)),
        ("long_body", "late", 4 * N, sz(3)),
        ("loop", "loop_a", N, sz(4)),
        ("loop", "loop_b", N, sz(5)),
        ("gen", "gen_a", N, sz(6)),
        ("gen", "gen_b", N, sz(7)),
        ("rec", "rec_pre", 4 * N, sz(8)),
        ("rec", "rec_post", 4 * N, sz(9)),
    ]


def check_lines(env, flags, python=SYS_PY):
    need_python(python)
    fx = long_fixture(env)
    _, out, v = pyrun(env, ["--python", python] + flags + [fx, str(N)])
    eq(v.get("ran"), 1, "line_cursor.py ran")
    leaks = report(env, "leaks", ["-n", "0", out])
    objects = "--python-allocators" in flags
    what = "%s %s" % (os.path.basename(python), " ".join(flags) or "hybrid")
    for function, name, blocks, size in sites():
        line = marker(fx, name)
        got = sum(g["bytes"] for g in py_at(leaks, function, line))
        lo = blocks * (size + 1)
        hi = lo + (blocks * OBJ_MAX if objects else 0)
        check(lo <= got <= hi, "%s: bytes leaked at %s line %d (@%s): %d, want %s"
              % (what, function, line, name, got, lo if lo == hi else "%d..%d" % (lo, hi)))


def test_hybrid(env):
    check_lines(env, [])


def test_python_only(env):
    check_lines(env, ["--python-only"])


def test_hybrid_allocators(env):
    check_lines(env, ["--python-allocators"])


def path_python():
    """The python3 on PATH (pyenv's shim on the dev machine)."""
    import shutil
    py = shutil.which("python3")
    if not py:
        raise Skip("no python3 on PATH")
    return os.path.realpath(py) if "shims" not in py else py


def test_path_python(env):
    check_lines(env, [], path_python())


def check_reused(env, python):
    """A code object freed and another allocated at its address, with a line
    table of the same address, length and first line but other lines
    (python/line_reuse.py): each allocation at its own line, none at the
    line the old table had there."""
    need_python(python)
    rounds = 40
    _, out, v = pyrun(env, ["--python", python, fixture("line_reuse.py"), str(rounds)])
    eq(v.get("ran"), 1, "line_reuse.py ran")
    leaks = report(env, "leaks", ["-n", "0", out])
    what = os.path.basename(python)
    for line, want in ((3, rounds // 2 * 100001), (4, 0), (5, rounds // 2 * 200001)):
        got = sum(g["bytes"] for g in py_at(leaks, "f", line))
        eq(got, want, "%s: bytes leaked at f line %d of the recompiled function" % (what, line))


def test_code_reused(env):
    check_reused(env, SYS_PY)


def test_code_reused_path_python(env):
    check_reused(env, path_python())


def test_pyenv_versions(env):
    """Every CPython 3.10-3.13 of pyenv found here: the cursor steps with
    each version's own _PyCode_CheckLineNumber (3.8-3.9 keep PyCode_Addr2Line)."""
    pys = []
    for minor in range(8, 14):
        pys += sorted(glob.glob("/root/.pyenv/versions/3.%d.*/bin/python3.%d" % (minor, minor)))
    if not pys:
        raise Skip("no pyenv CPython 3.8-3.13 under /root/.pyenv/versions")
    for py in pys:
        check_lines(env, [], py)


if __name__ == "__main__":
    sys.exit(main(globals()))
