#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_files.py - what the reports open and what they write, when the file
system holds something else than expected (anyone can plant a FIFO or a
symlink in a shared directory):

- a FIFO where the capture recorded a module (the program's own binary), or
  where its separate debug file would be looked for: every report finishes
  and says that file could not be read;
- a FIFO named like a sibling capture (<stem>.<n>.bin): `--all` reports and
  `tracker run`'s final list finish and name the skipped file; a FIFO given
  as the capture is a one-line error;
- report outputs (export, flamegraph) follow `run`'s rule: created O_EXCL,
  never through a symlink, an existing name is replaced only with -f, and
  never when it is not a regular file (or a symlink, which is replaced
  itself); the refusal is one line naming the path and -f.

Every command runs with a generous timeout: a hang is the failure."""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, main  # noqa: E402

TIMEOUT = 60  # the commands take well under a second each


def one_line_error(cp, what, rc=2):
    err = cp.stderr.decode(errors="replace")
    eq(cp.returncode, rc, "%s: exit status (stderr %r)" % (what, err))
    lines = [ln for ln in err.splitlines() if ln.strip()]
    eq(len(lines), 1, "%s: lines on stderr (%r)" % (what, err))
    return lines[0]


def test_fifo_at_module_path(env):
    d = env.tmpdir("mod")
    prog = os.path.join(d, "myprog")
    shutil.copy(env.prog("leaker"), prog)
    _, out, _ = env.run([prog, "100", "32", "10"])
    # The binary the capture names is now a FIFO nobody writes to.
    os.unlink(prog)
    os.mkfifo(prog)
    reports = [
        ["summary", out],
        ["leaks", out],
        ["tree", out],
        ["flamegraph", out, "-o", os.path.join(d, "fg.html")],
        ["export", "--format", "folded", out, "-o", os.path.join(d, "x.folded")],
    ]
    for args in reports:
        cp = env.run_raw([env.tracker] + args + ["--no-progress"], timeout=TIMEOUT)
        err = cp.stderr.decode(errors="replace")
        eq(cp.returncode, 0, "tracker %s (stderr %r)" % (args[0], err))
        check("%s: not a regular file" % prog in err,
              "tracker %s names the unreadable module: %r" % (args[0], err))


def test_fifo_at_debug_file(env):
    # A stripped binary whose .gnu_debuglink names a file beside it: a FIFO
    # planted there (elfutils would open it blocking) is not read; the
    # ELF symbol table still names the frames.
    if not shutil.which("objcopy") or not shutil.which("strip"):
        raise Skip("objcopy/strip not installed")
    d = env.tmpdir("dbg")
    prog = os.path.join(d, "myprog")
    dbg = prog + ".debug"
    shutil.copy(env.prog("leaker"), prog)
    for argv in (["objcopy", "--only-keep-debug", prog, dbg], ["strip", "--strip-debug", prog],
                 ["objcopy", "--add-gnu-debuglink=" + dbg, prog]):
        eq(env.run_raw(argv, timeout=TIMEOUT).returncode, 0, " ".join(argv))
    _, out, _ = env.run([prog, "100", "32", "10"])
    os.unlink(dbg)
    os.mkfifo(dbg)
    for cmd in ("summary", "leaks"):
        cp = env.run_raw([env.tracker, cmd, "--no-progress", out], timeout=TIMEOUT)
        err = cp.stderr.decode(errors="replace")
        eq(cp.returncode, 0, "tracker %s (stderr %r)" % (cmd, err))
        check("debug file %s is not a regular file" % dbg in err,
              "tracker %s names the unreadable debug file: %r" % (cmd, err))
        check(" main " in cp.stdout.decode(errors="replace") or "main (" in
              cp.stdout.decode(errors="replace"), "main is named:\n%s" % cp.stdout.decode())


def test_fifo_sibling_capture(env):
    d = env.tmpdir("sib")
    app = os.path.join(d, "app.bin")
    fifo = os.path.join(d, "app.5.bin")
    os.mkfifo(fifo)
    # tracker run's final list looks at every <stem>.<n>.bin.
    cp = env.run_raw([env.tracker, "run", "-o", app, "--", env.prog("leaker"), "100", "32"],
                     timeout=TIMEOUT)
    eq(cp.returncode, 0, "tracker run (stderr %r)" % cp.stderr)
    err = cp.stderr.decode(errors="replace")
    check("wrote 1 capture:" in err and fifo not in err, "final list: %r" % err)
    for cmd in ("summary", "leaks", "tree"):
        cp = env.run_raw([env.tracker, cmd, "--all", "--no-progress", app], timeout=TIMEOUT)
        err = cp.stderr.decode(errors="replace")
        eq(cp.returncode, 0, "%s --all (stderr %r)" % (cmd, err))
        check("skipping %s: not a regular file" % fifo in err,
              "%s --all names the skipped FIFO: %r" % (cmd, err))
    line = one_line_error(env.run_raw([env.tracker, "stats", fifo], timeout=TIMEOUT),
                          "stats on a FIFO", rc=1)
    check(fifo in line and "not a regular file" in line, "stats on a FIFO: %r" % line)


def capture(env):
    _, out, _ = env.run([env.prog("leaker"), "100", "32", "10"])
    return out


def check_output_rule(env, argv_for, default_name, what):
    """argv_for(extra) runs the command writing to default_name."""
    d = os.path.dirname(default_name)

    def run(extra):
        return env.run_raw(argv_for(extra), timeout=TIMEOUT)

    # A planted symlink: never written through, with or without -f.
    victim = os.path.join(d, "victim")
    with open(victim, "wb") as f:
        f.write(b"precious")
    os.symlink(victim, default_name)
    line = one_line_error(run([]), "%s: planted symlink" % what)
    check(default_name in line and "-f" in line, "%s: symlink refusal: %r" % (what, line))
    check(os.path.islink(default_name), "%s: the symlink was replaced without -f" % what)
    cp = run(["-f"])
    eq(cp.returncode, 0, "%s -f over a symlink (stderr %r)" % (what, cp.stderr))
    check(not os.path.islink(default_name) and os.path.isfile(default_name),
          "%s -f: the symlink itself is replaced by the output" % what)
    with open(victim, "rb") as f:
        eq(f.read(), b"precious", "%s: symlink target" % what)
    eq(os.stat(victim).st_nlink, 1, "%s: links to the target" % what)
    # A dangling symlink does not create its target.
    os.unlink(default_name)
    ghost = os.path.join(d, "ghost")
    os.symlink(ghost, default_name)
    one_line_error(run([]), "%s: dangling symlink" % what)
    check(not os.path.exists(ghost), "%s: a dangling symlink was followed" % what)
    os.unlink(default_name)
    # An existing regular file: kept without -f, replaced with it.
    with open(default_name, "wb") as f:
        f.write(b"old")
    line = one_line_error(run([]), "%s: existing output" % what)
    check(default_name in line and "-f" in line, "%s: existing refusal: %r" % (what, line))
    with open(default_name, "rb") as f:
        eq(f.read(), b"old", "%s: existing output without -f" % what)
    cp = run(["-f"])
    eq(cp.returncode, 0, "%s -f over a file (stderr %r)" % (what, cp.stderr))
    check(os.path.getsize(default_name) > 3, "%s -f: the output was replaced" % what)
    # Not a regular file: never replaced, and a FIFO never opened.
    os.unlink(default_name)
    os.mkfifo(default_name)
    for extra in ([], ["-f"]):
        line = one_line_error(run(extra), "%s %s: FIFO output" % (what, extra))
        check(default_name in line, "%s: FIFO refusal: %r" % (what, line))
        check(os.path.exists(default_name) and not os.path.isfile(default_name),
              "%s %s: the FIFO was replaced" % (what, extra))
    os.unlink(default_name)
    leftovers = [n for n in os.listdir(d) if ".tmp." in n]
    eq(leftovers, [], "%s: temporary files left behind" % what)


def test_export_output_rule(env):
    cap = capture(env)
    d = os.path.dirname(cap)
    os.chmod(d, 0o1777)  # the shared directory of the report
    # Default output name (FILE with .bin replaced) and an explicit -o.
    check_output_rule(
        env, lambda extra: [env.tracker, "export", "--format", "speedscope", cap] + extra,
        os.path.join(d, "out.speedscope.json"), "export (default name)")
    o = os.path.join(d, "x.folded")
    check_output_rule(
        env, lambda extra: [env.tracker, "export", "--format", "folded", cap, "-o", o] + extra,
        o, "export -o")


def test_flamegraph_output_rule(env):
    cap = capture(env)
    d = os.path.dirname(cap)
    check_output_rule(
        env, lambda extra: [env.tracker, "flamegraph", "--no-progress", cap] + extra,
        os.path.join(d, "out.html"), "flamegraph")


if __name__ == "__main__":
    sys.exit(main(globals()))
