#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_readme_python.py - README's Python section, copy-paste (issue 10,
"Done means"): the commands of its first code block run as written, by
sh, in a directory with train.py and mypkg/cli.py, with `tracker` and a
pyenv-like python3 shim (a bash script that runs subshells, then execs the
real interpreter) first on PATH; each must succeed and the reports must
show the script's lines and imports, from the real interpreter's capture.
And scripts/example.sh, the bundled example of scripts/setup.sh, which
runs examples/demo.py through such a shim: its reports are on disk."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Skip, check, eq, main  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
REAL_PY = "/usr/bin/python3"

SHIM = """#!/usr/bin/env bash
set -e
version=$(echo 3.11 | cat)
( true )
exec %s "$@"
""" % REAL_PY

TRAIN = """import argparse
import json


def step(n):
    return [bytearray(1000) for _ in range(n)]  # train.py:6


ap = argparse.ArgumentParser()
ap.add_argument("--epochs", type=int, default=3)
args = ap.parse_args()
KEPT = [step(200) for _ in range(args.epochs)]
print(json.dumps({"epochs": args.epochs}))
"""

CLI = """import sys

KEPT = [bytes(2000) for _ in range(100)]
print("cli", sys.argv[1:])
"""


def readme_python_block():
    """The first indented code block after README's "### Python"."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    i = text.index("\n### Python\n")
    lines, started = [], False
    for line in text[i:].splitlines()[2:]:
        if line.startswith("    ") and line.strip():
            started = True
            lines.append(line[4:])
        elif started:
            break
    check(lines, "README's Python section has a code block")
    return lines


def sandbox(env):
    if not os.access(REAL_PY, os.X_OK):
        raise Skip("%s not installed" % REAL_PY)
    d = env.tmpdir("readme")
    bindir = os.path.join(d, "bin")
    work = os.path.join(d, "work")
    os.makedirs(bindir)
    os.makedirs(os.path.join(work, "mypkg"))
    files = {
        os.path.join(bindir, "python3"): SHIM,
        os.path.join(bindir, "tracker"): "#!/bin/sh\nexec %s \"$@\"\n" % env.tracker,
        os.path.join(work, "train.py"): TRAIN,
        os.path.join(work, "mypkg", "__init__.py"): "",
        os.path.join(work, "mypkg", "cli.py"): CLI,
    }
    for path, body in files.items():
        with open(path, "w") as f:
            f.write(body)
    for x in ("python3", "tracker"):
        os.chmod(os.path.join(bindir, x), 0o755)
    penv = {"PATH": bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONDONTWRITEBYTECODE": "1", "TRACKER_LIB": env.preload}
    return work, penv


def test_readme_python_section(env):
    work, penv = sandbox(env)
    outs = []
    for cmd in readme_python_block():
        cp = env.run_raw(["sh", "-c", cmd], env=penv, cwd=work, timeout=300)
        err = cp.stderr.decode(errors="replace")
        eq(cp.returncode, 0, "README command %r (stderr: %s)" % (cmd, err[-2000:]))
        outs.append((cmd, cp.stdout.decode(errors="replace")))
    caps = sorted(f for f in os.listdir(work) if f.endswith(".bin"))
    check(any(re.match(r"tracker-train\.py\.\d+\.bin$", c) for c in caps), caps)
    check(any(c.startswith("tracker-mypkg.cli.") for c in caps), caps)
    for c in caps:  # the shim is not what was recorded
        st = env.stats(os.path.join(work, c))
        check(st["command"].startswith(REAL_PY + " "), "%s: %r" % (c, st["command"]))
    summary = [o for c, o in outs if c.startswith("tracker summary")]
    imports = [o for c, o in outs if c.startswith("tracker imports")]
    eq((len(summary), len(imports)), (1, 1), "the block has a summary and an imports command")
    check(re.search(r"\(train\.py:6\)", summary[0]),
          "summary names the script's line:\n" + summary[0][:2000])
    check(re.search(r"\bargparse\b", imports[0]) and re.search(r"\bjson\b", imports[0]),
          "imports lists the script's imports:\n" + imports[0][:2000])


def test_bundled_example(env):
    """scripts/example.sh (setup.sh's example): C and Python, the Python
    script also through a pyenv-like shim, reports on disk."""
    if not os.access(REAL_PY, os.X_OK):
        raise Skip("%s not installed" % REAL_PY)
    build = os.path.dirname(env.tracker)
    demo = os.path.join(build, "examples", "demo")
    if not os.access(demo, os.X_OK):
        raise Skip("examples/demo not built")
    if harness.sanitized(demo):
        raise Skip("examples/demo is sanitized here: ASan refuses a preload ahead of it")
    out = env.tmpdir("example")
    cp = env.run_raw(["sh", os.path.join(ROOT, "scripts", "example.sh"), build, out],
                     env={"TRACKER_LIB": env.preload}, timeout=600)
    eq(cp.returncode, 0, "example.sh: %s" % cp.stderr.decode(errors="replace")[-2000:])
    for name in ("demo.html", "demo-stats.txt", "demo-leaks.txt", "demo-py.html",
                 "demo-py-leaks.txt", "demo-py-imports.txt", "demo-shim.html",
                 "demo-shim-summary.txt", "demo-shim-stats.txt"):
        p = os.path.join(out, name)
        check(os.path.isfile(p) and os.path.getsize(p) > 0, "%s written" % name)
    shim = [f for f in os.listdir(out) if f.startswith("demo-shim") and f.endswith(".bin")]
    eq(shim, ["demo-shim.bin"], "one capture through the shim")
    st = env.stats(os.path.join(out, "demo-shim.bin"))
    check(st["command"].startswith(REAL_PY + " "), "shim resolved: %r" % st["command"])
    with open(os.path.join(out, "demo-shim-summary.txt")) as f:
        s = f.read()
    check(re.search(r"\(demo\.py:\d+\)", s), "summary has demo.py's lines:\n" + s[:2000])


def test_usage_says_several_files(env):
    """Commands that read several captures of one run say FILE... in their
    generated usage (they said FILE), and so does README's usage block."""
    several = ["stats", "summary", "tree", "leaks", "export", "flamegraph", "imports"]
    for cmd in several + ["diff"]:
        cp = env.run_raw([env.tracker, cmd, "--help"])
        eq(cp.returncode, 0, "%s --help" % cmd)
        first = cp.stdout.decode().splitlines()[0]
        eq(first.endswith("FILE..."), cmd != "diff", "%s usage: %r" % (cmd, first))
    top = env.run_raw([env.tracker, "--help"]).stdout.decode()
    for cmd in several:
        check(re.search(r"^  %s .*FILE\.\.\.(\s|$)" % cmd, top, re.M), "global usage of %s:\n%s"
              % (cmd, top))
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    usage = readme[readme.index("## Usage"):]
    usage = usage[:usage.index("\n\n", usage.index("    tracker"))]
    for line in usage.splitlines():
        if re.match(r"    tracker (flamegraph|summary|export|stats|imports)", line):
            check("FILE..." in line, "README usage line: %r" % line)


if __name__ == "__main__":
    sys.exit(main(globals()))
