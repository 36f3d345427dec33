#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python.py - Python frames in reports (issue 5): known Python
functions allocating known sizes (python/alloc_sites.py: bytearray, a list,
a method, the C extension python/trkext.c built here) come back with their
exact function names (qualified names on 3.11+), files and lines in
`summary --json` and `leaks --json`, whether the program is a script
(`tracker run [--python PY] script.py`, or the interpreter found on PATH),
`-m module`, `-c code` or `tracker run python3 script.py`; hybrid stacks put
the Python frame directly above the extension's native frame and
--python-only keeps Python frames alone; leaks are what is live when the
script's code has finished; --python-allocators shows pymalloc's small
objects at their lines (kinds pymalloc/pycalloc) and PYTHONMALLOC=malloc
makes them malloc/calloc; --python-internals shows the interpreter frames the
default hides; named threading threads (python/threads_named.py); a C
program embedding the shared libpython calling Python from main and from a
pthread through PyGILState_Ensure (progs/embed_python.c); and the same exact
lines on every CPython 3.8-3.13 of pyenv found on this machine.

Expected lines come from "@name" markers in the fixtures."""

import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, eq_all, ge, le, main  # noqa: E402
from pyutil import (SYS_PY, all_leaks_text, build_embed, build_ext, find_frame,  # noqa: E402
                    first_py, fixture, groups_at, innermost_at, is_python, marker, need_python,
                    py_at, py_version, pyrun, report, row, rows, show, text)

SITES = "alloc_sites.py"
BA_KEEP, LIST_KEEP, METHOD_KEEP, EXT_KEEP = 3000000, 200000, 2200000, 2500000
BA_TEMP, EXT_TEMP, SMALL = 1700000, 1300000, 100
M = {name: marker(SITES, name) for name in (
    "ba_alloc", "list_alloc", "ext_alloc", "method_alloc", "small_malloc", "small_calloc",
    "ba_temp", "ext_temp", "main_ba", "main_list", "main_method", "main_ext", "main_temp",
    "main_small", "module_main")}


def method_name(python):
    """What a method's frame is called: co_qualname on 3.11+, else co_name."""
    return "Holder.grow" if py_version(python) >= (3, 11) else "grow"


def run_sites(env, args, python=SYS_PY, ext=True, **kw):
    """Runs alloc_sites under the tracker (ARGS: how) and returns (out,
    values); the extension is importable when EXT."""
    extra = [build_ext(env, python)] if ext else []
    _, out, values = pyrun(env, args, extra_path=extra, **kw)
    eq(values.get("ext"), 1 if ext else 0, "extension imported")
    return out, values


