#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_valgrind_oracle.py - valgrind's memcheck as an independent oracle.

Real programs (the system Python with PYTHONMALLOC=malloc, so every object
comes from malloc, and Perl) run once under valgrind and once under
`tracker run`; the heap summary valgrind prints (total allocs, frees, bytes
allocated; bytes and blocks in use at exit) must match the tracker's
allocations, frees, bytes_allocated, leaked_bytes and leaked_allocations
within 1%. Like the tracker, memcheck counts calloc, realloc and memalign as
allocations and a realloc as a free plus an allocation. Python's leak
figures are taken at the script's end, valgrind's at exit: the comparison
uses the tracker's exit_leaked_* figures. Skips (77) without valgrind."""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, main  # noqa: E402

PY_CODE = (
    "import json\n"
    "d = {str(i): [i] * (i % 7) for i in range(20000)}\n"
    "s = json.dumps(d)\n"
    "e = json.loads(s)\n"
    "words = sorted(s.split(','))\n"
    "keep = [bytearray(i % 300) for i in range(5000)]\n"
    "del d, e\n"
)
PERL_CODE = (
    "my %h; $h{$_} = [($_) x ($_ % 7)] for 1..20000;"
    "my $s = join(',', sort keys %h);"
    "my @a = map { 'x' x ($_ % 50) } 1..20000;"
    "my @b = split(/,/, $s); print STDERR '';"
)
# Same environment for both runs: fixed hashing, plain malloc.
ENV = {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
       "PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}

USAGE = re.compile(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated")
IN_USE = re.compile(r"in use at exit: ([\d,]+) bytes in ([\d,]+) blocks")


def num(s):
    return int(s.replace(",", ""))


def valgrind_summary(env, argv):
    vg = shutil.which("valgrind")
    if not vg:
        raise Skip("valgrind not installed")
    cp = env.run_raw([vg, "--tool=memcheck", "--run-libc-freeres=no", "--leak-check=no",
                      "--trace-children=no"] + argv, env=ENV, timeout=280)
    err = cp.stderr.decode(errors="replace")
    check(cp.returncode == 0, "valgrind run failed (%d): %s" % (cp.returncode, err[-2000:]))
    u, i = USAGE.search(err), IN_USE.search(err)
    check(u and i, "no HEAP SUMMARY in valgrind's output:\n%s" % err[-2000:])
    return {"allocations": num(u.group(1)), "frees": num(u.group(2)),
            "bytes_allocated": num(u.group(3)), "leaked_bytes": num(i.group(1)),
            "leaked_allocations": num(i.group(2))}


def compare(env, argv):
    if not os.access(argv[0], os.X_OK):
        raise Skip("%s not installed" % argv[0])
    want = valgrind_summary(env, argv)
    st, _ = env.traced(argv, env=ENV, timeout=280)
    bad = []
    for key, ref in want.items():
        # valgrind counts what is in use at exit; a Python capture's
        # leaked_* figures are taken at the script's end (exit_* at exit).
        got = st.get("exit_" + key, st[key])
        tol = 0.01 * max(ref, got)
        line = "%-20s valgrind %10d  tracker %10d" % (key, ref, got)
        print("    " + line)
        if abs(got - ref) > tol:
            bad.append(line)
    check(not bad, "differ by more than 1%%:\n  %s" % "\n  ".join(bad))
    check(want["allocations"] > 10000, "too few allocations to be a meaningful oracle")


def test_python(env):
    compare(env, ["/usr/bin/python3", "-c", PY_CODE])


def test_perl(env):
    compare(env, ["/usr/bin/perl", "-e", PERL_CODE])


if __name__ == "__main__":
    sys.exit(main(globals()))
