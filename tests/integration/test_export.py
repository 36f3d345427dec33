#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_export.py - `tracker export` in every format, with exact values for
a program whose stacks are known (progs/stacks_export.c), each output
checked the way the real consumer reads it:

- folded: the exact "a;b;c BYTES" lines per selection, --inverted, --mmap;
- speedscope: valid against the schema the speedscope npm package ships
  (validated with ajv, both installed with npm into the build directory at
  test time; that test skips without npm or the registry) and weights;
- chrome-trace: Trace Event JSON as Perfetto's importer reads it, with the
  heap counter at the peak equal to `tracker stats`' peak;
- pprof: `go tool pprof` (Debian's golang-go) must read it and report the
  exact objects and bytes per function (skips without `go`);
- --all over a forked child, stdout output, JSON escaping of odd command
  names, and the one-line errors (exit 2) for outputs that cannot be
  written.

Stacks above main (libc's start-up frames) vary by libc, so stacks are
compared from "main" inwards; libc's own start-up allocations appear as
other stacks and are ignored, but never under main.
"""

import gzip
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, check, eq, eq_all, main  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BETA, GAMMA, DELTA, ZETA = 7 * 1000, 4321, 5 * 333, 2222

_cache = {}


def capture(env, fork=False):
    """Records stacks_export once per mode; returns (capture path, values)."""
    key = "fork" if fork else "plain"
    if key not in _cache:
        prog = env.prog("stacks_export")
        out = os.path.join(env.tmpdir("cap-" + key), "se.bin")
        _, out, values = env.run([prog] + (["fork"] if fork else []), out=out)
        _cache[key] = (out, values)
    return _cache[key]


def export(env, fmt, cap, *opts, out=None, expect_rc=0):
    """`tracker export --format FMT OPTS CAP -o OUT`; returns the output path
    (or the CompletedProcess when a failure is expected)."""
    if out is None:
        out = os.path.join(env.tmpdir("exp"), "out")
    argv = [env.tracker, "export", "--format", fmt] + list(opts) + [cap, "-o", out]
    cp = env.run_raw(argv, timeout=120)
    if cp.returncode != expect_rc:
        raise AssertionError("%s\n  exit status %d, expected %d\n  stderr: %s"
                             % (" ".join(argv), cp.returncode, expect_rc,
                                cp.stderr.decode(errors="replace").strip()))
    return out if expect_rc == 0 else cp


def from_main(frames):
    """The frames from main inwards ("main;alpha;beta"), or None when main is
    not on the stack."""
    if "main" not in frames:
        return None
    return ";".join(frames[frames.index("main"):])


def folded(path):
    """{stack from main: bytes}, checking the syntax of every line."""
    got = {}
    with open(path, "rb") as f:
        data = f.read()
    for line in data.decode("utf-8", errors="strict").split("\n")[:-1]:
        m = re.fullmatch(r"(.+) (\d+)", line)
        check(m is not None, "malformed folded line %r" % line)
        frames = m.group(1).split(";")
        check(all(frames), "empty frame in %r" % line)
        key = from_main(frames)
        if key is not None:
            got[key] = got.get(key, 0) + int(m.group(2))
    check(data.endswith(b"\n") or not data, "folded output does not end with a newline")
    return got


# ---- folded ------------------------------------------------------------------


def test_folded_selections(env):
    cap, v = capture(env)
    page = v["page_size"]
    want = {
        "--peak": {"main;alpha;beta": BETA, "main;gamma": GAMMA},
        "--leaks": {"main;gamma": GAMMA},
        "--allocated": {"main;alpha;beta": BETA, "main;gamma": GAMMA, "main;delta": DELTA},
        "--temporary": {"main;delta": DELTA},
    }
    items = []
    for sel, exp in want.items():
        items.append((folded(export(env, "folded", cap, sel)), exp, "folded %s" % sel))
    # Anonymous mappings only with --mmap (epsilon never unmaps its pages).
    items.append((folded(export(env, "folded", cap, "--leaks", "--mmap")),
                  {"main;gamma": GAMMA, "main;epsilon": 16 * page}, "folded --leaks --mmap"))
    # The default selection is the peak.
    items.append((folded(export(env, "folded", cap)), want["--peak"], "folded (default)"))
    eq_all(items)


def test_folded_inverted(env):
    cap, _ = capture(env)
    got = {}
    with open(export(env, "folded", cap, "--inverted")) as f:
        for line in f:
            stack, _, value = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if frames[0] in ("beta", "gamma"):
                key = ";".join(frames[:frames.index("main") + 1])
                got[key] = got.get(key, 0) + int(value)
    eq(got, {"beta;alpha;main": BETA, "gamma;main": GAMMA}, "inverted folded stacks")


def test_stdout_and_default_output(env):
    cap, _ = capture(env)
    cp = env.run_raw([env.tracker, "export", "--format", "folded", cap, "-o", "-"])
    eq(cp.returncode, 0, "exit status of -o -")
    path = os.path.join(env.tmpdir("stdout"), "out.folded")
    with open(path, "wb") as f:
        f.write(cp.stdout)
    eq(folded(path), {"main;alpha;beta": BETA, "main;gamma": GAMMA}, "folded on stdout")
    # Without -o the output lands beside the capture: se.bin -> se.folded.
    d = env.tmpdir("default")
    local = os.path.join(d, "se.bin")
    shutil.copy(cap, local)
    cp = env.run_raw([env.tracker, "export", "--format", "folded", local])
    eq(cp.returncode, 0, "exit status without -o")
    check(os.path.exists(os.path.join(d, "se.folded")), "se.folded was not written")


# ---- speedscope ----------------------------------------------------------------


def speedscope_stacks(doc):
    frames = [f["name"] for f in doc["shared"]["frames"]]
    got = {}
    for p in doc["profiles"]:
        for s, w in zip(p["samples"], p["weights"]):
            key = from_main([frames[i] for i in s])
            if key is not None:
                got[key] = got.get(key, 0) + w
    return got


def test_speedscope_values(env):
    cap, _ = capture(env)
    with open(export(env, "speedscope", cap), "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    p = doc["profiles"][0]
    eq_all([
        (doc["$schema"], "https://www.speedscope.app/file-format-schema.json", "$schema"),
        (p["type"], "sampled", "profile type"),
        (p["unit"], "bytes", "unit"),
        (p["startValue"], 0, "startValue"),
        (p["endValue"], sum(p["weights"]), "endValue = sum of weights"),
        (len(p["samples"]), len(p["weights"]), "one weight per sample"),
        (doc["activeProfileIndex"], 0, "activeProfileIndex"),
        (doc["exporter"].startswith("tracker "), True, "exporter"),
        (speedscope_stacks(doc), {"main;alpha;beta": BETA, "main;gamma": GAMMA},
         "speedscope stacks at the peak"),
    ])
    # One frame per function: speedscope merges stacks by frame index.
    names = [f["name"] for f in doc["shared"]["frames"]]
    eq([names.count(n) for n in ("main", "alpha", "beta", "gamma")], [1, 1, 1, 1],
       "frames per function")
    beta = [f for f in doc["shared"]["frames"] if f["name"] == "beta"]
    check(beta[0].get("file", "").endswith("stacks_export.c"),
          "beta's frame has no source file: %r" % beta[0])


def npm_validator(env):
    """node_modules with ajv and speedscope, installed once into the build
    directory; skips without node/npm or when the registry is unreachable."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise Skip("node/npm not installed")
    prefix = os.path.join(env.progdir, "export-npm")
    nm = os.path.join(prefix, "node_modules")
    if not (os.path.isdir(os.path.join(nm, "ajv")) and os.path.isfile(
            os.path.join(nm, "speedscope", "dist", "release", "file-format-schema.json"))):
        os.makedirs(prefix, exist_ok=True)
        # Bounded: a registry that does not answer is a skip, not a hang.
        argv = [npm, "install", "--prefix", prefix, "--no-audit", "--no-fund",
                "--loglevel=error", "--fetch-timeout=20000", "--fetch-retries=1",
                "ajv@8", "speedscope@1"]
        try:
            cp = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                timeout=60)
        except subprocess.TimeoutExpired:
            raise Skip("npm install ajv speedscope timed out (registry unreachable?)")
        if cp.returncode != 0:
            raise Skip("npm install ajv speedscope failed: %s"
                       % cp.stderr.decode(errors="replace").strip()[-300:])
    return node, nm


def test_speedscope_schema(env):
    node, nm = npm_validator(env)
    cap, _ = capture(env)
    fcap, _ = capture(env, fork=True)
    files = [export(env, "speedscope", cap, sel) for sel in
             ("--peak", "--leaks", "--allocated", "--temporary")]
    files.append(export(env, "speedscope", cap, "--inverted", "--mmap"))
    files.append(export(env, "speedscope", fcap, "--all", "--leaks"))
    cp = env.run_raw([node, os.path.join(HERE, "export", "validate_speedscope.js"), nm] + files)
    check(cp.returncode == 0, "speedscope schema validation failed:\n%s%s"
          % (cp.stdout.decode(errors="replace"), cp.stderr.decode(errors="replace")))


# ---- chrome trace ------------------------------------------------------------------


def load_trace(path):
    with open(path, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    check(isinstance(doc.get("traceEvents"), list), "no traceEvents array")
    eq(doc.get("displayTimeUnit"), "ns", "displayTimeUnit")
    for ev in doc["traceEvents"]:
        for k in ("ph", "pid", "tid", "name"):
            check(k in ev, "event without %s: %r" % (k, ev))
        check(isinstance(ev["pid"], int) and isinstance(ev["tid"], int), "pid/tid: %r" % ev)
        if ev["ph"] != "M":
            check(isinstance(ev.get("ts"), (int, float)), "event without a numeric ts: %r" % ev)
        if ev["ph"] == "C":
            check(ev["args"] and all(isinstance(x, int) for x in ev["args"].values()),
                  "counter args must be numbers: %r" % ev)
    return doc


def test_chrome_trace_counters(env):
    cap, v = capture(env)
    st = env.stats(cap)
    doc = load_trace(export(env, "chrome-trace", cap))
    evs = doc["traceEvents"]
    pid = v["pid"]
    proc = doc["metadata"]["processes"][0]
    peak_ts = proc["heap_peak_ts"]
    heap = [e for e in evs if e["ph"] == "C" and e["name"] == "heap"]
    mmap = [e for e in evs if e["ph"] == "C" and e["name"] == "anon mmap"]
    at_peak = [e["args"]["bytes"] for e in heap if e["ts"] == peak_ts]
    names = [e for e in evs if e["ph"] == "M" and e["name"] == "process_name"]
    sites = [e for e in evs if e["ph"] == "i"]
    eq_all([
        (proc["pid"], pid, "metadata pid"),
        (proc["heap_peak_bytes"], st["peak_heap_bytes"], "metadata heap_peak_bytes"),
        (at_peak, [st["peak_heap_bytes"]], "heap counter at the peak timestamp"),
        (max(e["args"]["bytes"] for e in heap), st["peak_heap_bytes"], "highest heap counter"),
        (max(e["args"]["bytes"] for e in mmap), st["mmap_peak_bytes"], "highest anon mmap"),
        (st["mmap_peak_bytes"] >= 16 * v["page_size"], True, "mmap peak covers epsilon"),
        (all(e["pid"] == pid for e in heap + mmap), True, "counters carry the pid"),
        ([e["args"]["name"] for e in names][:1] != [], True, "process_name metadata"),
        (len(sites), 1, "one instant event with the selection's sites"),
        (sorted(heap, key=lambda e: e["ts"]) == heap, True, "heap counters in time order"),
    ])
    top = {}
    for s in sites[0]["args"]["sites"]:
        key = from_main(s["stack"].split(";"))
        if key:
            top[key] = top.get(key, 0) + s["bytes"]
    eq(top, {"main;alpha;beta": BETA, "main;gamma": GAMMA}, "sites at the peak")
    eq(sites[0]["ts"], peak_ts, "sites event at the peak")


# ---- pprof -------------------------------------------------------------------------


def go_pprof(env, *args):
    go = shutil.which("go")
    if not go:
        raise Skip("go not installed (Debian: golang-go)")
    home = env.tmpdir("gohome")
    # pprof must not look anything up: symbols are in the profile.
    cp = env.run_raw([go, "tool", "pprof"] + list(args), timeout=120,
                     env={"HOME": home, "GOCACHE": os.path.join(home, "cache"),
                          "PPROF_BINARY_PATH": home})
    if cp.returncode != 0:
        raise AssertionError("go tool pprof %s failed:\n%s" % (" ".join(args),
                                                              cp.stderr.decode(errors="replace")))
    return cp.stdout.decode(errors="replace"), cp.stderr.decode(errors="replace")


def pprof_top(env, path, index):
    """{function: flat value} from `go tool pprof -top`, values in the
    sample's own unit (-unit=B: bytes, exact)."""
    out, err = go_pprof(env, "-top", "-nodecount=1000", "-sample_index=" + index,
                        "-unit=B" if index.endswith("space") else "-unit=count", path)
    check("rror" not in err, "pprof complained: %s" % err)
    got = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+)(B?)\s+[\d.]+%\s+[\d.]+%\s+(\d+)B?\s+[\d.]+%\s+(.+?)\s*$", line)
        if m:
            got[m.group(4)] = int(m.group(1))
    return got, out


def ours(top):
    return {k: v for k, v in top.items() if k in ("alpha", "beta", "gamma", "delta",
                                                   "epsilon", "main") and v}


def test_pprof_go_tool(env):
    cap, v = capture(env)
    peak = export(env, "pprof", cap)
    with open(peak, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", "pprof output is not gzip")
    gzip.open(peak).read()  # a complete gzip stream
    items = []
    space, text = pprof_top(env, peak, "inuse_space")
    items.append((ours(space), {"beta": BETA, "gamma": GAMMA}, "peak inuse_space"))
    objs, _ = pprof_top(env, peak, "inuse_objects")
    items.append((ours(objs), {"beta": 7, "gamma": 1}, "peak inuse_objects"))
    leaks = export(env, "pprof", cap, "--leaks", "--mmap")
    items.append((ours(pprof_top(env, leaks, "inuse_space")[0]),
                  {"gamma": GAMMA, "epsilon": 16 * v["page_size"]}, "leaks inuse_space"))
    alloc = export(env, "pprof", cap, "--allocated")
    items.append((ours(pprof_top(env, alloc, "alloc_space")[0]),
                  {"beta": BETA, "gamma": GAMMA, "delta": DELTA}, "allocated alloc_space"))
    items.append((ours(pprof_top(env, alloc, "alloc_objects")[0]),
                  {"beta": 7, "gamma": 1, "delta": 5}, "allocated alloc_objects"))
    temp = export(env, "pprof", cap, "--temporary")
    items.append((ours(pprof_top(env, temp, "temp_space")[0]), {"delta": DELTA},
                  "temporary temp_space"))
    eq_all(items)
    # Cumulative values follow the call chain: alpha holds beta's bytes.
    out, _ = go_pprof(env, "-traces", peak)
    check(re.search(r"beta\n\s+alpha\n\s+main", out) is not None,
          "no beta <- alpha <- main trace in:\n%s" % out)
    # The default view, as a user runs it, reads the profile without
    # complaint (no symbolization attempts, no unknown fields).
    out, err = go_pprof(env, "-top", peak)
    check("beta" in out and "rror" not in err and "arning" not in err,
          "plain go tool pprof -top:\n%s\n%s" % (out, err))
    print(text)


def test_pprof_inline_frames(env):
    """Inlined calls are Lines of one Location, innermost first: pprof marks
    them "(inline)" and keeps their order (progs/stacks_inline.c, -O2)."""
    prog = env.prog("stacks_inline")
    _, cap, _ = env.run([prog, "1000"])
    path = export(env, "pprof", cap, "--allocated")
    out, _ = go_pprof(env, "-traces", path)
    check(re.search(r"1001B\s+inl_leaf \(inline\)\n\s+inl_mid \(inline\)\n\s+outer\n\s+main",
                    out) is not None, "no inlined chain in:\n%s" % out)
    raw, _ = go_pprof(env, "-raw", path)
    check(re.search(r"\d+: 0x[0-9a-f]+ M=\d+ inl_leaf \S+:\d+ s=0\n\s+inl_mid \S+:\d+ s=0\n"
                    r"\s+outer ", raw) is not None, "no three-line location in:\n%s" % raw)


# ---- capture sets, escaping, errors ------------------------------------------------


def test_all_processes(env):
    cap, v = capture(env, fork=True)
    child = v["child_pid"]
    lines = {}
    with open(export(env, "folded", cap, "--all", "--leaks")) as f:
        for line in f:
            stack, _, value = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            key = from_main(frames)
            if key:
                root = frames[0].split(":")[0]
                lines[(root, key)] = lines.get((root, key), 0) + int(value)
    eq(lines, {("pid %d" % v["pid"], "main;gamma"): GAMMA,
               ("pid %d" % child, "main;zeta"): ZETA}, "--all folded roots")
    doc = load_trace(export(env, "chrome-trace", cap, "--all"))
    pids = sorted({e["pid"] for e in doc["traceEvents"] if e["name"] == "process_name"})
    eq(pids, sorted([v["pid"], child]), "chrome-trace processes")
    if shutil.which("go"):
        space, _ = pprof_top(env, export(env, "pprof", cap, "--all", "--leaks"), "inuse_space")
        eq({k: space.get(k) for k in ("gamma", "zeta")}, {"gamma": GAMMA, "zeta": ZETA},
           "--all pprof leaks")
        check(any(k.startswith("pid %d:" % child) for k in space),
              "no process root for the child in pprof")


def test_json_escaping(env):
    """A command name with a quote, a backslash, a control character and a
    byte that is not UTF-8 still gives valid JSON."""
    d = env.tmpdir("odd")
    link = os.path.join(d.encode(), b'we"ird\\\x01\xffname')
    os.symlink(env.prog("stacks_export").encode(), link)
    out = os.path.join(d, "odd.bin")
    cp = env.run_raw([env.tracker.encode(), b"run", b"-q", b"-o", out.encode(), b"-f", b"--",
                      link])
    eq(cp.returncode, 0, "exit status of the odd-named run")
    for fmt in ("speedscope", "chrome-trace"):
        path = export(env, fmt, out)
        with open(path, "rb") as f:
            raw = f.read()
        doc = json.loads(raw.decode("utf-8"))  # strict UTF-8 and JSON
        name = doc["name"] if fmt == "speedscope" else doc["metadata"]["name"]
        check('we"ird\\\x01\ufffdname' in name, "%s name decoded as %r" % (fmt, name))


def test_output_errors(env):
    cap, _ = capture(env)
    d = env.tmpdir("err")
    cases = [
        ("missing directory", ["--format", "folded", cap, "-o", os.path.join(d, "no", "x")]),
        ("a directory", ["--format", "pprof", cap, "-o", d]),
        ("unknown format", ["--format", "svg", cap, "-o", os.path.join(d, "x")]),
        ("no format", [cap, "-o", os.path.join(d, "x")]),
        ("--inverted with pprof", ["--format", "pprof", "--inverted", cap, "-o",
                                   os.path.join(d, "x")]),
    ]
    for what, args in cases:
        cp = env.run_raw([env.tracker, "export"] + args)
        err = cp.stderr.decode(errors="replace")
        eq(cp.returncode, 2, "exit status for %s" % what)
        eq(len(err.strip().splitlines()), 1, "stderr lines for %s (%r)" % (what, err))
        check(err.startswith("tracker: "), "message for %s: %r" % (what, err))
    eq(os.listdir(d), [], "files left behind by failed exports")
    # The capture itself is never the output.
    size = os.path.getsize(cap)
    cp = env.run_raw([env.tracker, "export", "--format", "folded", cap, "-o", cap])
    eq((cp.returncode, os.path.getsize(cap)), (2, size), "exporting over the capture")
    cp = env.run_raw([env.tracker, "export", "--format", "folded", os.path.join(d, "none.bin")])
    eq(cp.returncode, 1, "exit status for a missing capture")
    # /dev/full: every write fails; the error is one line and exit 2.
    if os.path.exists("/dev/full"):
        cp = env.run_raw([env.tracker, "export", "--format", "speedscope", cap, "-o",
                          "/dev/full"])
        eq(cp.returncode, 2, "exit status writing to /dev/full")
        eq(len(cp.stderr.decode().strip().splitlines()), 1, "stderr lines for /dev/full")


if __name__ == "__main__":
    sys.exit(main(globals()))