def check_summary_sites(env, out, code_file, python=SYS_PY, ext=True, what=""):
    """The exact rows of the allocation sites in `summary --json`: each
    Python line holds exactly its block at the peak (the end, when every
    kept block is live)."""
    s = report(env, "summary", ["-n", "0", out])
    checks = []
    want = [("make_bytearray", "ba_alloc", BA_KEEP + 1),
            ("make_list", "list_alloc", 8 * LIST_KEEP),
            (method_name(python), "method_alloc", METHOD_KEEP + 1),
            ("main", "main_ba", BA_KEEP + 1),
            ("main", "main_list", 8 * LIST_KEEP),
            ("main", "main_method", METHOD_KEEP + 1)]
    if ext:
        want += [("ext_alloc", "ext_alloc", EXT_KEEP), ("main", "main_ext", EXT_KEEP)]
    for function, m, size in want:
        r = row(s, function, M[m])
        checks += [(r["file"], code_file, "%s%s file" % (what, function)),
                   (r["total_bytes"], size, "%s%s line %d: bytes at the peak"
                    % (what, function, M[m]))]
        if "python" in r:
            checks.append((r["python"], True, "%s%s is a Python frame" % (what, function)))
    # Freed before the peak: nothing there at the peak.
    checks.append(([r["total_bytes"] for r in rows(s, "temporary") if r["total_bytes"]], [],
                   what + "temporary()'s bytes at the peak"))
    if ext:
        # The extension's own native frame: both of its mallocs. (Its line
        # creating the capsule is a row too when pymalloc is recorded.)
        # Python-first by default: the extension's malloc is the Python
        # line's own; --native shows the extension's frame under it.
        checks.append((row(s, "ext_alloc", M["ext_alloc"])["own_bytes"], EXT_KEEP,
                       what + "ext_alloc own bytes at the peak (Python-first)"))
        checks.append((rows(s, "alloc_block"), [], what + "alloc_block rows by default"))
        s = report(env, "summary", ["-n", "0", "--native", out])
        ml = marker(fixture("trkext.c"), "ext_malloc")
        nat = [r for r in rows(s, "alloc_block", ml)
               if os.path.basename(r["file"] or "") == "trkext.c"]
        eq(len(nat), 1, what + "alloc_block rows at line %d (all: %s)"
           % (ml, [(r["file"], r["line"]) for r in rows(s, "alloc_block")]))
        checks += [
                   (nat[0]["allocations"], 2, what + "alloc_block allocations"),
                   (nat[0]["own_bytes"], EXT_KEEP, what + "alloc_block own bytes at the peak"),
                   (nat[0].get("python", False), False, what + "alloc_block is native"),
                   (os.path.basename(nat[0]["module"] or "").startswith("_trkext"), True,
                    what + "alloc_block module is the extension")]
    eq_all(checks)
    return s


def check_leak_sites(env, out, code_file, python=SYS_PY, ext=True, objects=False):
    """`leaks --json`: every kept block is a leak with its exact Python
    frames (innermost Python frame, its caller, the module body); the
    temporary ones are not leaks. When objects are recorded one by one
    (objects=True), the object and its buffer come from the same Python
    line and merge into one group unless --python-internals keeps the
    interpreter's frames that tell them apart."""
    leaks = report(env, "leaks", ["-n", "0"] + (["--python-internals"] if objects else []) + [out])
    ctx = "\nleak groups:\n" + all_leaks_text(leaks)
    checks = []
    want = [("make_bytearray", "ba_alloc", "main_ba", BA_KEEP + 1),
            ("make_list", "list_alloc", "main_list", 8 * LIST_KEEP),
            (method_name(python), "method_alloc", "main_method", METHOD_KEEP + 1)]
    for function, m, call, size in want:
        # The block's group; with PYTHONMALLOC=malloc or --python-allocators
        # the object holding it is a group of its own at the same line.
        g = [x for x in py_at(leaks, function, M[m]) if x["bytes"] == size]
        check(len(g) == 1, "one leak group of %d bytes allocated in %s at line %d, got %d%s"
              % (size, function, M[m], len(g), ctx))
        g = g[0]
        st = g["stack"]
        pys = [f for f in st if is_python(f)]
        checks += [(g["bytes"], size, "%s leaked bytes" % function),
                   (g["count"], 1, "%s leaked blocks" % function),
                   (pys[0]["file"], code_file, "%s file" % function),
                   ([(f["function"], f["line"], f["file"]) for f in pys[1:3]],
                    [("main", M[call], code_file), ("<module>", M["module_main"], code_file)],
                    "%s's Python callers:\n      %s" % (function, show(st)))]
    if ext:
        # Python-first by default: the block's innermost frame is the line.
        # (With objects recorded, the capsule made at the same line merges
        # into the group: a few dozen bytes more.)
        d = report(env, "leaks", ["-n", "0", out]) if objects else leaks
        g = [x for x in innermost_at(d, "ext_alloc", M["ext_alloc"])
             if x["bytes"] == EXT_KEEP or (objects and EXT_KEEP < x["bytes"] < EXT_KEEP + 1024)]
        checks.append((len(g), 1, "leak groups of the block at ext_alloc's line (default)"))
        # The hybrid check is about --native without the interpreter's frames.
        leaks = report(env, "leaks", ["-n", "0", "--native", out])
        # (With objects recorded, the capsule alloc_block creates is a
        # group of its own there too.)
        g = [x for x in leaks if x["stack"] and x["stack"][0]["function"] == "alloc_block"
             and (not objects or x["bytes"] == EXT_KEEP)]
        check(len(g) == 1, "one leak group allocated in alloc_block, got %d%s" % (len(g), ctx))
        st = g[0]["stack"]
        checks += [(g[0]["bytes"], EXT_KEEP, "extension leaked bytes"),
                   (g[0]["count"], 1, "extension leaked blocks"),
                   (is_python(st[0]), False, "alloc_block is a native frame"),
                   (os.path.basename(st[0]["file"] or ""), "trkext.c", "alloc_block file"),
                   (st[0]["line"], marker(fixture("trkext.c"), "ext_malloc"), "alloc_block line"),
                   # Hybrid: the Python caller directly above the native frame.
                   ((st[1]["function"], st[1]["line"], st[1]["file"], is_python(st[1])),
                    ("ext_alloc", M["ext_alloc"], code_file, True),
                    "frame above alloc_block:\n      " + show(st))]
    # Freed before the end of the script: not leaks.
    for function, m in (("temporary", "ba_temp"), ("temporary", "ext_temp")):
        checks.append((len(groups_at(leaks, function, M[m])), 0,
                       "leak groups through %s line %d" % (function, M[m])))
    eq_all(checks)
    return leaks


