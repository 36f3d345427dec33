#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_leak_gate_programs.py - `tracker leaks --fail-on-leak` after `tracker
run` on ordinary programs (issue 11): the gate judges every capture of the
run (forked children, exec'd images) and fails only on what is lost.

- Programs that lose nothing pass: both Pythons importing json, git
  --version, ls -la /, a bash pipeline (a forked subshell, a child that
  execs cat) and a shell that execs (what an image held at its exec was
  released by the exec: not a leak, as valgrind has it too).
- perl -e 1 and sort FILE do lose memory at exit, by valgrind's memcheck
  as well (perl frees its interpreter but not the arenas it points to,
  unless PERL_DESTRUCT_LEVEL=2; sort drops its operand array): the gate
  fails on them with valgrind's exact bytes, and perl passes with
  PERL_DESTRUCT_LEVEL=2.
- A leaking C program fails.
Programs that are not installed are skipped."""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, main  # noqa: E402


def gate(env, argv, env_vars=None):
    """(rc of --fail-on-leak over the run's captures, its stderr, leak_summary)."""
    _, out, _ = env.run(argv, env=env_vars, timeout=180)
    cp = env.run_raw([env.tracker, "leaks", "--no-progress", "--fail-on-leak", out], timeout=120)
    js = env.run_raw([env.tracker, "leaks", "--no-progress", "--json", "-n", "0", out],
                     timeout=120)
    s = [e["leak_summary"] for e in json.loads(js.stdout.decode()) if "leak_summary" in e]
    return cp.returncode, cp.stderr.decode(errors="replace") + cp.stdout.decode()[-2000:], \
        (s[0] if s else None), out


def which(name):
    path = shutil.which(name)
    if not path:
        raise Skip("%s not installed" % name)
    return path


def passes(env, argv, env_vars=None):
    rc, why, _, _ = gate(env, argv, env_vars)
    eq(rc, 0, "%s: --fail-on-leak exit status\n%s" % (" ".join(argv), why))


def test_python_system(env):
    if not os.access("/usr/bin/python3", os.X_OK):
        raise Skip("no /usr/bin/python3")
    passes(env, ["/usr/bin/python3", "-c", "import json"])


def test_python_path(env):
    passes(env, [which("python3"), "-c", "import json"])


def test_git_version(env):
    passes(env, [which("git"), "--version"])


def test_ls(env):
    passes(env, [which("ls"), "-la", "/"])


def test_bash_pipeline(env):
    passes(env, [which("bash"), "-c", "echo hi | cat"])


def test_exec_releases(env):
    # bash's own heap is live when it execs true: that image's capture has
    # no leak scan (nothing is lost at an exec) and must not fail the gate.
    bash = which("bash")
    rc, why, _, out = gate(env, [bash, "-c", "x=$(echo a); exec %s" % which("true")])
    eq(rc, 0, "exec: --fail-on-leak exit status\n" + why)
    text = env.run_raw([env.tracker, "leaks", "--no-progress", "--all", out]).stdout.decode()
    check("its image ended by exec, which released what it held" in text,
          "the exec'd image is said, not listed:\n" + text)


VG_LOST = re.compile(r"==\d+==\s+(definitely|indirectly) lost: ([\d,]+) bytes in ([\d,]+) blocks")


def valgrind_lost(env, argv, env_vars=None):
    cp = env.run_raw([shutil.which("valgrind"), "--leak-check=full", "--run-libc-freeres=no"]
                     + argv, timeout=280, env=env_vars)
    got = {}
    for m in VG_LOST.finditer(cp.stderr.decode(errors="replace")):
        got[m.group(1)] = (int(m.group(2).replace(",", "")), int(m.group(3).replace(",", "")))
    return got


def lost_like_valgrind(env, argv, env_vars=None):
    rc, why, s, _ = gate(env, argv, env_vars)
    eq(rc, 1, "%s loses memory at exit: --fail-on-leak fails\n%s" % (" ".join(argv), why))
    mine = {"definitely": (s["definite"]["bytes"], s["definite"]["count"]),
            "indirectly": (s["indirect"]["bytes"], s["indirect"]["count"])}
    check(mine["definitely"][0] > 0, "%s: definitely lost bytes %r" % (argv[0], mine))
    if shutil.which("valgrind"):
        eq(mine, valgrind_lost(env, argv, env_vars), "%s: tracker vs valgrind" % " ".join(argv))


def test_perl_loses_its_arenas(env):
    perl = which("perl")
    lost_like_valgrind(env, [perl, "-e", "1"])
    passes(env, [perl, "-e", "1"], {"PERL_DESTRUCT_LEVEL": "2"})


def test_sort_loses_its_operands(env):
    lost_like_valgrind(env, [which("sort"), "/etc/passwd"])


def test_fork_child_inherited_holder(env):
    # The child's block held only from an inherited block is reachable; the
    # one it drops is still definitely lost.
    _, out, _ = env.run([env.prog("leak_fork_inherited")])
    js = env.run_raw([env.tracker, "leaks", "--no-progress", "--json", "--all", "--kinds", "all",
                      "-n", "0", out])
    got = {}
    for e in json.loads(js.stdout.decode()):
        fn = e["stack"][0]["function"] if e.get("stack") else None
        if fn in ("lfi_held", "lfi_lost"):
            got[fn] = (e.get("class"), e["bytes"], e["count"])
    eq(got, {"lfi_held": ("reachable", 3101, 1), "lfi_lost": ("definite", 3102, 1)},
       "the fork child's blocks")
    cp = env.run_raw([env.tracker, "leaks", "--no-progress", "--all", "--fail-on-leak=3102", out])
    eq(cp.returncode, 0, "only the dropped block counts: " + cp.stderr.decode(errors="replace"))
    text = env.run_raw([env.tracker, "leaks", "--no-progress", "--all", out]).stdout.decode()
    check("the heap it inherited was scanned as roots" in text, "said:\n" + text)


def test_leaking_program_fails(env):
    rc, why, s, _ = gate(env, [env.prog("leak_sup_graph")])
    eq(rc, 1, "a leaking program fails the gate\n" + why)
    eq((s["definite"]["bytes"], s["indirect"]["bytes"]), (5001, 10004), "its lost bytes")


if __name__ == "__main__":
    sys.exit(main(globals()))
