#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_objstack.py - an object's stack under --python-allocators in
the default hybrid mode (src/python/py_stack.c, issue 12): the native frames
from the allocator down to the innermost Python frame, then the Python
frames alone. python/obj_stack.py keeps the strings json's C scanner made
(the scanner's frames stand between the allocator and
JSONDecoder.raw_decode), lists that cb() made when map() called it from C,
and a bytearray's buffer. As `leaks --native --python-internals` shows them:
- the scanner's 2N strings, exactly their bytes, each stack with a native
  frame of _json above raw_decode, then decode, loads, main and <module> at
  the fixture's lines, and no native frame after raw_decode;
- cb's lists: cb, main, <module>, no native frame between (map's frames
  are not walked for an object);
- the text reports' header says so with --native, and not without;
- with TRACKER_UNWIND_CHECK=1 every object's walk (stopped at the
  evaluation loop, and given again from the unwinder's cache of stopped
  walks where the stack words read match: src/capture/unwind.c) is the one
  libunwind gives cut at the same frame, here and on memo_native.py, whose
  objects come from one Python instruction through two native paths;
- without --python-allocators, the buffer's stack still has the
  interpreter's native frames under <module> (malloc's blocks keep them).
On /usr/bin/python3 and on the python3 on PATH (pyenv's shim here)."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, main, unwind_clean  # noqa: E402
from pyutil import (fixture, first_py, is_python, marker, need_python, pyrun,  # noqa: E402
                    report, show, text)

FX = "obj_stack.py"
N = 200


def path_python():
    """The python3 on PATH (pyenv's shim on the dev machine)."""
    py = shutil.which("python3")
    if not py:
        raise Skip("no python3 on PATH")
    return os.path.realpath(py) if "shims" not in py else py


def pyframes(stack, i):
    """(function, line, file basename) of stack[i:]."""
    return [(f.get("function"), f.get("line"), os.path.basename(f.get("file") or ""))
            for f in stack[i:]]


NOTE = "an object's native frames end at its innermost Python frame"


def leaks(env, python, flags):
    _, out, v = pyrun(env, ["--python", python] + flags + [fixture(FX), str(N)])
    eq(v.get("ran"), 1, "obj_stack.py ran")
    objects = "--python-allocators" in flags
    eq(NOTE in text(env, "summary", ["--native", out]), objects, "the header's note, --native")
    eq(NOTE in text(env, "summary", [out]), False, "the header's note without --native")
    return v, report(env, "leaks", ["-n", "0", "--native", "--python-internals", out])


def check_objects(env, python):
    v, groups = leaks(env, python, ["--python-allocators"])
    tail = [("main", marker(FX, "main_loads"), FX), ("<module>", marker(FX, "module_main"), FX)]
    json_py = [("JSONDecoder.raw_decode", "decoder.py"), ("JSONDecoder.decode", "decoder.py"),
               ("loads", "__init__.py")]
    strs = nstrs = 0
    for g in groups:
        st = g["stack"]
        i = first_py(st)
        if i is None or st[i].get("function") != "JSONDecoder.raw_decode":
            continue
        check(any("_json" in os.path.basename(f.get("module") or "") for f in st[:i]),
              "no native frame of _json above raw_decode:\n      " + show(st, 30))
        check(all(is_python(f) for f in st[i:]),
              "native frames after the innermost Python frame:\n      " + show(st, 30))
        got = pyframes(st, i)
        eq([(fn, fl) for fn, _, fl in got[:3]], json_py, "json's Python frames")
        eq(got[3:], tail, "the fixture's frames under json's")
        if st[0].get("function") in ("PyUnicode_Substring", "PyUnicode_New"):
            strs += g["bytes"]
            nstrs += g["count"]
    eq(nstrs, 2 * N, "strings the C scanner made, kept")
    eq(strs, v.get("str_bytes"), "their bytes (sys.getsizeof)")
    lists = 0
    want = [("cb", marker(FX, "cb_list"), FX), ("main", marker(FX, "main_map"), FX),
            ("<module>", marker(FX, "module_main"), FX)]
    for g in groups:
        st = g["stack"]
        i = first_py(st)
        if i is None or st[i].get("function") != "cb":
            continue
        eq(pyframes(st, i), want, "cb's list: Python frames only from cb on:\n      "
           + show(st, 30))
        lists += g["count"]
    check(lists >= N, "cb's lists kept: %d blocks, want at least %d" % (lists, N))


def check_malloc_kept(env, python):
    """Without --python-allocators nothing changed: the buffer's stack goes
    on under <module> into the interpreter's native frames."""
    _, groups = leaks(env, python, [])
    line = marker(FX, "main_buffer")
    found = 0
    for g in groups:
        st = g["stack"]
        i = first_py(st)
        if i is None or (st[i].get("function"), st[i].get("line")) != ("main", line):
            continue
        found += 1
        check(any(not is_python(f) for f in st[i:]),
              "the buffer's stack lost its native frames:\n      " + show(st, 30))
    eq(found, 1, "groups of the bytearray buffer")


def test_objects_unwind_check(env):
    python = need_python()
    for fx, args in ((FX, [str(10 * N)]), ("memo_native.py", ["2000"])):
        _, out, v = pyrun(env, ["--python", python, "--python-allocators", fixture(fx)] + args,
                          extra_env={"TRACKER_UNWIND_CHECK": "1"})
        eq(v.get("ran"), 1, fx + " ran")
        st = env.stats(out, allow_truncated=True)
        unwind_clean(st, 20 * N, fx)


def test_objects(env):
    check_objects(env, need_python())


def test_objects_path_python(env):
    check_objects(env, path_python())


def test_malloc_stacks_kept(env):
    check_malloc_kept(env, need_python())


if __name__ == "__main__":
    sys.exit(main(globals()))
