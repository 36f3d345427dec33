#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_sampling.py - `tracker run --sample-bytes N` (issue 12, sampling
mode): Poisson sampling per byte, as heapprofd and tcmalloc sample. Every
event is still recorded, so `stats` stays exact; a sampled allocation keeps
its whole stack and the others only their call site; reports scale the
sampled stacks by the inverse of each one's odds (1 - exp(-size/N)) and say
on every text report, JSON document and page that they are sampled, and at
what rate. TRACKER_SAMPLE_SEED makes a run's draws repeat exactly, so every
figure here is reproducible; the bounds are still the statistical ones."""

import glob
import gzip
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, eq, le, main  # noqa: E402

N_ROUNDS, BIG, SMALL, LEAK = 20000, 900, 100, 200
RATE = 8192
SEED = {"TRACKER_SAMPLE_SEED": "12345"}
PHRASE = "sampled at 8,192 bytes"


def run_sites(env, rate=None, seed=SEED, rounds=N_ROUNDS, big=BIG, small=SMALL):
    extra = ["--sample-bytes", str(rate)] if rate else []
    _, out, _ = env.run([env.prog("sample_sites"), str(rounds), str(big), str(small), str(LEAK)],
                        extra=extra, env=seed)
    return out


def report(env, argv):
    cp = env.run_raw([env.tracker] + argv + ["--no-progress"])
    eq(cp.returncode, 0, "exit status of %s (stderr: %s)"
       % (" ".join(argv), cp.stderr.decode(errors="replace")))
    return cp.stdout.decode()


def by_function(env, path, select="--allocated"):
    """{innermost function: (bytes, count)} of `tree --inverted --json`."""
    d = json.loads(report(env, ["tree", select, "--inverted", "--json", "--threshold", "0",
                                "-n", "0", path]))
    return d, {c["function"]: (c["total_bytes"], c["total_count"]) for c in d["children"]}


def test_totals_exact(env):
    """Counts, bytes, peak and leaks of a sampled capture are the exact ones
    (the same as unsampled, and as the program's own arithmetic)."""
    plain = env.stats(run_sites(env))
    sampled = env.stats(run_sites(env, RATE))
    for st in (plain, sampled):
        eq(st["allocations"], 2 * N_ROUNDS, "allocations")
        eq(st["frees"], 2 * (N_ROUNDS - LEAK), "frees")
        eq(st["bytes_allocated"], N_ROUNDS * (BIG + SMALL), "bytes allocated")
        eq(st["peak_heap_bytes"], LEAK * (BIG + SMALL), "peak")
        eq(st["leaked_bytes"], LEAK * (BIG + SMALL), "leaked bytes")
        eq(st["leaked_allocations"], 2 * LEAK, "leaked blocks")
        eq(st["unmatched_frees"], 0, "unmatched frees")
    eq(sampled.get("sample_bytes"), RATE, "stats --json names the rate")
    check("sample_bytes" not in plain, "an unsampled capture says nothing of sampling")


def test_estimates_unbiased_within_bound(env):
    """Two call sites with 90 % / 10 % of the bytes: each site's estimate is
    k * round(s/p) for k sampled allocations, and lies within five standard
    deviations of the truth, the deviation computed from k (Binomial(n, p):
    points of a Poisson process in disjoint byte ranges are independent)."""
    out = run_sites(env, RATE)
    _, sites = by_function(env, out)
    est = {}
    for fn, size in (("big_site", BIG), ("small_site", SMALL)):
        check(fn in sites, "%s in the tree: %s" % (fn, sorted(sites)))
        p = -math.expm1(-size / RATE)
        w = round(size / p)
        got, _ = sites[fn]
        eq(got % w, 0, "%s: bytes are whole sampled allocations of weight %d" % (fn, w))
        k = got // w
        check(k >= 100, "%s: enough samples for the bound (%d)" % (fn, k))
        truth = N_ROUNDS * size
        sigma = w * math.sqrt(k * (1 - p))
        le(abs(got - truth), 5 * sigma, "%s: |estimate %d - truth %d| within 5 sd (%.0f)"
           % (fn, got, truth, sigma))
        est[fn] = got
    share = est["big_site"] / (est["big_site"] + est["small_site"])
    # The share's deviation, from the two sites' (independent) ones.
    le(abs(share - 0.9), 0.05, "big_site's share of the bytes %.4f (truth 0.9)" % share)
    # Nothing is attributed to the call-site-only stacks: the sampled stacks
    # carry all of it.
    eq(sorted(sites), ["big_site", "small_site"], "only the two sites appear")


def test_seed_repeats(env):
    """The same seed gives the same draws: identical reports."""
    a = report(env, ["tree", "--allocated", "--json", run_sites(env, RATE)])
    b = report(env, ["tree", "--allocated", "--json", run_sites(env, RATE)])
    eq(a, b, "two runs with TRACKER_SAMPLE_SEED=12345")


def test_reports_say_sampled(env):
    out = run_sites(env, RATE)
    plain = run_sites(env)
    for cmd in (["summary"], ["tree"], ["leaks"], ["stats"], ["diff", plain]):
        text = report(env, cmd + [out])
        check(PHRASE in text, "%s says %r:\n%s" % (cmd[0], PHRASE, text[:600]))
    for cmd in (["summary"], ["tree"], ["leaks"], ["stats"]):
        text = report(env, cmd + [plain])
        check("sampled at" not in text, "%s of an unsampled capture: %s" % (cmd[0], text[:600]))
    for cmd in (["summary", "--json"], ["tree", "--json"], ["stats", "--json"]):
        d = json.loads(report(env, cmd + [out]))
        eq(d.get("sample_bytes"), RATE, "%s: sample_bytes" % " ".join(cmd))
        check(PHRASE in d.get("sampling", ""), "%s: the phrase" % " ".join(cmd))
    rows = json.loads(report(env, ["leaks", "--json", out]))
    check(rows, "leaks --json lists the leak")
    for r in rows:
        eq(r.get("sample_bytes"), RATE, "leaks --json row says sampled")
    rows = json.loads(report(env, ["diff", "--json", plain, out]))
    check(rows, "diff --json has rows")
    for r in rows:
        eq(r.get("sample_bytes_after"), RATE, "diff --json row: the after side is sampled")
        check("sample_bytes_before" not in r, "diff --json row: the before side is not")
    page = os.path.join(os.path.dirname(out), "page.html")
    report(env, ["flamegraph", "-f", "-o", page, out])
    with open(page, encoding="utf-8") as f:
        html = f.read()
    check('"sample_bytes":%d' % RATE in html, "the page's data carries the rate")
    check("sampled at ' + T.count(sampled) + ' bytes" in html, "the page's text says it")


def test_exports_say_sampled(env):
    """The exports that can carry a note carry the rate: speedscope in the
    profile's name, chrome-trace in its metadata, pprof as its period and a
    comment."""
    out = run_sites(env, RATE)
    d = os.path.dirname(out)
    files = {}
    for fmt, name in (("speedscope", "s.json"), ("chrome-trace", "c.json"), ("pprof", "p.pb.gz")):
        files[fmt] = os.path.join(d, name)
        report(env, ["export", "--format", fmt, out, "-o", files[fmt]])
    with open(files["speedscope"], encoding="utf-8") as f:
        sp = json.load(f)
    check("sampled at %d bytes" % RATE in sp["profiles"][0]["name"],
          "speedscope profile name: %r" % sp["profiles"][0]["name"])
    with open(files["chrome-trace"], encoding="utf-8") as f:
        ct = json.load(f)
    eq(ct["metadata"].get("sample_bytes"), RATE, "chrome-trace metadata")
    with gzip.open(files["pprof"]) as f:
        pb = f.read()
    check(b"sampled at %d bytes" % RATE in pb, "pprof comment names the rate")


def test_rate_one_same_stacks(env):
    """N = 1: every allocation of 64 bytes or more is sampled (its odds
    1 - exp(-64) are 1 in double precision) with weight 1, so the reports
    are the unsampled ones, but for the line that says how they were made."""
    sampled = run_sites(env, 1, big=640, small=64)
    plain = run_sites(env, None, big=640, small=64)
    for select in ("--allocated", "--peak", "--leaks"):
        a, _ = by_function(env, sampled, select)
        b, _ = by_function(env, plain, select)
        eq(a.pop("sample_bytes", None), 1, "sample_bytes of N = 1")
        a.pop("sampling", None)
        eq(a, b, "tree %s of N = 1 against unsampled" % select)


def test_signal_handler_allocations_exact(env):
    """Allocations a signal handler makes inside a hook are published later
    with their caller only: in a sampled capture they are counted exactly
    and stand in no stack (weighing one as a sampled allocation would
    inflate its stack by 1/p)."""
    prog = env.prog("signested")
    extra = ["--sample-bytes", "4096"]
    s, v = env.traced([prog, "100000", "200", "0"], timeout=120, extra=extra, env=SEED)
    s0, v0 = env.traced([prog, "100000", "0", "0"], timeout=120, extra=extra, env=SEED)
    eq(v0["handled"], 0, "signals without a timer")
    made = v["handler_allocs"]
    check(made > 0, "the handler allocated")
    eq(s["allocations"] - s0["allocations"], made, "allocations made by the handler")
    eq(s["frees"] - s0["frees"], made, "frees made by the handler")
    eq(s["bytes_allocated"] - s0["bytes_allocated"], 48 * made, "bytes by the handler")
    eq(s["lost_events"], 0, "lost events")
    eq(s["unmatched_frees"], 0, "unmatched frees")
    # No call-site node is ever shown as a frame (its ip has bit 62 set).
    _, sites = by_function(env, s["_path"])
    check(all(not f.startswith("0x4") for f in sites), "no tagged address as a frame: %s" % sites)
    # The handler's estimate may miss what it allocated inside hooks (not
    # sampled), but never exceeds the truth beyond chance.
    got = sites.get("on_alarm", (0, 0))[0]
    p = -math.expm1(-48 / 4096)
    w = round(48 / p)
    k = got // w
    bound = 48 * made + 5 * w * math.sqrt(max(k, 1) * (1 - p))
    le(got, bound, "on_alarm's estimate %d (truth %d, %d samples)" % (got, 48 * made, k))


def test_fork_exec_children_exact(env):
    """Forked and exec'd children inherit the setting (and the parent's
    countdown): every capture of the tree is sampled, with the same exact
    totals as an unsampled run of the same tree."""
    def tree(extra):
        _, out, v = env.run([env.prog("forker"), env.prog("leaker"), "10", "100", "20", "3000",
                             "5", "40"], extra=extra, env=SEED)
        caps = sorted(glob.glob(os.path.join(os.path.dirname(out), "*.bin")))
        eq(len(caps), 5, "captures of the tree: %s" % caps)
        return [env.stats(c, allow_truncated=True) for c in caps]

    plain = tree([])
    sampled = tree(["--sample-bytes", "1000"])
    for p, s in zip(sorted(plain, key=lambda x: x["allocations"]),
                    sorted(sampled, key=lambda x: x["allocations"])):
        eq(s.get("sample_bytes"), 1000, "every capture of the tree is sampled")
        for k in ("allocations", "frees", "bytes_allocated", "leaked_bytes", "inherited_bytes"):
            eq(s[k], p[k], "%s of a capture of the tree" % k)


def test_damaged_rate(env):
    """A header whose SAMPLE TLV names an absurd N (a damaged file that
    still passes its CRC) reads without a crash: reports print, with
    clamped estimates, and say the rate the file names."""
    from test_format import reseal_header
    out = run_sites(env, RATE, rounds=2000)
    with open(out, "rb") as f:
        data = bytearray(f.read())
    eq(struct.unpack_from("<HHI", data, 64), (7, 0, 16), "the SAMPLE TLV comes first")
    eq(struct.unpack_from("<Q", data, 72)[0], RATE, "its N")
    for n in (2 ** 64 - 1, 1):
        struct.pack_into("<Q", data, 72, n)
        bad = os.path.join(os.path.dirname(out), "bad.bin")
        with open(bad, "wb") as f:
            f.write(reseal_header(data))
        for cmd in (["summary"], ["tree", "--json"], ["leaks"], ["stats", "--json"]):
            text = report(env, cmd + [bad])
            check("sampled at" in text or '"sample_bytes": %d' % n in text,
                  "%s of N = %d says it: %s" % (cmd[0], n, text[:300]))


def test_python_sampled(env):
    """A Python process: hybrid stacks for the sampled allocations, call
    sites for the rest; the run works and its totals match the capture's
    event counts."""
    code = "x = [bytearray(1000) for _ in range(3000)]\ndel x\n"
    _, out, _ = env.run([sys.executable, "-c", code], extra=["--sample-bytes", "65536"],
                        env=SEED)
    st = env.stats(out)
    eq(st.get("sample_bytes"), 65536, "the rate")
    check(st["allocations"] >= 3000, "every bytearray recorded (%d)" % st["allocations"])
    text = report(env, ["summary", out])
    check("sampled at 65,536 bytes" in text, "summary says it")
    # The sampled bytearrays keep their Python line (~45 samples of 3 MB).
    d, _ = by_function(env, out)
    lines = [c for c in d["children"] if c.get("file") == "<string>"]
    check(lines, "a Python line of the script among the sampled stacks: %s"
          % [(c["function"], c.get("file")) for c in d["children"]][:10])


if __name__ == "__main__":
    sys.exit(main(globals()))
