#!/usr/bin/env python3
"""The `tracker` command line itself (issue 13): every command's --help (and
-h, and `tracker help COMMAND`) prints that command's help, not the global
usage; every option its help lists is one its parser accepts; the spellings
of a value (--name VALUE, --name=VALUE, -xVALUE, -x=VALUE) mean the same."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, main  # noqa: E402

# Each command and an option only its own help lists.
COMMANDS = {
    "run": "--buffer-kb",
    "stats": "--device",
    "summary": "-n N",
    "tree": "--threshold",
    "leaks": "--fail-on-leak",
    "export": "--format",
    "flamegraph": "--max-mb",
    "diff": "BEFORE AFTER",
    "imports": "--min-bytes",
}

# A valid value for each metavariable the help shows.
VALUES = {"N": "1", "PCT": "1", "T": "1", "MB": "1", "BYTES": "1", "FORMAT": "folded",
          "FILE": "x", "DIR": "x", "OUT": "x", "PATH": "x"}
# Where 1 is out of the option's range.
OVERRIDE = {"--buffer-kb": "64"}


def help_of(env, argv):
    cp = env.run_raw([env.tracker] + argv, timeout=60)
    eq(cp.returncode, 0, "%s: exit status" % " ".join(argv))
    eq(cp.stderr, b"", "%s: stderr" % " ".join(argv))
    return cp.stdout.decode()


def test_command_help(env):
    """`tracker CMD --help`, `tracker CMD -h` and `tracker help CMD` print
    CMD's own help (its usage line and its options), the same text each."""
    for cmd, own in COMMANDS.items():
        text = help_of(env, [cmd, "--help"])
        check(text.startswith("usage: tracker %s " % cmd), "%s --help: usage line\n%s" % (cmd, text))
        check(own in text, "%s --help lists %s\n%s" % (cmd, own, text))
        check("commands:" not in text, "%s --help is not the global usage\n%s" % (cmd, text))
        eq(help_of(env, [cmd, "-h"]), text, "%s -h" % cmd)
        eq(help_of(env, ["help", cmd]), text, "help %s" % cmd)
    # --json is refused by export and flamegraph: their help does not offer it.
    for cmd in ("export", "flamegraph"):
        check("--json" not in help_of(env, [cmd, "--help"]), "%s --help offers --json" % cmd)


def test_run_help_runs_nothing(env):
    marker = os.path.join(env.tmp, "ran")
    text = help_of(env, ["run", "--help", "/usr/bin/touch", marker])
    check(text.startswith("usage: tracker run "), "run --help:\n%s" % text)
    check(not os.path.exists(marker), "run --help ran the program")


def test_global_usage(env):
    """`tracker help` lists every command; `tracker` alone is a usage error."""
    text = help_of(env, ["help"])
    check(text.startswith("usage: tracker <command>"), "help:\n%s" % text)
    for cmd in COMMANDS:
        check(re.search(r"^  %s " % cmd, text, re.M), "help lists %s\n%s" % (cmd, text))
    eq(help_of(env, ["--help"]), text, "tracker --help")
    cp = env.run_raw([env.tracker], timeout=60)
    eq(cp.returncode, 2, "tracker without a command")
    check(cp.stderr.decode().startswith("usage: tracker <command>"), "usage on stderr")


def test_help_matches_parser(env):
    """Every option a command's help lists is accepted by its parser: with
    a valid value where it takes one, the option followed by --help exits 0
    (an unknown option or a refused value would exit 2 first)."""
    row = re.compile(r"^  (?:-(\w), )?(--?[\w-]+)(\[=(\w+)\]| (\w+))?(?:\s|$)")
    for cmd in COMMANDS:
        seen = 0
        for line in help_of(env, [cmd, "--help"]).splitlines():
            m = row.match(line)
            if not m or line.startswith("  " + " " * 10):
                continue
            short, name, eq_meta, meta = m.group(1), m.group(2), m.group(4), m.group(5)
            if name in ("--help",) or not name.startswith("-"):
                continue
            if meta and meta not in VALUES:
                continue  # a help row of prose ("  pprof ...") is not an option
            val = OVERRIDE.get(name, VALUES.get(meta or eq_meta))
            if eq_meta:
                forms = [[name + "=" + val], [name]]
            elif meta:
                forms = [[name, val], [name + "=" + val]]
                if short:
                    forms += [["-" + short, val], ["-" + short + val]]
            else:
                forms = [[name]] + ([["-" + short]] if short else [])
            for form in forms:
                argv = [cmd] + form + ["--help"]
                cp = env.run_raw([env.tracker] + argv, timeout=60)
                eq(cp.returncode, 0, "%s: exit status (stderr %r)" % (" ".join(argv), cp.stderr))
            seen += 1
        check(seen >= 1, "%s: no option rows found in its help" % cmd)


def test_value_spellings(env):
    """-n 1, -n1, -n=1 and a clustered short option mean the same."""
    _, out, _ = env.run([env.prog("leaker"), "3", "100"])
    got = []
    for form in (["-n", "1"], ["-n1"], ["-n=1"]):
        cp = env.run_raw([env.tracker, "summary", "--json", "--no-progress"] + form + [out],
                         timeout=60)
        eq(cp.returncode, 0, "summary %s (stderr %r)" % (" ".join(form), cp.stderr))
        got.append(json.loads(cp.stdout.decode()))
    eq(got[1], got[0], "-n1 as -n 1")
    eq(got[2], got[0], "-n=1 as -n 1")
    # -fq: two flags in one word, as run always took them.
    cp = env.run_raw([env.tracker, "run", "-fq", "-o", out, "--", env.prog("leaker"), "1", "1"],
                     timeout=60)
    eq(cp.returncode, 0, "run -fq (stderr %r)" % cp.stderr)
    eq(cp.stderr, b"", "run -q prints nothing")


if __name__ == "__main__":
    sys.exit(main(globals()))