def sites_script_args(python=SYS_PY):
    return ["--python", python, fixture(SITES)]


# ---- the ways to run Python ---------------------------------------------------------

def test_script_summary_and_leaks(env):
    need_python()
    out, v = run_sites(env, sites_script_args())
    eq(v["code_file"], fixture(SITES), "co_filename of the script")
    check_summary_sites(env, out, v["code_file"])
    check_leak_sites(env, out, v["code_file"])
    # The text reports name the Python function with its file and line.
    t = text(env, "summary", ["-n", "0", out])
    check("make_bytearray (alloc_sites.py:%d)" % M["ba_alloc"] in t, "summary text:\n" + t)
    t = text(env, "leaks", [out])
    check("make_bytearray (alloc_sites.py:%d)" % M["ba_alloc"] in t, "leaks text:\n" + t)


def test_module_mode(env):
    need_python()
    out, v = run_sites(env, ["--python", SYS_PY, "-m", "alloc_sites"])
    eq(v["code_file"], fixture(SITES), "co_filename under -m")
    check_summary_sites(env, out, v["code_file"], what="-m: ")
    check_leak_sites(env, out, v["code_file"])


def test_code_mode(env):
    need_python()
    # The call on line 7 of the code: "<string>" is also the file of the
    # code that site.py runs for .pth files, on their first lines.
    code = "import alloc_sites\n\n\n\n\n\nalloc_sites.main()  # line 7\n"
    out, v = run_sites(env, ["--python", SYS_PY, "-c", code])
    check_summary_sites(env, out, v["code_file"], what="-c: ")
    s = report(env, "summary", ["-n", "0", out])
    r = row(s, "<module>", 7)
    eq_all([(r["file"], "<string>", "-c code's file"),
            (r["total_bytes"], BA_KEEP + 1 + 8 * LIST_KEEP + METHOD_KEEP + 1 + EXT_KEEP,
             "-c code's line 7 holds every kept block at the peak")])
    leaks = report(env, "leaks", ["-n", "0", out])
    g = py_at(leaks, "make_bytearray", M["ba_alloc"])
    eq(len(g), 1, "-c: bytearray leak groups")
    check(find_frame(g[0]["stack"], "<module>", 7, "<string>") is not None,
          "-c: <string> line 7 on the leak's stack:\n      " + show(g[0]["stack"]))


def test_interpreter_as_program(env):
    need_python()
    out, v = run_sites(env, [SYS_PY, fixture(SITES)])
    check_summary_sites(env, out, v["code_file"], what="python3 script: ")
    check_leak_sites(env, out, v["code_file"])


