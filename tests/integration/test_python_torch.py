#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_python_torch.py - a real workload (issue 5): python/torch_train.py
imports torch and runs a few SGD steps of a tiny model on the CPU under
`tracker run`. `tracker imports` shows torch's import tree (torch with
children, megabytes of allocations); `summary --json` has the training
loop's lines (the model call, the loss, backward, the optimizer step) and
the forward() line among the allocation sites (`tree --allocated`: what each
line allocated, callees included). Prints an excerpt of the
reports. Skips where /usr/bin/python3 cannot import torch (Debian:
python3-torch)."""

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq_all, ge, main  # noqa: E402
from pyutil import (SYS_PY, can_import, fixture, marker, need_python, pyrun,  # noqa: E402
                    report, text)

STEPS = 5
ACT = 512 * 256 * 4  # fc1's output, float32: bytes


def line_totals(tree, function, line, file):
    """(allocations, bytes) under the Python frame FUNCTION at LINE of FILE
    in an --allocated call tree: its outermost nodes added up."""
    count = nbytes = 0
    todo = list(tree["children"])
    while todo:
        n = todo.pop()
        if n["function"] == function and n["line"] == line and n["file"] == file:
            count += n["total_count"]
            nbytes += n["total_bytes"]
        else:
            todo.extend(n["children"])
    return count, nbytes


def test_torch_training(env):
    need_python()
    if not can_import(SYS_PY, "torch"):
        raise Skip("%s cannot import torch (Debian: python3-torch)" % SYS_PY)
    f = fixture("torch_train.py")
    _, out, v = pyrun(env, ["--python", SYS_PY, f], timeout=540,
                      extra_env={"OMP_NUM_THREADS": "1"})
    check("loss" in v, "the script ran")

    imp = report(env, "imports", [out], timeout=300)
    torch = [n for n in imp["imports"] if n["module"] == "torch"]
    check(len(torch) == 1, "one top-level torch import (top level: %s)"
          % [n["module"] for n in imp["imports"]][:40])
    torch = torch[0]
    kids = [c["module"] for c in torch["children"]]
    check(any(k.startswith("torch.") for k in kids), "torch's children: %s" % kids[:20])
    ge(torch["cumulative_allocated_bytes"], 4 << 20, "torch's cumulative allocated bytes")
    ge(torch["cumulative_live_bytes"], 1 << 20, "torch's cumulative live bytes")

    # Every allocation of the run by call path: what each line of the
    # training loop allocated, its callees included.
    tree = report(env, "tree", ["--allocated", "--threshold", "0", "-n", "0", out], timeout=300)
    checks = []
    got = {}
    for fn, m, n, least in (("train", "torch_data", 1, 512 * 64 * 4),
                            ("train", "torch_model_call", STEPS, STEPS * 2 * ACT),
                            ("train", "torch_loss", STEPS, STEPS * 4),
                            ("train", "torch_backward", STEPS, STEPS * ACT),
                            ("TinyNet.forward", "torch_forward", 2 * STEPS, 2 * STEPS * ACT)):
        line = marker(f, m)
        count, nbytes = line_totals(tree, fn, line, f)
        got[m] = (count, nbytes)
        checks += [(count >= n, True, "%s line %d (%s): %d allocations, expected at least %d"
                    % (fn, line, m, count, n)),
                   (nbytes >= least, True, "%s line %d (%s): %d bytes, expected at least %d"
                    % (fn, line, m, nbytes, least))]
    eq_all(checks)
    # The summary (live at the peak) names the script's lines too.
    s = report(env, "summary", ["-n", "0", out], timeout=300)
    lines = {r["line"] for r in s["locations"] if r["file"] == f}
    check(marker(f, "torch_model_call") in lines or marker(f, "torch_loss") in lines
          or marker(f, "torch_backward") in lines,
          "training-loop lines among the summary's locations: %s" % sorted(lines))

    check_pprof_main(env, out)

    # The excerpt for the record.
    t = text(env, "imports", [out], timeout=300).splitlines()
    print("---- tracker imports (first lines) ----")
    print("\n".join(t[:25]))
    print("---- tracker summary --json: the training script's locations ----")
    print("peak_heap_bytes %d" % s["peak_heap_bytes"])
    for r in s["locations"]:
        if r["file"] == f:
            print("%-16s line %3d  total at the peak %10d  own %10d"
                  % (r["function"], r["line"], r["total_bytes"], r["own_bytes"]))
    print("---- tree --allocated: allocations under each training-loop line ----")
    for m, (count, nbytes) in got.items():
        print("%-16s line %3d  %6d allocations  %12d bytes" % (m, marker(f, m), count, nbytes))


def check_pprof_main(env, out):
    """pprof's main binary (mapping[0], "File:" in `go tool pprof`) is the
    traced interpreter, not libstdc++ or libtorch, Python first and with
    --native, where libstdc++'s own frames (std::string, exceptions' pool)
    and libtorch's are in the stacks; and no function is <unknown>."""
    go = shutil.which("go")
    if not go:
        print("skip pprof: go not installed (Debian: golang-go)")
        return
    home = env.tmpdir("gohome")
    genv = {"HOME": home, "GOCACHE": os.path.join(home, "cache"), "PPROF_BINARY_PATH": home}
    exe = os.path.basename(os.path.realpath(SYS_PY))  # the header names the resolved file
    for extra in ([], ["--native"]):
        path = os.path.join(env.tmpdir("pp"), "t.pb.gz")
        cp = env.run_raw([env.tracker, "export", "--format", "pprof", "--allocated"] + extra +
                         [out, "-o", path], timeout=300)
        eq_all([(cp.returncode, 0, "export pprof %s: %s" % (extra, cp.stderr.decode()[-500:]))])
        top = env.run_raw([go, "tool", "pprof", "-top", "-nodecount=100000", path], env=genv,
                          timeout=300).stdout.decode(errors="replace")
        check(re.search(r"^File: %s$" % re.escape(exe), top, re.M),
              "%s: main binary is %s:\n%s" % (extra, exe, top[:800]))
        check("<unknown>" not in top, "%s: <unknown> in -top:\n%s" % (extra, top[:3000]))
        if extra:
            raw = env.run_raw([go, "tool", "pprof", "-raw", path], env=genv,
                              timeout=300).stdout.decode(errors="replace")
            maps = raw[raw.find("Mappings"):]
            check(re.search(r"libstdc\+\+\.so", maps) and re.search(r"libtorch", maps),
                  "--native: libstdc++ and libtorch frames are in the profile:\n" + maps[:2000])


if __name__ == "__main__":
    sys.exit(main(globals()))
