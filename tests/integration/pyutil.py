# SPDX-License-Identifier: MIT
"""pyutil.py - what the Python tests (test_python*.py) share: running Python
under `tracker run`, reading reports, building the C extension and the
embedding program, and finding Python frames and "@name" line markers in the
fixtures (tests/integration/python/).

Every traced run gets PYTHONDONTWRITEBYTECODE=1 (no __pycache__ written into
the source tree) and PYTHONPATH=<fixtures>[:<extension dir>]."""

import json
import os
import re
import shutil
import subprocess

from harness import Skip, check, eq, kv

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "python")
PROGS_SRC = os.path.join(HERE, "progs")
SYS_PY = "/usr/bin/python3"


def fixture(name):
    return os.path.join(FIXTURES, name)


def marker(path, name):
    """Line number of the "@name" marker comment in PATH (a fixture name or
    a path)."""
    if not os.path.isabs(path):
        path = fixture(path)
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if re.search(r"@%s\b" % re.escape(name), line):
                return n
    raise AssertionError("marker @%s not found in %s" % (name, path))


# ---- interpreters --------------------------------------------------------------

def need_python(path=SYS_PY):
    if not os.access(path, os.X_OK):
        raise Skip("no interpreter at %s" % path)
    return path


def py_version(python):
    """(major, minor) of an interpreter."""
    cp = subprocess.run([python, "-c", "import sys; print('%d %d' % sys.version_info[:2])"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    check(cp.returncode == 0, "%s does not run: %s" % (python, cp.stderr.decode(errors="replace")))
    major, minor = cp.stdout.decode().split()
    return int(major), int(minor)


def can_import(python, module):
    cp = subprocess.run([python, "-c", "import " + module], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=120,
                        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    return cp.returncode == 0


# ---- running -------------------------------------------------------------------

# Settings of a developer's own that would change what the interpreter does.
_DROP = ("PYTHONMALLOC", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "PYTHONPATH",
         "PYTHONTRACEMALLOC", "PYTHONDEVMODE")


def pyrun(env, args, out=None, extra_path=(), extra_env=None, expect_rc=0, timeout=120,
          cwd=None):
    """`tracker run -o OUT -f ARGS...` (ARGS holds the tracker's Python
    options and the script, -m or -c); returns (CompletedProcess, out path,
    stdout key=values)."""
    if out is None:
        out = env.out_path()
    argv = [env.tracker, "run", "-o", out, "-f"] + list(args)
    full = {k: v for k, v in os.environ.items()
            if not k.startswith("TRACKER_") and k != "LD_PRELOAD" and k not in _DROP}
    full["PYTHONDONTWRITEBYTECODE"] = "1"
    full["PYTHONPATH"] = os.pathsep.join([FIXTURES] + list(extra_path))
    full.update(extra_env or {})
    try:
        cp = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full,
                            cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("timed out after %ss (hang or deadlock?): %s"
                             % (timeout, " ".join(argv))) from e
    if expect_rc is not None and cp.returncode != expect_rc:
        raise AssertionError("%s\n  exit status %d, expected %d\n  stdout: %s\n  stderr: %s"
                             % (" ".join(argv), cp.returncode, expect_rc,
                                cp.stdout.decode(errors="replace").strip()[-2000:],
                                cp.stderr.decode(errors="replace").strip()[-4000:]))
    return cp, out, kv(cp.stdout)


def tracker(env, args, expect_rc=0, timeout=120):
    argv = [env.tracker] + list(args)
    cp = env.run_raw(argv, timeout=timeout)
    if expect_rc is not None and cp.returncode != expect_rc:
        raise AssertionError("%s\n  exit status %d, expected %d\n  stderr: %s"
                             % (" ".join(argv), cp.returncode, expect_rc,
                                cp.stderr.decode(errors="replace").strip()[-4000:]))
    return cp


def report(env, cmd, args, expect_rc=0, timeout=120):
    """`tracker CMD --json --no-progress ARGS...` parsed."""
    cp = tracker(env, [cmd, "--json", "--no-progress"] + list(args), expect_rc, timeout)
    try:
        return json.loads(cp.stdout.decode())
    except ValueError as e:
        raise AssertionError("tracker %s printed invalid JSON: %s\n%s"
                             % (cmd, e, cp.stdout[:2000])) from e


def text(env, cmd, args, expect_rc=0, timeout=120):
    return tracker(env, [cmd, "--no-progress"] + list(args), expect_rc, timeout).stdout.decode()


# ---- frames ----------------------------------------------------------------------

def is_python(frame):
    """A frame of Python code. JSON frames of Python code carry "python":
    true; without that key, a Python frame is one with no native module."""
    if "python" in frame:
        return frame["python"] is True
    return not frame.get("module")


def show(stack, n=12):
    """A stack, innermost first, as short text for failure messages."""
    out = []
    for f in stack[:n]:
        out.append("%s%s (%s:%s) [%s]" % ("py:" if is_python(f) else "", f.get("function"),
                                          os.path.basename(f.get("file") or "?"),
                                          f.get("line"),
                                          os.path.basename(f.get("module") or "")))
    return "\n      ".join(out)


def find_frame(stack, function, line, file=None):
    """Index of the Python frame FUNCTION at LINE (and FILE, compared by
    basename when FILE has no directory) in STACK, or None."""
    for i, f in enumerate(stack):
        if f.get("function") != function or f.get("line") != line:
            continue
        if file is not None:
            got = f.get("file") or ""
            if (got if os.path.dirname(file) else os.path.basename(got)) != file:
                continue
        return i
    return None


def groups_at(leaks, function, line, file=None):
    """Leak groups whose stack has the frame FUNCTION at LINE."""
    return [g for g in leaks if find_frame(g["stack"], function, line, file) is not None]


def first_py(stack):
    """Index of the innermost Python frame of STACK, or None."""
    for i, f in enumerate(stack):
        if is_python(f):
            return i
    return None


def py_at(leaks, function, line):
    """Leak groups whose innermost Python frame is FUNCTION at LINE. (In a
    hybrid stack the interpreter's own frames that did the allocation, e.g.
    PyByteArray_Resize, may stand below it.)"""
    out = []
    for g in leaks:
        i = first_py(g["stack"])
        if i is not None and g["stack"][i].get("function") == function \
                and g["stack"][i].get("line") == line:
            out.append(g)
    return out


def innermost_at(leaks, function, line):
    """Leak groups whose innermost frame is FUNCTION at LINE."""
    return [g for g in leaks if g["stack"] and g["stack"][0].get("function") == function
            and g["stack"][0].get("line") == line]


def rows(summary, function, line=None):
    return [r for r in summary["locations"] if r["function"] == function
            and (line is None or r["line"] == line)]


def row(summary, function, line):
    """The summary row of FUNCTION at LINE (exactly one)."""
    r = rows(summary, function, line)
    eq(len(r), 1, "summary rows for %s at line %d (rows for %s: %s)"
       % (function, line, function,
          [(x["line"], x["file"]) for x in rows(summary, function)]))
    return r[0]


def all_leaks_text(leaks, n=8):
    """The biggest leak groups, for failure messages."""
    top = sorted(leaks, key=lambda g: -g["bytes"])[:n]
    return "\n".join("  %d B in %d: %s" % (g["bytes"], g["count"], show(g["stack"], 8))
                     for g in top)


# ---- building --------------------------------------------------------------------

def compiler():
    for c in (os.environ.get("CC"), "cc", "gcc"):
        if c and shutil.which(c):
            return shutil.which(c)
    raise Skip("no C compiler")


def config_flags(python, *what):
    """python3-config's flags for the interpreter PYTHON (its sibling
    python3.X-config or python3-config)."""
    d = os.path.dirname(os.path.realpath(python))
    names = [os.path.basename(python) + "-config", os.path.basename(os.path.realpath(python))
             + "-config", "python3-config"]
    for n in names:
        p = os.path.join(d, n)
        if os.access(p, os.X_OK):
            cp = subprocess.run([p] + list(what), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                timeout=60)
            if cp.returncode == 0:
                return cp.stdout.decode().split()
    raise Skip("no python3-config for %s (Debian: python3-dev)" % python)


_built = {}


def build_ext(env, python=SYS_PY):
    """Builds tests/integration/python/trkext.c into a directory holding
    _trkext<EXT_SUFFIX> for PYTHON; returns the directory (once per run)."""
    key = ("ext", python)
    if key in _built:
        return _built[key]
    cc = compiler()
    flags = config_flags(python, "--includes")
    cp = subprocess.run([python, "-c",
                         "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                        stdout=subprocess.PIPE, timeout=60)
    suffix = cp.stdout.decode().strip()
    d = os.path.join(os.path.dirname(env.tmp), "_ext_" + re.sub(r"\W", "_", python))
    os.makedirs(d, exist_ok=True)
    argv = [cc, "-shared", "-fPIC", "-g", "-O0", "-fno-omit-frame-pointer", "-fno-inline",
            "-fno-builtin"] + flags + ["-o", os.path.join(d, "_trkext" + suffix),
                                       fixture("trkext.c")]
    cp = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if cp.returncode != 0:
        if not os.path.exists(os.path.join(config_flags(python, "--includes")[0][2:],
                                           "Python.h")):
            raise Skip("Python.h missing for %s (Debian: python3-dev)" % python)
        raise AssertionError("building the extension failed: %s\n%s"
                             % (" ".join(argv), cp.stderr.decode(errors="replace")))
    _built[key] = d
    return d


def build_embed(env, python=SYS_PY):
    """Builds progs/embed_python.c against PYTHON's shared libpython; returns
    the program's path (once per run)."""
    key = ("embed", python)
    if key in _built:
        return _built[key]
    cc = compiler()
    cflags = config_flags(python, "--cflags", "--embed")
    ldflags = config_flags(python, "--ldflags", "--embed")
    d = os.path.join(os.path.dirname(env.tmp), "_embed_" + re.sub(r"\W", "_", python))
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, "embed_python")
    cp = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
                        stdout=subprocess.PIPE, timeout=60)
    libdir = cp.stdout.decode().strip()
    # Our -O0 after python3-config's -O2: every call a frame of its own. The
    # rpath finds a libpython outside the loader's paths (pyenv's).
    argv = ([cc] + cflags + ["-g", "-O0", "-fno-omit-frame-pointer", "-fno-inline", "-o", exe,
                             os.path.join(PROGS_SRC, "embed_python.c")]
            + ldflags + ["-Wl,-rpath," + libdir, "-lpthread"])
    cp = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if cp.returncode != 0:
        raise Skip("cannot build the embedding program (Debian: python3-dev): %s\n%s"
                   % (" ".join(argv), cp.stderr.decode(errors="replace")[-2000:]))
    _built[key] = exe
    return exe