def test_interpreter_from_path(env):
    """No --python: the python3 found on PATH runs the script."""
    need_python()
    bindir = env.tmpdir("bin")
    os.symlink(SYS_PY, os.path.join(bindir, "python3"))
    path = os.pathsep.join([bindir, "/usr/bin", "/bin"])
    out, v = run_sites(env, [fixture(SITES)], extra_env={"PATH": path})
    check_summary_sites(env, out, v["code_file"], what="PATH python3: ")


# ---- stack shapes ---------------------------------------------------------------------

def test_python_only(env):
    """--python-only: a stack with Python code in it is Python frames alone,
    so each Python line is where its blocks are allocated (own bytes)."""
    need_python()
    out, v = run_sites(env, ["--python-only"] + sites_script_args())
    leaks = report(env, "leaks", ["-n", "0", out])
    native = [(g["bytes"], show(g["stack"])) for g in leaks
              if any(is_python(f) for f in g["stack"])
              and any(not is_python(f) for f in g["stack"])]
    check(not native, "native frames in Python stacks under --python-only:\n%s"
          % "\n".join("  %d B: %s" % n for n in native[:5]))
    g = innermost_at(leaks, "make_bytearray", M["ba_alloc"])
    eq(len(g), 1, "bytearray leak groups")
    eq_all([(g[0]["bytes"], BA_KEEP + 1, "bytearray leaked bytes"),
            ([(f["function"], f["line"]) for f in g[0]["stack"]],
             [("make_bytearray", M["ba_alloc"]), ("main", M["main_ba"]),
              ("<module>", M["module_main"])], "the whole Python-only stack")])
    # The extension's malloc: its innermost frame is now the Python caller.
    g = innermost_at(leaks, "ext_alloc", M["ext_alloc"])
    eq(len(g), 1, "extension leak groups (innermost ext_alloc)")
    eq_all([(g[0]["bytes"], EXT_KEEP, "extension leaked bytes"),
            ([f["function"] for f in g[0]["stack"][:3]], ["ext_alloc", "main", "<module>"],
             "Python-only stack of the extension's block")])
    s = report(env, "summary", ["-n", "0", out])
    eq(rows(s, "alloc_block"), [], "alloc_block rows under --python-only")
    checks = []
    for function, m, own, n in (("make_bytearray", "ba_alloc", BA_KEEP + 1, 1),
                                ("make_list", "list_alloc", 8 * LIST_KEEP, 1),
                                ("ext_alloc", "ext_alloc", EXT_KEEP, 1),
                                ("temporary", "ba_temp", 0, 1),
                                ("temporary", "ext_temp", 0, 1)):
        r = row(s, function, M[m])
        checks += [(r["own_bytes"], own, "%s line %d own bytes at the peak" % (function, M[m])),
                   (r["allocations"], n, "%s line %d allocations" % (function, M[m]))]
    eq_all(checks)


