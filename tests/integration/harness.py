# SPDX-License-Identifier: MIT
"""harness.py - shared driver for the integration tests (Python 3, stdlib only).

Locates the real `tracker` binary, libtracker.so and the test programs, runs
programs under `tracker run`, reads `tracker stats --json`, and runs a
script's test_* functions with meson's exit codes (0 pass, 1 fail, 77 skip).

Exactness: libc and the loader make a few allocations of their own, so most
tests run a program twice with different counts and assert on the exact
DIFFERENCE; entry points libc never calls itself are asserted absolutely.

Paths come from --tracker/--preload/--progdir (meson passes them), else from
$ITEST_TRACKER/$ITEST_PRELOAD/$ITEST_PROGDIR, else from ../../build relative to
this file, so `python3 tests/integration/test_x.py` works by hand. Set
ITEST_KEEP=1 to keep the temporary directories for inspection; pass test
names as arguments to run only those.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

SKIP = 77

_here = os.path.dirname(os.path.abspath(__file__))
_default_build = os.path.normpath(os.path.join(_here, "..", "..", "build"))


class Skip(Exception):
    """Raised by a test that cannot run here (missing tool or program)."""


class Env:
    """Paths and helpers handed to every test function."""

    def __init__(self, tracker, preload, progdir, tmp):
        self.tracker = tracker
        self.preload = preload
        self.progdir = progdir
        self.tmp = tmp
        self._n = 0

    # ---- locations -------------------------------------------------------

    def prog(self, name):
        """Path of a built test program; skips when it was not built."""
        path = os.path.join(self.progdir, name)
        if not os.access(path, os.X_OK):
            raise Skip("program %s not built (%s)" % (name, path))
        return path

    def tmpdir(self, label="t"):
        self._n += 1
        d = os.path.join(self.tmp, "%s%d" % (label, self._n))
        os.makedirs(d)
        return d

    def out_path(self, label="cap"):
        return os.path.join(self.tmpdir(label), "out.bin")

    # ---- running ---------------------------------------------------------

    def run_raw(self, argv, timeout=120, env=None, cwd=None, input_bytes=None):
        """Runs argv; returns CompletedProcess with text output. A timeout is
        a failure (a hang is exactly what several tests look for)."""
        # The tool reads TRACKER_* settings; a developer's own must not leak
        # into a test and change what is recorded.
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_") and k != "LD_PRELOAD"}
        if env:
            full_env.update(env)
        try:
            return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=full_env, cwd=cwd, timeout=timeout,
                                  input=input_bytes)
        except subprocess.TimeoutExpired as e:
            raise AssertionError("timed out after %ss (hang or deadlock?): %s"
                                 % (timeout, " ".join(argv))) from e

    def run(self, prog_argv, out=None, expect_rc=0, timeout=120, env=None, extra=()):
        """`tracker run -o OUT -f [extra] -- prog args`; checks the exit
        status and returns (CompletedProcess, out path, stdout key=values)."""
        if out is None:
            out = self.out_path()
        argv = [self.tracker, "run", "-o", out, "-f"] + list(extra) + ["--"] + list(prog_argv)
        cp = self.run_raw(argv, timeout=timeout, env=env)
        if expect_rc is not None and cp.returncode != expect_rc:
            raise AssertionError("%s\n  exit status %d, expected %d\n  stderr: %s"
                                 % (" ".join(argv), cp.returncode, expect_rc,
                                    cp.stderr.decode(errors="replace").strip()))
        return cp, out, kv(cp.stdout)

    def stats(self, path, allow_truncated=False):
        """`tracker stats --json PATH` as a dict; the command must succeed."""
        argv = [self.tracker, "stats", "--json", path]
        cp = self.run_raw(argv, timeout=120)
        if cp.returncode != 0:
            raise AssertionError("%s\n  exit status %d\n  stderr: %s"
                                 % (" ".join(argv), cp.returncode,
                                    cp.stderr.decode(errors="replace").strip()))
        try:
            st = json.loads(cp.stdout.decode())
        except ValueError as e:
            raise AssertionError("%s printed invalid JSON: %s\n%s"
                                 % (" ".join(argv), e, cp.stdout[:2000])) from e
        if not allow_truncated:
            check(st.get("truncated") is False, "%s: capture reported truncated" % path)
        st["_path"] = path
        return st

    def traced(self, prog_argv, **kw):
        """Runs a program under tracker and returns (stats, key=values)."""
        _, out, values = self.run(prog_argv, **kw)
        return self.stats(out), values


def sanitized(path):
    """Whether the binary at path was built with AddressSanitizer (the
    sanitized build's CLI and examples: their runtime must come first in a
    process, and it changes what their children start with)."""
    try:
        with open(path, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def kv(stdout):
    """Parses the key=value lines the test programs print."""
    values = {}
    for line in stdout.decode(errors="replace").splitlines():
        if "=" in line:
            k, _, v = line.partition("=")
            try:
                values[k.strip()] = int(v.strip())
            except ValueError:
                values[k.strip()] = v.strip()
    return values


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def eq(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r, expected %r" % (what, got, want))


def eq_all(items):
    """Checks every (got, expected, what) and reports all mismatches at once,
    so that one failure does not hide what the others would have shown."""
    bad = ["%s: got %r, expected %r" % (what, got, want) for got, want, what in items
           if got != want]
    if bad:
        raise AssertionError("\n  ".join(["%d of %d checks failed:" % (len(bad), len(items))]
                                          + bad))


def ge(got, bound, what):
    if not got >= bound:
        raise AssertionError("%s: got %r, expected at least %r" % (what, got, bound))


def le(got, bound, what):
    if not got <= bound:
        raise AssertionError("%s: got %r, expected at most %r" % (what, got, bound))


def unwind_clean(stats, min_walks, what):
    """The differential unwinder check (TRACKER_UNWIND_CHECK=1) over the
    stats of one capture or a list of them: no stack differs, and at least
    min_walks were walked: compared, or left to libunwind whole. A fallback
    is correct and is counted apart: a return address in a library the
    module table has not caught up with (a hook that finds the table
    mid-rewrite, another thread refreshing it after a dlopen or dlclose,
    src/capture/unwind_cfi.c hdr_of) is libunwind's; on a busy machine
    dlchurn left 19 of 2000 to it. Nine in ten must have been compared.
    Returns (compared, fallbacks)."""
    if isinstance(stats, dict):
        stats = [stats]
    checked = sum(s["unwind_checked"] for s in stats)
    fallbacks = sum(s["unwind_fallbacks"] for s in stats)
    eq(sum(s["unwind_mismatches"] for s in stats), 0,
       "%s: stacks where the own unwinder and libunwind differ" % what)
    ge(checked + fallbacks, min_walks,
       "%s: stacks compared (%d) or libunwind's (%d)" % (what, checked, fallbacks))
    ge(checked, min_walks * 9 // 10, "%s: stacks compared" % what)
    return checked, fallbacks


def alloc_entry(st, name):
    """by_allocator[name] with absent entries read as zeros."""
    e = st.get("by_allocator", {}).get(name) or {}
    return {k: e.get(k, 0) for k in ("allocations", "frees", "bytes")}


def diff(a, b, key):
    return a[key] - b[key]


def _parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tracker", default=os.environ.get("ITEST_TRACKER",
                                                        os.path.join(_default_build, "tracker")))
    ap.add_argument("--preload", default=os.environ.get(
        "ITEST_PRELOAD", os.path.join(_default_build, "libtracker.so")))
    ap.add_argument("--progdir", default=os.environ.get(
        "ITEST_PROGDIR", os.path.join(_default_build, "tests", "integration")))
    ap.add_argument("only", nargs="*", help="run only these tests")
    return ap.parse_args()


def main(namespace):
    """Runs every test_* function of the calling script in definition order."""
    args = _parse_args()
    tests = [(n, f) for n, f in namespace.items() if n.startswith("test_") and callable(f)]
    if args.only:
        tests = [(n, f) for n, f in tests if n in args.only or n[5:] in args.only]
    for label, path in (("tracker", args.tracker), ("libtracker.so", args.preload)):
        if not os.path.exists(path):
            print("FAIL: %s not found at %s" % (label, path))
            return 1
    tmp = tempfile.mkdtemp(prefix="trk-itest-")
    passed = failed = skipped = 0
    try:
        for name, fn in tests:
            env = Env(os.path.abspath(args.tracker), os.path.abspath(args.preload),
                      os.path.abspath(args.progdir), os.path.join(tmp, name))
            os.makedirs(env.tmp)
            try:
                fn(env)
            except Skip as e:
                skipped += 1
                print("SKIP %s: %s" % (name, e))
            except Exception:  # report every failure, keep going
                failed += 1
                print("FAIL %s:\n%s" % (name, traceback.format_exc()))
            else:
                passed += 1
                print("ok   %s" % name)
            sys.stdout.flush()
    finally:
        if os.environ.get("ITEST_KEEP"):
            print("kept temporary files in %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if failed:
        return 1
    if skipped and not passed:
        return SKIP
    return 0
