#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_shim.py - issue 10 §1 and §6: the program the user asked to run is
the capture they get. A pyenv-like shim (a bash script that runs a few
subshells, then execs the real interpreter in the same pid) is resolved
before anything is traced; `tracker run ./wrapper.sh` where the wrapper
execs a program reports, on the -o file, the image the pid finally became;
a report on one capture of a set says which others exist and which holds
the Python interpreter; `--python` that is not a Python is an error; after
a run the next command to try is printed."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, kv, main  # noqa: E402

REAL_PY = "/usr/bin/python3"

# pyenv's shim: `#!/usr/bin/env bash`, subshells (pyenv's version lookup),
# then exec of the real interpreter in the same pid.
SHIM = """#!/usr/bin/env bash
set -e
v=$(echo 3.11 | cat)
d=$(dirname "$0")
( true )
exec %s "$@"
""" % REAL_PY

SCRIPT = """def grow():
    return [bytearray(4096) for _ in range(500)]  # line 2


keep = grow()
"""


def setup(env, label):
    if not os.access(REAL_PY, os.X_OK):
        raise Skip("%s not installed" % REAL_PY)
    d = env.tmpdir(label)
    bindir = os.path.join(d, "bin")
    os.makedirs(bindir)
    shim = os.path.join(bindir, "python3")
    with open(shim, "w") as f:
        f.write(SHIM)
    os.chmod(shim, 0o755)
    work = os.path.join(d, "work")
    os.makedirs(work)
    with open(os.path.join(work, "s.py"), "w") as f:
        f.write(SCRIPT)
    penv = {"PATH": bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONDONTWRITEBYTECODE": "1"}
    return work, penv


def tracker(env, args, penv, cwd, rc=0):
    cp = env.run_raw([env.tracker] + args, env=penv, cwd=cwd, timeout=120)
    err = cp.stderr.decode(errors="replace")
    if rc is not None:
        eq(cp.returncode, rc, "exit status of tracker %s (stderr: %s)" % (" ".join(args), err))
    return cp.stdout.decode(errors="replace"), err


def check_python_capture(env, work, penv, out):
    """out is the one capture of the run: the real interpreter's, with the
    script's line."""
    eq(sorted(f for f in os.listdir(work) if f.endswith(".bin")), [out], "captures written")
    st = env.stats(os.path.join(work, out))
    check(st["command"].startswith(REAL_PY + " "),
          "capture's command is the real interpreter: %r" % st["command"])
    summ, _ = tracker(env, ["summary", out], penv, work)
    check(re.search(r"\(s\.py:2\)", summ), "summary shows the script's line:\n" + summ[:2000])


def test_shim_script(env):
    """`tracker run s.py` with the shim first on PATH: one capture, the
    real interpreter's (old code: 6 captures, the first /usr/bin/env bash)."""
    work, penv = setup(env, "script")
    _, err = tracker(env, ["run", "-o", "o.bin", "s.py"], penv, work)
    check("wrote 1 capture:" in err, "one capture listed:\n" + err)
    check_python_capture(env, work, penv, "o.bin")


def test_shim_python3(env):
    """`tracker run python3 s.py` resolves the shim the same way."""
    work, penv = setup(env, "py3")
    tracker(env, ["run", "-o", "o.bin", "python3", "s.py"], penv, work)
    check_python_capture(env, work, penv, "o.bin")


def test_shim_dash_c(env):
    """`tracker run -c CODE` too, with the default capture name."""
    work, penv = setup(env, "dashc")
    _, err = tracker(env, ["run", "-c", "exec(open('s.py').read())"], penv, work)
    names = [f for f in os.listdir(work) if f.endswith(".bin")]
    eq(len(names), 1, "captures written (%s)" % err)
    check(re.fullmatch(r"tracker-python\.\d+\.bin", names[0]), "default name: %s" % names[0])
    st = env.stats(os.path.join(work, names[0]))
    check(st["command"].startswith(REAL_PY + " -c "), "command: %r" % st["command"])


def test_python_not_a_python(env):
    """--python /usr/bin/true is an error, nothing is traced or written."""
    work, penv = setup(env, "true")
    cp = env.run_raw([env.tracker, "run", "--python", "/usr/bin/true", "-o", "o.bin", "s.py"],
                     env=penv, cwd=work)
    err = cp.stderr.decode(errors="replace")
    check(cp.returncode != 0, "exit status %d for a non-Python --python" % cp.returncode)
    check("/usr/bin/true" in err and "not a Python interpreter" in err,
          "message names the file and says why:\n" + err)
    eq(sorted(os.listdir(work)), ["s.py"], "files in the working directory")


def test_next_command_hint(env):
    """After a run, the next command to try, on the capture -o names."""
    work, penv = setup(env, "hint")
    _, err = tracker(env, ["run", "-o", "o.bin", "s.py"], penv, work)
    check("tracker flamegraph o.bin" in err, "next command printed:\n" + err)
    _, err = tracker(env, ["run", "-q", "-o", "q.bin", "-f", "s.py"], penv, work)
    eq(err, "", "-q prints nothing")


WRAPPER = """#!/bin/sh
v=$(echo hi | cat)
( true )
exec %s s.py
""" % REAL_PY


def wrapper_run(env, label):
    work, penv = setup(env, label)
    w = os.path.join(work, "wrapper.sh")
    with open(w, "w") as f:
        f.write(WRAPPER)
    os.chmod(w, 0o755)
    _, err = tracker(env, ["run", "-o", "w.bin", "./wrapper.sh"], penv, work)
    caps = sorted(f for f in os.listdir(work) if f.endswith(".bin"))
    check(len(caps) > 2, "the wrapper's subshells are captures too: %s" % caps)
    return work, penv, caps


def test_wrapper_exec_followed(env):
    """`tracker run -o w.bin ./wrapper.sh` that execs python3: reports on
    w.bin are the program the pid finally became (old code: /bin/sh's
    capture, no Python frames), and say so in one line."""
    work, penv, caps = wrapper_run(env, "wrap")
    st = env.stats(os.path.join(work, "w.bin"))
    check(st["command"].startswith(REAL_PY + " s.py"), "stats command: %r" % st["command"])
    summ, err = tracker(env, ["summary", "w.bin"], penv, work)
    check(re.search(r"\(s\.py:2\)", summ), "summary shows the script's line:\n" + summ[:2000])
    check(re.search(r"w\.bin is pid \d+'s first image \(/bin/sh \./wrapper\.sh\), which "
                    r"exec'd; reporting its last image, w\.\d+\.bin", err),
          "the followed exec is said:\n" + err)
    imp, _ = tracker(env, ["imports", "w.bin"], penv, work)
    check("Python 3." in imp, "imports reads the Python image:\n" + imp[:500])


def test_other_captures_note(env):
    """A report on a non-Python capture of the set names, in one line, how
    many captures the run wrote and which holds the Python interpreter."""
    work, penv, caps = wrapper_run(env, "note")
    st = env.stats(os.path.join(work, "w.bin"))
    pid = st["pid"]
    py = "w.%d.bin" % pid
    check(py in caps, "the exec'd image's capture %s in %s" % (py, caps))
    sub = [c for c in caps if c not in ("w.bin", py) and not c.startswith("w.%d." % pid)][0]
    _, err = tracker(env, ["summary", sub], penv, work)
    lines = [ln for ln in err.splitlines() if "captures of this run" in ln]
    eq(len(lines), 1, "note lines in %r" % err)
    eq(lines[0], "tracker: %s is 1 of %d captures of this run (w.*.bin; --all reads them all); "
       "the Python interpreter is in: %s" % (sub, len(caps), py), "note")
    _, err = tracker(env, ["imports", sub], penv, work, rc=None)
    check("the Python interpreter is in: %s" % py in err, "imports names it:\n" + err)


# ---- §6: tracker imports shows time and sorts ------------------------------------------

IMPORT_MAIN = "import bigmod\nimport slowmod\n"
BIGMOD = "keep = bytearray(3000000)\n"
SLOWMOD = "import time\ntime.sleep(0.3)\n"


def walk(nodes):
    for n in nodes:
        yield n
        yield from walk(n["children"])


def check_sorted(nodes, key, what):
    vals = [n[key] for n in nodes]
    eq(vals, sorted(vals, reverse=True), "%s: siblings by %s" % (what, key))
    for n in nodes:
        check_sorted(n["children"], key, what)


def test_imports_time_and_sort(env):
    """`tracker imports` shows each import's time beside its bytes (self as
    -X importtime: less its nested imports) and --sort orders siblings by a
    column, largest first."""
    work, penv = setup(env, "imp")
    for name, text in (("m.py", IMPORT_MAIN), ("bigmod.py", BIGMOD), ("slowmod.py", SLOWMOD)):
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    penv["PYTHONPATH"] = work
    tracker(env, ["run", "-q", "--python", REAL_PY, "-o", "i.bin", "m.py"], penv, work)
    txt, _ = tracker(env, ["imports", "i.bin"], penv, work)
    check(re.search(r"self live cumul\. live\s+self time cumul\. time  imported module", txt),
          "time columns in the header:\n" + txt[:1000])
    row = [ln for ln in txt.splitlines() if ln.endswith(" slowmod")]
    eq(len(row), 1, "slowmod rows")
    # At least the 0.3 s it slept (a lower bound, not a speed).
    check(re.search(r"\s(\d+\.\d+ ms|\d+\.\d+ s)\s", row[0]), "slowmod's time: %r" % row[0])
    out, _ = tracker(env, ["imports", "--json", "i.bin"], penv, work)

    nodes = {n["module"]: n for n in walk(json.loads(out)["imports"])}
    check(nodes["slowmod"]["self_duration_s"] >= 0.3, "slowmod self time %r"
          % nodes["slowmod"]["self_duration_s"])
    tops = [n["module"] for n in json.loads(out)["imports"]]
    check(tops.index("bigmod") < tops.index("slowmod"), "import order by default: %s" % tops)
    for col, key in (("self-alloc", "allocated_bytes"), ("alloc", "cumulative_allocated_bytes"),
                     ("time", "duration_s"), ("self-time", "self_duration_s")):
        out, _ = tracker(env, ["imports", "--json", "--sort", col, "i.bin"], penv, work)
        check_sorted(json.loads(out)["imports"], key, "--sort " + col)
    txt, _ = tracker(env, ["imports", "--sort", "self-alloc", "i.bin"], penv, work)
    first = [ln for ln in txt.splitlines() if re.match(r"\s*\d", ln)][0]
    check(first.endswith("  bigmod"), "largest self alloc first: %r" % first)
    _, err = tracker(env, ["imports", "--sort", "size", "i.bin"], penv, work, rc=2)
    check("--sort" in err, "a bad column is refused: %r" % err)


# ---- §6: how a capture ended, in words ---------------------------------------------------

TERMINATED = """import os, signal, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    keep = bytearray(100000)
    os.write(w, b"x")
    time.sleep(60)
    os._exit(0)
os.read(r, 1)
os.kill(pid, signal.SIGTERM)
os.waitpid(pid, 0)
print("child=%d" % pid)
"""


def test_ended_wording(env):
    """A capture whose process exec'd says so (its blocks are "live at
    exec", not leaked), and one whose parent terminated it is not called
    killed: the report names what may have happened."""
    work, penv, caps = wrapper_run(env, "end")
    st = env.stats(os.path.join(work, "w.bin"))
    # A subshell that exec'd: its first image is w.<pid>.bin beside w.<pid>.1.bin.
    execd = [c for c in caps if c.count(".") == 2 and c != "w.%d.bin" % st["pid"]
             and c.replace(".bin", ".1.bin") in caps]
    check(execd, "a subshell that exec'd among %s" % caps)
    out, _ = tracker(env, ["stats", execd[0]], penv, work)
    check(re.search(r"^Ended +by exec: the process became another program", out, re.M),
          "exec'd ending said:\n" + out)
    check(re.search(r"^  Live at exec ", out, re.M) and not re.search(r"^  Leaked ", out, re.M),
          "blocks live at exec are not called leaked:\n" + out)
    js = env.stats(os.path.join(work, execd[0]))
    eq(js["ended"], "exec", "JSON ended")
    eq(env.stats(os.path.join(work, "w.bin"))["ended"], "exit", "the python image's ending")

    with open(os.path.join(work, "t.py"), "w") as f:
        f.write(TERMINATED)
    cp = env.run_raw([env.tracker, "run", "-q", "--python", REAL_PY, "-o", "t.bin", "t.py"],
                     env=penv, cwd=work, timeout=120)
    eq(cp.returncode, 0, "parent's exit status (%s)" % cp.stderr.decode(errors="replace"))
    child = "t.%s.bin" % kv(cp.stdout)["child"]
    for cmd in (["stats"], ["summary"]):
        out, err = tracker(env, cmd + [child], penv, work)
        text = out + err
        check("killed or is still running" not in text and "terminated by its parent" in text,
              "%s on a terminated child:\n%s" % (cmd[0], text[:1500]))
    eq(env.stats(os.path.join(work, child), allow_truncated=True)["ended"], None, "JSON ended")


if __name__ == "__main__":
    sys.exit(main(globals()))