def test_python_internals(env):
    """The interpreter's own native frames (libpython / the python3 binary)
    are hidden in hybrid stacks (--native) wherever they stand between or
    around Python frames, and shown by --python-internals; the Python frames
    stay."""
    need_python()
    interp = os.path.realpath(SYS_PY)

    def interp_after_py(stack):
        """Interpreter frames outside the innermost run (what allocated)."""
        i = first_py(stack)
        return [f for f in stack[i or 0:] if not is_python(f)
                and os.path.realpath(f.get("module") or "") == interp]

    out, v = run_sites(env, sites_script_args())
    # Hybrid stacks (--native) hide the interpreter; --python-internals
    # (which implies --native) shows it.
    plain = report(env, "leaks", ["-n", "0", "--native", out])
    full = report(env, "leaks", ["-n", "0", "--python-internals", out])
    for function, m in (("make_bytearray", "ba_alloc"), ("alloc_block", None)):
        if m is None:
            a = [g for g in plain if g["stack"][0]["function"] == "alloc_block"]
            b = [g for g in full if g["stack"][0]["function"] == "alloc_block"]
        else:
            a, b = py_at(plain, function, M[m]), py_at(full, function, M[m])
        eq((len(a), len(b)), (1, 1), "%s groups (default, --python-internals)" % function)
        sa, sb = a[0]["stack"], b[0]["stack"]
        eq(interp_after_py(sa), [], "%s: interpreter frames by default:\n      %s"
           % (function, show(sa)))
        check(interp_after_py(sb), "%s: no interpreter frame with --python-internals:\n      %s"
              % (function, show(sb, 30)))
        eq([(f["function"], f["line"]) for f in sb if is_python(f)],
           [(f["function"], f["line"]) for f in sa if is_python(f)],
           "%s: the same Python frames either way" % function)
        eq(b[0]["bytes"], a[0]["bytes"], "%s: the same bytes either way" % function)
    # Between the extension and its Python caller: the interpreter's call
    # machinery, which the default leaves out.
    st = [g for g in full if g["stack"][0]["function"] == "alloc_block"][0]["stack"]
    i = find_frame(st, "ext_alloc", M["ext_alloc"])
    check(i is not None and i > 1 and all(os.path.realpath(f.get("module") or "") == interp
                                          for f in st[1:i]),
          "interpreter frames between alloc_block and ext_alloc:\n      " + show(st, 30))


# ---- Python's allocators ----------------------------------------------------------------

def small_groups(leaks):
    """(bytes, blocks) of the leak groups allocated at each small-object line."""
    return {m: sorted((g["bytes"], g["count"]) for g in py_at(leaks, "small_objects", M[m]))
            for m in ("small_malloc", "small_calloc")}


def check_small(sg, what):
    """The 133-byte block of each small-object line is a leak of its own (the
    line may have others: KEPT's item array growing). Reports merge what
    one Python line allocated unless --python-internals keeps the
    interpreter's frames apart, so callers ask for that."""
    eq_all([((SMALL + 33, 1) in sg["small_malloc"], True,
             "%s: b'\\x01' * 100 leaked at line %d: %s" % (what, M["small_malloc"],
                                                         sg["small_malloc"])),
            ((SMALL + 33, 1) in sg["small_calloc"], True,
             "%s: bytes(100) leaked at line %d: %s" % (what, M["small_calloc"],
                                                    sg["small_calloc"]))])


def test_python_allocators(env):
    """--python-allocators: a 100-byte bytes object is one PyObject_Malloc of
    133 bytes (sys.getsizeof) at its line; bytes(100) one PyObject_Calloc."""
    need_python()
    out, v = run_sites(env, ["--python-allocators"] + sites_script_args())
    check_small(small_groups(report(env, "leaks", ["-n", "0", "--python-internals", out])),
                "--python-allocators")
    by = env.stats(out).get("by_allocator", {})
    for kind, field in (("pymalloc", "allocations"), ("pycalloc", "allocations"),
                        ("pyrealloc", "allocations"), ("pyfree", "frees")):
        ge((by.get(kind) or {}).get(field, 0), 1,
           "stats by_allocator[%s][%s] (by_allocator: %s)" % (kind, field, sorted(by)))
    # The big blocks keep their exact sizes and lines in this mode too.
    check_leak_sites(env, out, v["code_file"], objects=True)
    # At the peak, a line now holds its object too: a bytearray object (not
    # tracked by the GC: PyObject_Malloc of its basic size) and its buffer;
    # the extension's capsule and its block.
    cp = subprocess.run([SYS_PY, "-c", "import datetime; print(bytearray.__basicsize__, "
                         "type(datetime.datetime_CAPI).__basicsize__)"],
                        stdout=subprocess.PIPE, timeout=60)
    ba_obj, capsule = [int(x) for x in cp.stdout.split()]
    s = report(env, "summary", ["-n", "0", out])
    eq_all([(row(s, "make_bytearray", M["ba_alloc"])["total_bytes"], BA_KEEP + 1 + ba_obj,
             "make_bytearray line: buffer and object at the peak"),
            (row(s, "main", M["main_method"])["total_bytes"], METHOD_KEEP + 1 + ba_obj,
             "main's Holder.grow line: buffer and object at the peak"),
            (row(s, "ext_alloc", M["ext_alloc"])["total_bytes"], EXT_KEEP + capsule,
             "ext_alloc line: block and capsule at the peak")])
    # Without the option the small objects live inside pymalloc's arenas: no
    # event of their own.
    out, _ = run_sites(env, sites_script_args())
    sg = small_groups(report(env, "leaks", ["-n", "0", out]))
    eq_all([((SMALL + 33, 1) in sg[k], False, "%s without --python-allocators: %s" % (k, sg[k]))
            for k in sg])
    by = env.stats(out).get("by_allocator", {})
    eq([k for k in by if k.startswith("py")], [], "pymalloc kinds without the option")


