#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_unwind.py - the own unwinder (src/capture/unwind*.c, issue 12) gives
exactly libunwind's frames. TRACKER_UNWIND_CHECK=1 walks every stack with
both and counts the ones that differ in the capture's trailer (`tracker stats
--json`: unwind_checked, unwind_mismatches, unwind_fallbacks); these tests
expect zero mismatches on hard stacks (progs/unwind_cases.c with and without
frame pointers, progs/unwind_exc.cpp) and on real programs (python3, g++,
git, perl), and the same reports with the own unwinder as with libunwind."""

import glob
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, ge, main, unwind_clean  # noqa: E402

CHECK = {"TRACKER_UNWIND_CHECK": "1"}


def all_stats(env, out):
    """stats of every capture of a run (children write <stem>.<pid>.bin)."""
    stem = out[:-len(".bin")]
    paths = [out] + sorted(glob.glob(stem + ".*.bin"))
    return [env.stats(p, allow_truncated=True) for p in paths if os.path.exists(p)]


def cases(env, prog, mode, n, *rest):
    _, out, v = env.run([env.prog(prog), mode, str(n)] + list(rest), env=CHECK, timeout=240)
    eq(v.get("done"), 1, "%s %s finished" % (prog, mode))
    return all_stats(env, out), v


def test_chain_fp_and_nofp(env):
    """Frames of many sizes, alloca (rbp-based CFA even without frame
    pointers), recursion: every stack compared, none differs."""
    for prog in ("unwind_cases", "unwind_cases_nofp"):
        st, _ = cases(env, prog, "chain", 3000)
        unwind_clean(st, 3000, prog + " chain")


def test_stats_shows_the_check(env):
    """`tracker stats` says how many stacks were compared and how many
    differed; without the variable it says nothing about it."""
    _, out, _ = env.run([env.prog("unwind_cases"), "chain", "100"],
                        env={"TRACKER_UNWIND_CHECK": "10"})
    st = env.stats(out)
    cp = env.run_raw([env.tracker, "stats", out])
    line = [ln for ln in cp.stdout.decode().splitlines() if ln.startswith("Unwinder check")]
    eq(line, ["Unwinder check         %d stacks compared with libunwind, 0 differ"
              % st["unwind_checked"]], "stats line")
    ge(st["unwind_checked"], 10, "1 in 10 of 100+ stacks compared")
    _, out, _ = env.run([env.prog("unwind_cases"), "chain", "100"])
    cp = env.run_raw([env.tracker, "stats", out])
    check("Unwinder check" not in cp.stdout.decode(), "no check line without the variable")


def test_signal_handler_on_altstack(env):
    """A SIGALRM handler on a sigaltstack allocating: the signal frame is
    libunwind's to walk (a fallback), and the result is libunwind's."""
    for prog in ("unwind_cases", "unwind_cases_nofp"):
        st, v = cases(env, prog, "altstack", 300)
        ge(v["handled"], 300, "signals handled")
        _, fallbacks = unwind_clean(st, v["main_iters"], prog + " altstack")
        ge(fallbacks, 1, prog + ": signal frames left to libunwind")


def test_longjmp(env):
    for prog in ("unwind_cases", "unwind_cases_nofp"):
        st, _ = cases(env, prog, "longjmp", 2000)
        unwind_clean(st, 4000, prog + " longjmp")


def test_dlopen_dlclose_churn(env):
    """Two libraries of one layout and other frame sizes, loaded in turn,
    mostly at the same address: a rule cached for one would be wrong for
    the other (the epoch bump on unload prevents it)."""
    for prog in ("unwind_cases", "unwind_cases_nofp"):
        st, v = cases(env, prog, "dlchurn", 100, env.progdir)
        unwind_clean(st, 100 * 20, prog + " dlchurn")
        print("  %s: the library came back at the same address %d times of 99"
              % (prog, v["same_address"]))


def test_jit_and_code_without_unwind_info(env):
    """Code in an anonymous mapping, with unwind info registered through
    __register_frame and without: libunwind walks those stacks (it never
    reads libgcc's registry), and the own unwinder leaves them to it."""
    for prog in ("unwind_cases", "unwind_cases_nofp"):
        for mode in ("jit", "nounwind"):
            st, v = cases(env, prog, mode, 500)
            eq(v["jit_calls"], 500, "calls into the generated code")
            # a walk left to libunwind has nothing to compare: not counted
            _, fallbacks = unwind_clean(st, 0, "%s %s" % (prog, mode))
            ge(fallbacks, 500, "%s %s: walks left to libunwind" % (prog, mode))


def test_exception_in_flight(env):
    """Allocations in __cxa_allocate_exception, in destructors run by the
    unwinder during a throw, and in the catch block."""
    for prog in ("unwind_exc", "unwind_exc_nofp"):
        _, out, v = env.run([env.prog(prog), "400"], env=CHECK, timeout=240)
        eq(v["caught"], 400, "exceptions caught")
        unwind_clean(all_stats(env, out), 400 * 3, prog)


# The other integration programs, with the check on every stack: threads,
# signal handlers interrupting hooks, thread churn, C++ operator forms, deep
# recursion (more frames than the default depth), a fork child.
PROGRAMS = [
    ("threads", ["4", "2000", "64"]),
    ("sigalloc", ["2000", "50"]),
    ("signested", ["20000", "200"]),
    ("sigslow", ["200", "200", "30"]),
    ("thread_churn", ["200"]),
    ("handoff", ["2", "2000", "10"]),
    ("stacks_chain", ["100", "64", "1"]),
    ("stacks_recurse", ["300", "32"]),
    ("allocators", ["3"]),
    ("realloc_chain", ["200", "16", "8"]),
    ("fork_inherit", ["50"]),
    ("cxx_forms", ["20"]),
]


def test_integration_programs(env):
    for name, args in PROGRAMS:
        try:
            prog = env.prog(name)
        except Skip:
            print("  %s: not built, left out" % name)
            continue
        _, out, _ = env.run([prog] + args, env=CHECK, timeout=300)
        checked, _ = unwind_clean(all_stats(env, out), 1, name)
        print("  %s: %d stacks compared" % (name, checked))


def folded(env, out, extra=()):
    cp = env.run_raw([env.tracker, "export", "--format", "folded", "--allocated", "-o", "-"]
                     + list(extra) + [out])
    eq(cp.returncode, 0, "export status: %s" % cp.stderr.decode(errors="replace"))
    return sorted(cp.stdout.decode().splitlines())


def test_same_report_as_libunwind(env):
    """The folded stacks of a deterministic program are the same, line for
    line, with the own unwinder (default) and with TRACKER_UNWIND=0."""
    for prog, args in (("unwind_cases_nofp", ["chain", "500"]),
                       ("unwind_cases", ["longjmp", "300"]), ("unwind_exc_nofp", ["100"])):
        path = env.prog(prog)
        _, own, _ = env.run([path] + args)
        _, ref, _ = env.run([path] + args, env={"TRACKER_UNWIND": "0"})
        a, b = folded(env, own), folded(env, ref)
        check(len(a) > 0, prog + ": no stacks")
        eq(a, b, prog + ": folded stacks, own unwinder vs libunwind")


def test_callers_told_apart_above_the_same_start(env):
    """Walks that start from the same frame at the same stack address and
    differ only one frame up, two frames up, past a 40-frame recursion (so
    past one memo entry of 24 frames), or that meet the last walk's frames
    again midway and part once more above: each allocation is under its
    own caller, exactly as often as the program called it, and every stack
    equals libunwind's."""
    n = 600
    for prog in ("unwind_cases", "unwind_cases_nofp"):
        st, v = cases(env, prog, "callers", n)
        eq(v.get("callers"), n, prog + ": callers ran")
        unwind_clean(st, 4 * n, prog + " callers")
        _, out, _ = env.run([env.prog(prog), "callers", str(n)])
        counts = {}
        for line in folded(env, out):
            stack, value = line.rsplit(" ", 1)
            frames = stack.split(";")
            if "c_leaf" not in frames:
                continue
            size = int(value)
            key = [f for f in frames if f.startswith(("c_via_", "c_up_", "c_top_", "s_from_"))]
            counts.setdefault((tuple(key), "c_mid" in frames, frames.count("c_deep")), 0)
            counts[(tuple(key), "c_mid" in frames, frames.count("c_deep"))] += size
        want = {
            (("c_via_a",), False, 0): 101 * (n // 2), (("c_via_b",), False, 0): 102 * (n // 2),
            (("c_up_a",), True, 0): 201 * (n - n // 3 - (n % 3 > 0)),
            (("c_up_b",), True, 0): 202 * (n // 3 + (n % 3 > 0)),
            (("c_top_a",), False, 41): 301 * (n - n // 5 - (n % 5 > 0)),
            (("c_top_b",), False, 41): 302 * (n // 5 + (n % 5 > 0)),
            # s_from_a on odd i, s_from_b on even; +1000 where i & 2 is 0
            (("s_from_a",), False, 0): sum(401 + (0 if i & 2 else 1000) for i in range(1, n, 2)),
            (("s_from_b",), False, 0): sum(402 + (0 if i & 2 else 1000) for i in range(0, n, 2)),
        }
        eq(counts, want, prog + ": bytes allocated under each caller")


def test_depth_bounds_the_walk(env):
    """--depth N: the same N innermost frames libunwind gives (the check
    compares the counts too), and the same report."""
    prog = env.prog("unwind_cases_nofp")
    for depth in (1, 2, 5):
        opt = ["--depth", str(depth)]
        _, out, _ = env.run([prog, "chain", "500"], env=CHECK, extra=opt)
        unwind_clean(all_stats(env, out), 500, "depth %d" % depth)
        _, ref, _ = env.run([prog, "chain", "500"], env={"TRACKER_UNWIND": "0"}, extra=opt)
        got = folded(env, out)
        eq(got, folded(env, ref), "depth %d: folded stacks vs libunwind" % depth)
        if depth == 1:  # one address each: main's printf buffer, leafalloc's malloc
            eq([line.rsplit(" ", 1)[0] for line in got], ["_IO_file_doallocate", "leafalloc"],
               "depth 1: the innermost frames")


def real(env, argv, label, min_checked, cwd_files=None, timeout=300):
    d = env.tmpdir(label)
    for name, text in (cwd_files or {}).items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    out = os.path.join(d, "cap.bin")
    argv = [env.tracker, "run", "-o", out, "-f", "--"] + argv
    e = dict(CHECK)
    cp = env.run_raw(["sh", "-c", 'cd "$0" && exec "$@"', d] + argv, env=e, timeout=timeout)
    eq(cp.returncode, 0, "%s exit status (stderr: %s)"
       % (label, cp.stderr.decode(errors="replace")[-2000:]))
    checked, _ = unwind_clean(all_stats(env, out), min_checked, label)
    print("  %s: %d stacks compared" % (label, checked))


PY_SCRIPT = r'''
import json, re, sqlite3, collections
db = sqlite3.connect(":memory:")
db.execute("create table t (k integer primary key, v text)")
db.executemany("insert into t (v) values (?)", [("row %d" % i,) for i in range(3000)])
rows = db.execute("select v from t where k % 7 = 0").fetchall()
doc = json.dumps({"rows": rows, "n": [i * i for i in range(2000)]})
back = json.loads(doc)
words = collections.Counter(re.findall(r"\w+", doc))
print(len(back["rows"]), len(words))
'''

CXX_SOURCE = r'''
#include <map>
#include <string>
#include <vector>
#include <iostream>
template <typename T> struct Box { std::vector<T> items; };
int main() {
    std::map<std::string, Box<int>> m;
    for (int i = 0; i < 10; i++) m[std::to_string(i)].items.push_back(i);
    std::cout << m.size() << "\n";
}
'''


def test_real_python(env):
    for py in ("python3", "/usr/bin/python3"):
        exe = shutil.which(py)
        if not exe:
            continue
        real(env, [exe, "script.py"], "python", 1000, {"script.py": PY_SCRIPT})


def test_real_gxx(env):
    gxx = shutil.which("g++")
    if not gxx:
        raise Skip("g++ not installed")
    real(env, [gxx, "-O1", "-c", "prog.cpp", "-o", "prog.o"], "g++", 10000,
         {"prog.cpp": CXX_SOURCE}, timeout=500)


def test_real_git(env):
    git = shutil.which("git")
    if not git:
        raise Skip("git not installed")
    script = ("git init -q r && cd r && git config user.email t@e && git config user.name t && "
              "for i in 1 2 3; do echo $i > f$i && git add f$i && git commit -qm c$i; done && "
              "git log --stat > /dev/null && git gc -q")
    real(env, ["sh", "-c", script], "git", 1000)


def test_real_perl(env):
    perl = shutil.which("perl")
    if not perl:
        raise Skip("perl not installed")
    real(env, [perl, "-e", 'my %h; $h{$_ x 3} = [split //, $_ x 5] for 1..20000; '
                           'print scalar(keys %h), "\\n"'], "perl", 1000)


if __name__ == "__main__":
    sys.exit(main(globals()))
