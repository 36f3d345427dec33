#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_first.py - Python-first attribution (issue 10 §2): in a
capture of a Python process, a stack with Python frames reads Python only by
default, so the bytes native code allocated under a Python line (here the
_trkext extension's malloc under python/py_first.py's ext_alloc) are that
line's own; `--native` gives the hybrid stack back (the extension's frame
under the line). A stack with no Python frame (a native thread) keeps its
native frames either way. File and line show where users look: text
reports name a file by its path below site-packages (never a bare
__init__.py), folded lines read "func (file:line)", speedscope frames carry
file and line, and `go tool pprof` shows Python functions (<module> too)
with their files and lines."""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, eq_all, main  # noqa: E402
from pyutil import (SYS_PY, build_ext, fixture, is_python, marker, need_python,  # noqa: E402
                    pyrun, report, rows, show, text)

EXT_KEEP = 6100000
BA_KEEP = 5300000
NATIVE_KEEP = 4700000
SITE_KEEP = 3900000
# pfsite/__init__.py, written under a site-packages directory by capture().
PFSITE = "def grow(n):\n    return bytearray(n)\n"
PFSITE_LINE = 2

_cap = {}


def capture(env):
    """Records python/py_first.py with the extension once."""
    if "out" not in _cap:
        need_python()
        ext = build_ext(env)
        d = env.tmpdir("pf")
        site = os.path.join(d, "lib", "site-packages")
        os.makedirs(os.path.join(site, "pfsite"))
        with open(os.path.join(site, "pfsite", "__init__.py"), "w") as fh:
            fh.write(PFSITE)
        out = os.path.join(d, "pf.bin")
        _, out, v = pyrun(env, ["--python", SYS_PY, fixture("py_first.py")], out=out,
                          extra_path=[ext, site])
        eq(v.get("ran"), 1, "py_first.py ran")
        _cap["out"] = out
    return _cap["out"]


def the_group(leaks, size):
    g = [x for x in leaks if x["bytes"] == size]
    eq(len(g), 1, "leak groups of %d bytes" % size)
    return g[0]


def test_summary_owns_python_line(env):
    """The top "own" row of `summary` is the Python line that called into
    the extension, not the extension's malloc; with --native it is the
    extension's frame (trkext.c) and the Python line holds it in total."""
    out = capture(env)
    f = fixture("py_first.py")
    line = marker(f, "pf_ext")
    s = report(env, "summary", ["-n", "0", out])
    top = s["locations"][0]
    eq_all([((top["function"], os.path.basename(top["file"] or ""), top["line"]),
             ("ext_alloc", "py_first.py", line), "top own row (default)"),
            (top["own_bytes"], EXT_KEEP, "ext_alloc own bytes at the peak"),
            (top.get("python"), True, "the top row is a Python frame"),
            (rows(s, "alloc_block"), [], "no row of the extension's native frame")])
    check(all(r.get("python") for r in s["locations"]
              if r["function"] in ("ext_alloc", "make_bytearray", "main")),
          "Python rows are Python frames")
    n = report(env, "summary", ["-n", "0", "--native", out])
    top = n["locations"][0]
    eq_all([((top["function"], os.path.basename(top["file"] or "")), ("alloc_block", "trkext.c"),
             "top own row with --native"),
            (top["own_bytes"], EXT_KEEP, "alloc_block own bytes with --native"),
            (top.get("python", False), False, "alloc_block is native"),
            (rows(n, "ext_alloc", line)[0]["own_bytes"], 0, "ext_alloc owns nothing with --native"),
            (rows(n, "ext_alloc", line)[0]["total_bytes"] >= EXT_KEEP, True,
             "ext_alloc holds the block in total with --native")])
    # The text report names the line too.
    t = text(env, "summary", [out])
    first = [x for x in t.splitlines() if "ext_alloc" in x or "alloc_block" in x][0]
    check("ext_alloc" in first and ("py_first.py:%d" % line) in first,
          "the text summary's first row of the two is ext_alloc at py_first.py:%d:\n%s"
          % (line, t[:3000]))


def test_leaks_python_stack(env):
    """`leaks`: the block's stack is Python only (innermost ext_alloc at its
    line); --native puts the extension's frame, then the Python frames."""
    out = capture(env)
    f = fixture("py_first.py")
    line = marker(f, "pf_ext")
    g = the_group(report(env, "leaks", ["-n", "0", out]), EXT_KEEP)
    st = g["stack"]
    eq_all([((st[0]["function"], st[0]["line"]), ("ext_alloc", line), "innermost frame (default)"),
            ([x["function"] for x in st[:3]], ["ext_alloc", "main", "<module>"],
             "Python frames from the line out:\n      " + show(st)),
            ([show([x]) for x in st if not is_python(x)], [], "native frames (default)")])
    g = the_group(report(env, "leaks", ["-n", "0", "--native", out]), EXT_KEEP)
    st = g["stack"]
    eq_all([(st[0]["function"], "alloc_block", "innermost frame with --native"),
            (os.path.basename(st[0]["module"] or "").startswith("_trkext"), True,
             "alloc_block's module"),
            ((st[1]["function"], st[1]["line"], is_python(st[1])), ("ext_alloc", line, True),
             "the Python line right above it with --native:\n      " + show(st))])