def test_pythonmalloc_malloc(env):
    """PYTHONMALLOC=malloc: small objects are plain malloc/calloc calls, seen
    at their lines without --python-allocators."""
    need_python()
    out, v = run_sites(env, sites_script_args(), extra_env={"PYTHONMALLOC": "malloc"})
    check_small(small_groups(report(env, "leaks", ["-n", "0", "--python-internals", out])),
                "PYTHONMALLOC=malloc")
    check_leak_sites(env, out, v["code_file"], objects=True)
    # Honoured with --python-allocators as well: pymalloc is not in use, the
    # objects still come back at their lines with their sizes.
    out, v = run_sites(env, ["--python-allocators"] + sites_script_args(),
                       extra_env={"PYTHONMALLOC": "malloc"})
    check_small(small_groups(report(env, "leaks", ["-n", "0", "--python-internals", out])),
                "PYTHONMALLOC=malloc --python-allocators")
    check_leak_sites(env, out, v["code_file"], objects=True)


# ---- threads ------------------------------------------------------------------------------

ROUNDS, A_SIZE, B_ITEMS = 20, 330000, 40000


def check_threads(env, python):
    f = fixture("threads_named.py")
    _, out, _ = pyrun(env, ["--python", python, f])
    leaks = report(env, "leaks", ["-n", "0", out])
    ctx = "\n" + all_leaks_text(leaks)
    a = py_at(leaks, "work_a", marker(f, "thread_a_alloc"))
    b = py_at(leaks, "work_b", marker(f, "thread_b_alloc"))
    check(len(a) == 1 and len(b) == 1, "one leak group per worker line%s" % ctx)
    run_fn = "Thread.run" if py_version(python) >= (3, 11) else "run"
    eq_all([((a[0]["bytes"], a[0]["count"]), (ROUNDS * (A_SIZE + 1), ROUNDS), "worker-a leaks"),
            ((b[0]["bytes"], b[0]["count"]), (ROUNDS * 8 * B_ITEMS, ROUNDS), "worker-b leaks"),
            ([(x["function"], os.path.basename(x["file"])) for x in a[0]["stack"]
              if is_python(x)][:2], [("work_a", "threads_named.py"), (run_fn, "threading.py")],
             "work_a's Python frames:\n      " + show(a[0]["stack"])),
            ([x["file"] for x in b[0]["stack"] if is_python(x)][0], f, "work_b file")])
    s = report(env, "summary", ["-n", "0", out])
    threads = {t["name"]: t for t in s["threads"] if t["name"] in ("worker-a", "worker-b")}
    eq(sorted(threads), ["worker-a", "worker-b"],
       "thread names in the summary (%s)" % [t["name"] for t in s["threads"]])
    for name, size in (("worker-a", ROUNDS * (A_SIZE + 1)), ("worker-b", ROUNDS * 8 * B_ITEMS)):
        t = threads[name]
        ge(t["bytes_allocated"], size, "%s bytes_allocated" % name)
        le(t["bytes_allocated"], size + 256 * 1024, "%s bytes_allocated" % name)
        ge(t["leaked_bytes"], size, "%s leaked_bytes" % name)
    txt = text(env, "summary", [out])
    check("worker-a" in txt and "worker-b" in txt, "thread names in the text summary:\n" + txt)


