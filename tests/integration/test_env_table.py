#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_env_table.py - the TRACKER_* table (src/common/env_options.h) is the
one contract between `tracker run`, libtracker.so and an exec'd child (issue
13 §2): every entry is checked across an exec with an emptied environment
(execve with envp = {NULL}, which the tracker follows because the starting
program's own environment still preloads it), and README.md documents
exactly the table's variables with its defaults.

The exec'd child is a Python program that prints its environment, maps
anonymous memory and builds a list, so that the settings show both in what
the child was given and in what its capture recorded."""

import glob
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, eq_all, kv, main  # noqa: E402

_here = os.path.dirname(os.path.abspath(__file__))
_root = os.path.normpath(os.path.join(_here, "..", ".."))

CHILD = ("import os, mmap\n"
         "for k, v in sorted(os.environ.items()): print('env.%s=%s' % (k, v))\n"
         "print('pid=%d' % os.getpid())\n"
         "m = mmap.mmap(-1, 1 << 20); m[0:1] = b'x'\n"
         "x = [0] * 1000\n")


def table():
    """The entries of TRK_ENV_TABLE: name -> dict(kind, def, min, max, flags)."""
    with open(os.path.join(_root, "src", "common", "env_options.h")) as f:
        text = f.read().replace("\\\n", " ")
    start = text.index("#define TRK_ENV_TABLE(X)")
    body = text[start:text.index("\n", start)]
    rows = re.findall(r'X\(\s*(\w+),\s*(\w+),\s*(-?\d+),\s*(-?\d+),\s*(-?\d+),\s*([\w| ]+?),\s*'
                      r'"((?:[^"\\]|\\.)*)"\s*\)', body)
    check(rows, "no entries parsed from env_options.h")
    eq(len(rows), len(re.findall(r"\bX\(", body)), "entries of TRK_ENV_TABLE this test could parse")
    out = {}
    for ident, kind, d, lo, hi, flags, hlp in rows:
        out["TRACKER_" + ident] = {"kind": kind, "def": int(d), "min": int(lo), "max": int(hi),
                                   "propagate": "TRK_ENV_PROPAGATE" in flags,
                                   "cli": "TRK_ENV_CLI" in flags, "help": hlp}
    return out


def header(path):
    """root_pid, session, max_depth, options of a capture (docs/FORMAT.md §1)."""
    with open(path, "rb") as f:
        h = f.read(64)
    check(len(h) == 64, "%s: too short for a capture" % path)
    root_pid, = struct.unpack_from("<I", h, 24)
    session, depth, options = struct.unpack_from("<QII", h, 48)
    return {"root_pid": root_pid, "session": session, "depth": depth, "options": options}


def child_env(values):
    return {k[4:]: str(v) for k, v in values.items() if k.startswith("env.")}


def exec_empty(env, extra=(), run_env=None):
    """`tracker run [extra] procs many_env 0 python -c CHILD` in a directory
    of its own: the child is exec'd with an empty envp. Returns a dict with
    the child's environment, its pid, the root capture, the child's
    capture, their headers and the child's stats."""
    procs = env.prog("procs")
    d = env.tmpdir("run")
    out = os.path.join(d, "out.bin")
    cp, out, v = env.run([procs, "many_env", "0", sys.executable, "-c", CHILD], out=out,
                         extra=extra, env=run_env, timeout=120)
    pid = v["pid"]
    caps = sorted(glob.glob(os.path.join(d, "*.bin")))
    others = [c for c in caps if c != out]
    eq(len(others), 1, "captures of the run besides the root (%s)" % caps)
    child = others[0]
    check(re.fullmatch(r"out\.%d(\.\d+)?\.bin" % pid, os.path.basename(child)),
          "exec'd image's capture %s is not beside the root, named by pid %d" % (child, pid))
    return {"env": child_env(v), "pid": pid, "out": out, "child": child,
            "root_hdr": header(out), "hdr": header(child), "stats": env.stats(child),
            "stderr": cp.stderr.decode(errors="replace")}


# A run with every option away from its default that one run can carry, one
# for the Python options that exclude --no-python, and one with defaults.
FLAGS_A = ["--depth", "7", "--no-mmap", "--no-follow-fork", "--buffer-kb", "64", "-q",
           "--no-python", "--sample-bytes", "4096"]
ENV_A = {"TRACKER_RSS_MS": "0", "TRACKER_FLUSH_MS": "3", "TRACKER_LZ4_ACCEL": "9",
         "TRACKER_SAMPLE_SEED": "5",
         "TRACKER_TABLE_KB": "128", "TRACKER_LEAK_SCAN": "0",
         "TRACKER_UNWIND": "0", "TRACKER_UNWIND_CHECK": "5",
         "TRACKER_COMPRESS": "0", "TRACKER_HEAP_TSC": "1"}
FLAGS_B = ["--python-only", "--python-allocators"]

OPT_MMAP, OPT_FORK, OPT_RSS = 1, 2, 4


def _runs(env):
    ra = exec_empty(env, FLAGS_A, dict(ENV_A, TRACKER_LIB=env.preload))
    rb = exec_empty(env, FLAGS_B)
    rc = exec_empty(env)
    return ra, rb, rc


def test_table_is_consistent(env):
    """Each numeric entry's default lies in its range, a BOOL is 0..1, and
    the CLI-only entries are not handed to the program's children."""
    bad = []
    for name, e in sorted(table().items()):
        if e["kind"] in ("BOOL", "UINT", "ENUM") and not e["min"] <= e["def"] <= e["max"]:
            bad.append("%s: default %d outside %d..%d" % (name, e["def"], e["min"], e["max"]))
        if e["kind"] == "BOOL" and (e["min"], e["max"]) != (0, 1):
            bad.append("%s: BOOL with range %d..%d" % (name, e["min"], e["max"]))
        if e["cli"] and e["propagate"]:
            bad.append("%s: read by tracker only, yet propagates" % name)
        if not e["help"]:
            bad.append("%s: no help" % name)
    eq(bad, [], "inconsistent entries")


def test_every_entry_across_exec_with_empty_env(env):
    """Every entry of the table: a propagating one reaches the exec'd child
    with the run's value and the child's capture shows the setting; the
    others do not reach it."""
    tab = table()
    ra, rb, rc = _runs(env)
    pid = ra["pid"]
    sess = "%016x" % ra["root_hdr"]["session"]
    # What each propagating entry must read in the child, per run.
    want_a = {
        "TRACKER_OUTPUT": ra["out"], "TRACKER_ROOT_PID": str(pid), "TRACKER_SESSION": sess,
        "TRACKER_FORCE": "1", "TRACKER_DEPTH": "7", "TRACKER_MMAP": "0",
        "TRACKER_FOLLOW_FORK": "0", "TRACKER_BUFFER_KB": "64", "TRACKER_RSS_MS": "0",
        "TRACKER_FLUSH_MS": "3", "TRACKER_LZ4_ACCEL": "9", "TRACKER_PYTHON": "0",
        "TRACKER_QUIET": "1", "TRACKER_TABLE_KB": "128", "TRACKER_SAMPLE_BYTES": "4096", "TRACKER_SAMPLE_SEED": "5",
        "TRACKER_LEAK_SCAN": "0",
        "TRACKER_UNWIND": "0", "TRACKER_UNWIND_CHECK": "5",
        "TRACKER_COMPRESS": "0", "TRACKER_HEAP_TSC": "1",
    }
    want_b = {"TRACKER_PYTHON": "1", "TRACKER_PYTHON_ALLOCATORS": "1"}
    checks = []
    for name, e in sorted(tab.items()):
        if not e["propagate"]:
            checks.append((ra["env"].get(name), None, "%s (does not propagate) in the child" % name))
            continue
        run, want = (rb, want_b[name]) if name in want_b and name not in want_a else (ra, None)
        if want is None:
            check(name in want_a, "test has no value for propagating entry %s" % name)
            want = want_a[name]
        checks.append((run["env"].get(name), want, "%s in the exec'd child" % name))
    # Nothing propagates that the table does not list.
    extra = sorted(k for k in ra["env"] if k.startswith("TRACKER_") and k not in tab)
    checks.append((extra, [], "TRACKER_* in the child that the table does not list"))
    checks.append((ra["env"].get("LD_PRELOAD"), env.preload, "LD_PRELOAD in the child"))

    # The settings as the child's capture recorded them; the default run
    # shows that each check can tell.
    sa, sb, sc = ra["stats"], rb["stats"], rc["stats"]
    checks += [
        (ra["hdr"]["depth"], 7, "TRACKER_DEPTH: child's max_depth"),
        (rc["hdr"]["depth"], tab["TRACKER_DEPTH"]["def"], "default run: child's max_depth"),
        (ra["hdr"]["options"] & OPT_MMAP, 0, "TRACKER_MMAP=0: child's mmap option bit"),
        (sa["mmap_peak_bytes"], 0, "TRACKER_MMAP=0: child's mmap peak"),
        (rc["hdr"]["options"] & OPT_MMAP, OPT_MMAP, "default run: child's mmap option bit"),
        (sc["mmap_peak_bytes"] >= 1 << 20, True, "default run: child's mmap peak >= 1 MiB"),
        (ra["hdr"]["options"] & OPT_FORK, 0, "TRACKER_FOLLOW_FORK=0: child's fork option bit"),
        (rc["hdr"]["options"] & OPT_FORK, OPT_FORK, "default run: child's fork option bit"),
        (ra["hdr"]["options"] & OPT_RSS, 0, "TRACKER_RSS_MS=0: child's RSS option bit"),
        (sa["rss_peak_bytes"], 0, "TRACKER_RSS_MS=0: child's RSS samples"),
        (rc["hdr"]["options"] & OPT_RSS, OPT_RSS, "default run: child's RSS option bit"),
        ("python" in sa, False, "TRACKER_PYTHON=0: child recorded with Python frames"),
        (sb.get("python", {}).get("native_frames"), False,
         "TRACKER_PYTHON=1: child's native_frames"),
        (sb.get("python", {}).get("python_allocators"), True,
         "TRACKER_PYTHON_ALLOCATORS=1: child's python_allocators"),
        (sc.get("python", {}).get("native_frames"), True, "default run: child's native_frames"),
        (sc.get("python", {}).get("python_allocators"), False,
         "default run: child's python_allocators"),
        (ra["hdr"]["root_pid"], pid, "TRACKER_ROOT_PID: child's root_pid"),
        (ra["hdr"]["session"], ra["root_hdr"]["session"], "TRACKER_SESSION: child's session"),
        (ra["stderr"], "", "TRACKER_QUIET=1: stderr of the run"),
        # Two generations of one 128 KiB table (plus a header page each).
        (sa["tracker_memory"]["tables_peak_bytes"] <= 2 * (128 + 4) * 1024, True,
         "TRACKER_TABLE_KB=128: child's tables_peak_bytes %d" % sa["tracker_memory"]["tables_peak_bytes"]),
        (sa.get("sample_bytes"), 4096, "TRACKER_SAMPLE_BYTES=4096: child's sample_bytes"),
        (sc.get("sample_bytes"), None, "default run: child's sample_bytes"),
        # libunwind only: nothing for the check to compare (test_unwind.py
        # covers the check itself)
        (sa["unwind_checked"] + sa["unwind_fallbacks"], 0, "TRACKER_UNWIND=0: own walks"),
        (sc["unwind_checked"], 0, "default run: TRACKER_UNWIND_CHECK off"),
    ]
    eq_all(checks)


def test_disable_not_followed(env):
    """TRACKER_DISABLE=1: nothing is recorded and an exec'd child with an
    empty environment gets nothing added (a disabled library injects nothing)."""
    procs = env.prog("procs")
    d = env.tmpdir("off")
    cp = env.run_raw([procs, "many_env", "0", sys.executable, "-c", CHILD], cwd=d, timeout=60,
                     env={"LD_PRELOAD": env.preload, "TRACKER_DISABLE": "1",
                          "TRACKER_OUTPUT": os.path.join(d, "out.bin")})
    eq(cp.returncode, 0, "exit status (stderr: %s)" % cp.stderr.decode(errors="replace"))
    got = child_env(kv(cp.stdout))
    eq(sorted(k for k in got if k.startswith("TRACKER_") or k == "LD_PRELOAD"), [],
       "variables added to the child's empty environment")
    eq(glob.glob(os.path.join(d, "*.bin")), [], "captures")


def test_issue_command_no_python_child(env):
    """The issue's command: `tracker run --no-python python3 -c
    "import subprocess,sys; subprocess.run([sys.executable,'-c','x=[0]*1000'],
    env={})"`: the child, started with env={}, is recorded like its parent,
    without Python frames."""
    d = env.tmpdir("issue")
    out = os.path.join(d, "x.bin")
    code = "import subprocess,sys; subprocess.run([sys.executable,'-c','x=[0]*1000'], env={})"
    env.run([sys.executable, "-c", code], out=out, extra=["--no-python"], timeout=120)
    caps = sorted(glob.glob(os.path.join(d, "*.bin")))
    child = [c for c in caps if c != out]
    eq(len(child), 1, "child captures (%s)" % caps)
    st = env.stats(child[0])
    check("x=[0]*1000" in st["command"], "child command: %r" % st["command"])
    eq(st.get("python"), None, "the child's Python recording (python in stats --json)")
    eq(env.stats(out).get("python"), None, "the parent's Python recording")


def test_readme_documents_the_table(env):
    """README.md's variable table lists exactly the table's entries, with
    the table's default for every numeric one."""
    tab = table()
    with open(os.path.join(_root, "README.md")) as f:
        rows = re.findall(r"^\| `(TRACKER_\w+)` \|(.*)\| (.*) \|$", f.read(), re.M)
    documented = {name: dflt for name, _, dflt in rows}
    eq(len(documented), len(rows), "README rows (a variable listed twice?)")
    eq(sorted(documented), sorted(tab), "variables in README.md vs src/common/env_options.h")
    bad = []
    for name, e in tab.items():
        if e["kind"] in ("BOOL", "UINT", "ENUM") and name in documented:
            if documented[name].strip() != "`%d`" % e["def"]:
                bad.append("%s: README %s, table %d" % (name, documented[name], e["def"]))
    eq(bad, [], "defaults that differ")


def test_run_help_ranges_match_table(env):
    """The ranges and defaults `tracker run --help` states for its numeric
    options are the table's (the parser's bounds come from it; the help
    text is written out and must not drift)."""
    tab = table()
    cp = env.run_raw([env.tracker, "run", "--help"], timeout=30)
    text = (cp.stdout + cp.stderr).decode(errors="replace")
    bad = []
    for opt, name in (("--depth", "TRACKER_DEPTH"), ("--buffer-kb", "TRACKER_BUFFER_KB")):
        m = re.search(re.escape(opt) + r" N .*?(\d+)\.\.(\d+) \(default (\d+)\)", text)
        check(m, "%s: no range in tracker run --help:\n%s" % (opt, text))
        e = tab[name]
        got = tuple(int(x) for x in m.groups())
        if got != (e["min"], e["max"], e["def"]):
            bad.append("%s: help says %r, table %r" % (opt, got, (e["min"], e["max"], e["def"])))
    eq(bad, [], "help ranges that differ from the table")
    # The parser enforces the table's bounds.
    for opt, name in (("--depth", "TRACKER_DEPTH"), ("--buffer-kb", "TRACKER_BUFFER_KB")):
        e = tab[name]
        for v in (e["min"] - 1, e["max"] + 1):
            cp = env.run_raw([env.tracker, "run", opt, str(v), "--", "/bin/true"], timeout=30,
                             cwd=env.tmpdir("range"))
            check(cp.returncode != 0, "tracker run %s %d accepted" % (opt, v))


if __name__ == "__main__":
    sys.exit(main(globals()))