def test_native_only_stack_keeps_native_frames(env):
    """A native thread never ran Python: its block keeps its native frames
    (the thread function in the extension, at its malloc line)."""
    out = capture(env)
    for opts in ([], ["--native"]):
        g = the_group(report(env, "leaks", ["-n", "0"] + opts + [out]), NATIVE_KEEP)
        st = g["stack"]
        eq_all([(st[0]["function"], "native_thread_main", "innermost frame %s" % opts),
                (st[0]["line"], marker(fixture("trkext.c"), "native_thread_malloc"),
                 "its line %s" % opts),
                ([x["function"] for x in st if is_python(x)], [],
                 "Python frames on a native thread's stack %s" % opts)])


def test_tree_python_line(env):
    """`tree`: the Python line is a leaf holding the block (own bytes) by
    default; with --native the extension's frame sits under it."""
    out = capture(env)
    line = marker(fixture("py_first.py"), "pf_ext")

    def find(node, pred, path=()):
        path = path + (node,)
        if pred(node):
            return path
        for c in node.get("children", []):
            r = find(c, pred, path)
            if r:
                return r
        return None

    def at_line(n):
        return n.get("function") == "ext_alloc" and n.get("line") == line

    for opts, leaf in (([], True), (["--native"], False)):
        t = report(env, "tree", opts + [out])
        roots = t["children"]
        p = None
        for r in roots:
            p = p or find(r, at_line)
        check(p is not None, "tree %s has ext_alloc at line %d" % (opts, line))
        n = p[-1]
        kids = [c.get("function") for c in n.get("children", [])]
        if leaf:
            eq_all([(n["self_bytes"], EXT_KEEP, "ext_alloc own bytes"),
                    ("alloc_block" in kids, False, "no alloc_block under ext_alloc")])
        else:
            check("alloc_block" in kids, "alloc_block under ext_alloc with --native: %s" % kids)


def test_export_folded_python_only(env):
    """`export --format folded`: the line of the block ends at ext_alloc by
    default (no native frame on any Python stack); --native adds
    alloc_block."""
    out = capture(env)
    d = env.tmpdir("pf-folded")
    for opts, want in (([], False), (["--native"], True)):
        path = os.path.join(d, "f%d.txt" % len(opts))
        cp = env.run_raw([env.tracker, "export", "--format", "folded"] + opts
                         + [out, "-o", path])
        eq(cp.returncode, 0, "export folded %s: %s" % (opts, cp.stderr.decode(errors="replace")))
        with open(path) as fh:
            lines = [x.rsplit(" ", 1) for x in fh.read().splitlines()]
        mine = [(s, int(b)) for s, b in lines if "ext_alloc" in s and int(b) == EXT_KEEP]
        eq(len(mine), 1, "folded lines of the block %s" % opts)
        inner = mine[0][0].split(";")[-1]
        eq(inner.startswith("alloc_block"), want,
           "innermost folded frame %s: %s" % (opts, mine[0][0][-300:]))
        if not want:
            line = marker(fixture("py_first.py"), "pf_ext")
            eq(inner, "ext_alloc (py_first.py:%d)" % line, "innermost folded frame")
            eq(mine[0][0].split(";")[-2], "main (py_first.py:%d)"
               % marker(fixture("py_first.py"), "pf_main_ext"), "its caller's folded frame")


def test_text_paths_identify_file(env):
    """Text reports name a package's __init__.py by its path below
    site-packages, never the bare basename."""
    out = capture(env)
    for cmd in ("summary", "tree"):
        t = text(env, cmd, [out])
        check("pfsite/__init__.py:%d" % PFSITE_LINE in t,
              "%s names pfsite/__init__.py:%d:\n%s" % (cmd, PFSITE_LINE, t[:3000]))
        check("(__init__.py:" not in t, "%s shows a bare __init__.py:\n%s" % (cmd, t[:3000]))


def test_speedscope_file_line(env):
    """speedscope frames of Python code carry their file and line."""
    out = capture(env)
    path = os.path.join(env.tmpdir("pf-ss"), "s.json")
    cp = env.run_raw([env.tracker, "export", "--format", "speedscope", out, "-o", path])
    eq(cp.returncode, 0, "export speedscope: %s" % cp.stderr.decode(errors="replace"))
    with open(path) as fh:
        frames = json.load(fh)["shared"]["frames"]
    f = fixture("py_first.py")
    got = sorted((os.path.basename(x.get("file") or ""), x.get("line"))
                 for x in frames if x["name"] in ("ext_alloc", "make_bytearray"))
    eq(got, sorted([("py_first.py", marker(f, "pf_ext")), ("py_first.py", marker(f, "pf_ba"))]),
       "speedscope frames of ext_alloc and make_bytearray (file, line)")


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


def test_pprof_python_frames(env):
    """`go tool pprof`: the module body is a named function (not
    <unknown>), Python frames have their file and line, and the main binary
    is the traced executable."""
    out = capture(env)
    path = os.path.join(env.tmpdir("pf-pp"), "p.pb.gz")
    cp = env.run_raw([env.tracker, "export", "--format", "pprof", out, "-o", path])
    eq(cp.returncode, 0, "export pprof: %s" % cp.stderr.decode(errors="replace"))
    top = go_pprof(env, "-top", "-nodecount=100000", path)
    check("<unknown>" not in top, "go tool pprof -top shows <unknown>:\n" + top[:3000])
    check("py_first.<module>" in top, "the module body in -top:\n" + top[:3000])
    f = fixture("py_first.py")
    lines = go_pprof(env, "-top", "-lines", "-nodecount=100000", path)
    want = "ext_alloc %s:%d" % (f, marker(f, "pf_ext"))
    check(want in lines, "%r in go tool pprof -top -lines:\n%s" % (want, lines[:3000]))
    check("File: python3" in top, "the main binary is the interpreter:\n" + top[:600])


if __name__ == "__main__":
    sys.exit(main(globals()))