def test_named_threads(env):
    need_python()
    check_threads(env, SYS_PY)


def check_embedded(env, python):
    exe = build_embed(env, python)
    f = fixture("embedded.py")
    out = env.out_path()
    cp, out, v = env.run([exe, f], out=out, timeout=120)
    eq(v.get("embedded"), "ok", "embedding program finished")
    leaks = report(env, "leaks", ["-n", "0", out])
    ctx = "\n" + all_leaks_text(leaks)
    inner = py_at(leaks, "inner", marker(f, "embed_inner"))
    by_caller = {}
    for g in inner:
        pys = [x for x in g["stack"] if is_python(x)]
        by_caller.setdefault(pys[1]["function"] if len(pys) > 1 else None, []).append(g)
    check(sorted(by_caller, key=str) == ["from_c_thread", "from_main"] and
          all(len(x) == 1 for x in by_caller.values()),
          "one leak group per caller of inner(), got %s%s" % (sorted(by_caller, key=str), ctx))
    checks = []
    for caller, size, call, c_fn in (("from_main", 1100000, "embed_main_call", "main"),
                                     ("from_c_thread", 1900000, "embed_thread_call", "c_thread")):
        g = by_caller[caller][0]
        st = g["stack"]
        i = first_py(st)
        checks += [((g["bytes"], g["count"]), (size + 1, 1), "%s: leaked block" % caller),
                   ([(x["function"], x["line"], x["file"]) for x in st[i:i + 2]],
                    [("inner", marker(f, "embed_inner"), f),
                     (caller, marker(f, call), f)], "%s: Python frames" % caller),
                   # Hybrid: the program's C frames right below the Python ones
                   # (the interpreter's call machinery between them hidden).
                   ([(x["function"], os.path.basename(x["file"] or ""), is_python(x))
                     for x in st[i + 2:i + 4]],
                    [("call_python", "embed_python.c", False), (c_fn, "embed_python.c", False)],
                    "%s: native frames below the Python ones:\n      %s" % (caller, show(st, 20)))]
    eq_all(checks)


def test_embedded_shared_libpython(env):
    """A C program linked with the shared libpython: Python called from its
    main thread and from a pthread through PyGILState_Ensure."""
    need_python()
    check_embedded(env, SYS_PY)


# ---- CPython 3.8 - 3.13 -------------------------------------------------------------------

def pyenv_interpreters():
    found = []
    for minor in range(8, 14):
        for p in sorted(glob.glob("/root/.pyenv/versions/3.%d.*/bin/python3.%d" % (minor, minor))):
            if os.access(p, os.X_OK):
                found.append(p)
                break
    return found


def test_pyenv_versions(env):
    """The exact-line, thread and embedding checks on every CPython 3.8-3.13
    installed by pyenv (shared libpython); there are none on CI machines, and
    then it skips."""
    pys = pyenv_interpreters()
    if not pys:
        raise Skip("no pyenv CPython 3.8-3.13 under /root/.pyenv/versions")
    failures = []
    for py in pys:
        try:
            out, v = run_sites(env, sites_script_args(py), python=py, ext=False)
            check_summary_sites(env, out, v["code_file"], python=py, ext=False,
                                what="%s: " % os.path.basename(py))
            check_leak_sites(env, out, v["code_file"], python=py, ext=False)
            check_threads(env, py)
            try:
                check_embedded(env, py)
            except Skip as e:
                print("%s: embedding not checked: %s" % (py, e))
        except AssertionError as e:
            failures.append("%s:\n%s" % (py, e))
    print("checked: %s" % ", ".join(os.path.basename(p) for p in pys))
    if failures:
        raise AssertionError("\n\n".join(failures))


if __name__ == "__main__":
    sys.exit(main(globals()))
