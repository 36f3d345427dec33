# SPDX-License-Identifier: MIT
"""test_gpu.py - GPU memory tracking without a GPU (docs/GPU_INTERNALS.md §10).

Runs the programs of tests/gpu/progs under `tracker run` with the test doubles
(fake libcuda.so.1, libcudart.so.12/.13, libamdhip64.so.6, libnvidia-ml.so.1)
on LD_LIBRARY_PATH, and checks two layers:

  * the records the hooks wrote (gpu_dump: api, kind, device, address, size,
    stream, result, the GPU_ENTER/EXIT scopes and the host events inside
    them), exactly;
  * the reports: `tracker stats --json`'s "gpu" object (per device:
    allocations, frees, bytes_allocated, peak_bytes, leaked_bytes,
    leaked_allocations, failed_allocations, driver_peak_bytes, by_kind) and
    `tracker leaks --json --gpu` (the allocating function in the stack).

Every figure below follows from the program's comment; nothing here comes
from running the tracker. Same conventions as tests/integration (harness.py).
"""

import json
import subprocess
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

import harness  # noqa: E402
from harness import check, eq, eq_all, ge, le  # noqa: E402

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

# format.h: enum trk_gpu_kind and the api codes used below.
DEVICE, MANAGED, PINNED, ASYNC, VMM, IMPORTED, ARRAY, VA_RESERVE, HOST_REGISTER = range(1, 10)
API = {
    "cuMemAlloc": 1, "cuMemAllocPitch": 2, "cuMemAllocManaged": 3, "cuMemHostAlloc": 4,
    "cuMemAllocHost": 5, "cuMemFree": 6, "cuMemFreeHost": 7, "cuMemHostRegister": 8,
    "cuMemHostUnregister": 9, "cuMemAllocAsync": 10, "cuMemAllocFromPoolAsync": 11,
    "cuMemFreeAsync": 12, "cuMemCreate": 13, "cuMemRelease": 14, "cuMemMap": 15,
    "cuMemUnmap": 16, "cuMemAddressReserve": 17, "cuMemAddressFree": 18,
    "cuIpcOpenMemHandle": 19, "cuIpcCloseMemHandle": 20, "cuMemImportFromShareable": 21,
    "cuArrayCreate": 22, "cuArray3DCreate": 23, "cuArrayDestroy": 24,
    "cuMemPoolImportPointer": 25, "hipMalloc": 64, "hipFree": 65, "hipMallocManaged": 66,
    "hipHostMalloc": 67, "hipHostFree": 68, "hipMallocAsync": 69, "hipFreeAsync": 70,
    "hipMemCreate": 72, "hipMemRelease": 73, "hipMemMap": 74, "hipMemUnmap": 75,
    "hipMemAddressReserve": 76, "hipMemAddressFree": 77, "hipMallocPitch": 78,
    "hipExtMallocWithFlags": 79, "hipHostRegister": 80, "hipHostUnregister": 81,
}


# ---- running --------------------------------------------------------------------

def fake(env, name):
    return os.path.join(env.progdir, "fake", name)


def traced(env, argv, libs=("cuda",), extra_env=None, out=None, expect_rc=0, extra=()):
    """Runs argv under the tracker with the named fakes on LD_LIBRARY_PATH;
    returns (capture path, key=values)."""
    e = {"LD_LIBRARY_PATH": ":".join(fake(env, lib) for lib in libs)}
    e.update(extra_env or {})
    _, out, values = env.run(argv, out=out, env=e, expect_rc=expect_rc, extra=extra)
    return out, values


def dump(env, path):
    """gpu_dump's JSON of a capture."""
    cp = env.run_raw([env.prog("gpu_dump"), path])
    if cp.returncode != 0:
        raise AssertionError("gpu_dump %s: %s" % (path, cp.stderr.decode(errors="replace")))
    d = json.loads(cp.stdout.decode())
    eq_all([(d["scopes"]["enter"], d["scopes"]["exit"], "GPU_ENTER vs GPU_EXIT"),
            (d["scopes"]["unbalanced"], 0, "unbalanced GPU scopes"),
            (d["broken_streams"], 0, "broken streams")])
    return d


def recs(d, rec=None, api=None):
    return [r for r in d["gpu"] if (rec is None or r["rec"] == rec)
            and (api is None or r["api"] == API[api])]


def gpu_stats(env, path):
    st = env.stats(path)
    check("gpu" in st, "%s: stats JSON has no gpu object" % path)
    eq(st["lost_events"], 0, "lost events")
    return st


def device(st, dev, allocations, frees, bytes_allocated, peak, leaked, leaked_allocations,
           by_kind, failed=0, what=""):
    """Checks one device's figures exactly; by_kind maps kind name ->
    (allocations, bytes, peak_bytes, leaked_bytes), and no other kind may
    hold memory."""
    g = st["gpu"].get(str(dev))
    check(g is not None, "%s: no gpu entry for device %s (have %s)" % (what, dev,
                                                                     sorted(st["gpu"])))
    items = [(g["allocations"], allocations, "dev %s allocations" % dev),
             (g["frees"], frees, "dev %s frees" % dev),
             (g["bytes_allocated"], bytes_allocated, "dev %s bytes_allocated" % dev),
             (g["peak_bytes"], peak, "dev %s peak_bytes" % dev),
             (g["leaked_bytes"], leaked, "dev %s leaked_bytes" % dev),
             (g["leaked_allocations"], leaked_allocations, "dev %s leaked_allocations" % dev),
             (g["failed_allocations"], failed, "dev %s failed_allocations" % dev)]
    bk = g.get("by_kind", {})
    for name, (a, b, p, lk) in by_kind.items():
        k = bk.get(name, {})
        items += [(k.get("allocations"), a, "dev %s %s allocations" % (dev, name)),
                  (k.get("bytes"), b, "dev %s %s bytes" % (dev, name)),
                  (k.get("peak_bytes"), p, "dev %s %s peak_bytes" % (dev, name)),
                  (k.get("leaked_bytes"), lk, "dev %s %s leaked_bytes" % (dev, name))]
    for name, k in bk.items():
        if name not in by_kind:
            items.append((k.get("bytes", 0), 0, "dev %s unexpected kind %s bytes" % (dev, name)))
    eq_all(items)
    return g


def devices(st, want):
    eq(sorted(st["gpu"]), sorted(str(d) for d in want), "devices with GPU events")


def leaks(env, path, extra=()):
    cp = env.run_raw([env.tracker, "leaks", "--json", "--gpu"] + list(extra) + [path])
    if cp.returncode != 0:
        raise AssertionError("tracker leaks: %s" % cp.stderr.decode(errors="replace"))
    return json.loads(cp.stdout.decode())


def frames(entry):
    return [f.get("function") for f in entry["stack"]]


def has_leak(env, path, size, kind, dev, functions):
    """`tracker leaks --json --gpu` lists a block of this size and kind on
    dev whose stack names every function in functions."""
    found = [e for e in leaks(env, path) if e["bytes"] == size and e["kind"] == kind
             and e["device"] == dev]
    check(found, "%s: no %s leak of %d bytes on device %d in %s"
          % (path, kind, size, dev, [(e["bytes"], e["kind"], e["device"])
                                     for e in leaks(env, path)]))
    for fn in functions:
        check(any(fn in frames(e) for e in found),
              "%s: leak of %d bytes: %s not in stack %s" % (path, size, fn, frames(found[0])))


def in_frames(r, fn):
    check(fn in r["frames"], "%s not in the stack of %s %d bytes: %s"
          % (fn, r["rec"], r["size"], r["frames"]))


# ---- driver API through the PLT -----------------------------------------------------

def test_driver_basic(env):
    out, v = traced(env, [env.prog("gpu_driver"), "basic"])
    eq(v.get("pitch"), 1024, "pitch")
    d = dump(env, out)
    allocs = recs(d, "alloc")
    eq([(r["api"], r["kind"], r["device"], r["size"]) for r in allocs],
       [(API["cuMemAlloc"], DEVICE, 0, 1 * MiB), (API["cuMemAlloc"], DEVICE, 0, 3 * MiB),
        (API["cuMemAllocPitch"], DEVICE, 0, 10240),
        (API["cuMemAllocManaged"], MANAGED, 0, 2 * MiB)], "allocation records")
    frees = recs(d, "free")
    eq([(r["api"], r["kind"], r["addr"]) for r in frees],
       [(API["cuMemFree"], 0, allocs[0]["addr"]), (API["cuMemFree"], 0, allocs[2]["addr"])],
       "free records (kind left to the reader)")
    for r, fn in zip(allocs, ["alloc_device", "alloc_device", "alloc_pitched", "alloc_managed"]):
        in_frames(r, fn)
        eq(r["frames"][0], fn, "innermost frame (the tracker's own are dropped)")
    # The fake driver mallocs 48 bytes of bookkeeping per block and frees it
    # with the block: host events inside GPU calls, tagged.
    eq([(h["rec"], h["size"]) for h in d["driver_host"]],
       [("alloc", 48)] * 4 + [("free", 0)] * 2, "host events inside GPU calls")
    st = gpu_stats(env, out)
    devices(st, [0])
    device(st, 0, 4, 2, 6 * MiB + 10240, 6 * MiB + 10240, 5 * MiB, 2,
           {"device": (3, 4 * MiB + 10240, 4 * MiB + 10240, 3 * MiB),
            "managed": (1, 2 * MiB, 2 * MiB, 2 * MiB)}, what="basic")
    eq(st["gpu"]["0"]["driver_peak_bytes"], 0, "no NVML, no driver figure")
    dh = st["gpu_driver_host"]
    eq_all([(dh["allocations"], 4, "driver host allocations"),
            (dh["bytes_allocated"], 192, "driver host bytes"),
            (dh["leaked_bytes"], 96, "driver host leaked bytes")])
    has_leak(env, out, 3 * MiB, "device", 0, ["alloc_device", "scenario_basic", "main"])
    has_leak(env, out, 2 * MiB, "managed", 0, ["alloc_managed"])


def test_driver_pinned_host(env):
    out, v = traced(env, [env.prog("gpu_driver"), "host"])
    eq(v.get("nested_calls"), 1, "the fake reached cuMemHostAlloc through the global scope")
    d = dump(env, out)
    allocs = recs(d, "alloc")
    # One event for cuMemAllocHost_v2 although it called the hooked
    # cuMemHostAlloc inside: nested GPU calls are not events.
    eq([(r["api"], r["kind"], r["size"]) for r in allocs],
       [(API["cuMemHostAlloc"], PINNED, 1 * MiB), (API["cuMemAllocHost"], PINNED, 64 * KiB),
        (API["cuMemHostRegister"], HOST_REGISTER, 256 * KiB)], "allocation records")
    in_frames(allocs[0], "alloc_pinned")
    in_frames(allocs[1], "alloc_pinned_legacy")
    eq([(r["api"], r["kind"]) for r in recs(d, "free")],
       [(API["cuMemFreeHost"], PINNED), (API["cuMemFreeHost"], PINNED),
        (API["cuMemHostUnregister"], HOST_REGISTER)], "free records")
    # The driver's own mappings of the pinned memory are tagged host events.
    eq([(h["rec"], h["size"]) for h in d["driver_host"]],
       [("mmap", 1 * MiB), ("mmap", 64 * KiB), ("munmap", 1 * MiB), ("munmap", 64 * KiB)],
       "driver host mappings")
    st = gpu_stats(env, out)
    devices(st, [0])
    # Pinned host memory is not device memory; registrations are never memory.
    device(st, 0, 0, 0, 0, 0, 0, 0,
           {"pinned_host": (2, 1 * MiB + 64 * KiB, 1 * MiB + 64 * KiB, 0)}, what="host")
    eq(st["gpu_driver_host"]["mmap_peak_bytes"], 1 * MiB + 64 * KiB, "driver mmap peak")


def test_driver_async_pools(env):
    out, v = traced(env, [env.prog("gpu_driver"), "async"])
    eq(v.get("ptsz_calls"), 3, "calls that reached the driver's _ptsz variants")
    d = dump(env, out)
    eq([(r["api"], r["kind"], r["size"], r["stream"]) for r in recs(d, "alloc")],
       [(API["cuMemAllocAsync"], ASYNC, 4 * MiB, 0x1234),
        (API["cuMemAllocAsync"], ASYNC, 2 * MiB, 0x5678),
        (API["cuMemAllocFromPoolAsync"], ASYNC, 1 * MiB, 0x1234),
        (API["cuMemAllocFromPoolAsync"], ASYNC, 512 * KiB, 0x5678)], "async records")
    eq([r["api"] for r in recs(d, "free")], [API["cuMemFreeAsync"]] * 2, "async frees")
    st = gpu_stats(env, out)
    device(st, 0, 4, 2, 7 * MiB + 512 * KiB, 7 * MiB + 512 * KiB, 1 * MiB + 512 * KiB, 2,
           {"async": (4, 7 * MiB + 512 * KiB, 7 * MiB + 512 * KiB, 1 * MiB + 512 * KiB)},
           what="async")
    has_leak(env, out, 512 * KiB, "async", 0, ["alloc_from_pool"])


def test_driver_vmm(env):
    out, v = traced(env, [env.prog("gpu_driver"), "vmm"])
    d = dump(env, out)
    va = int(v["va"], 16)
    res = recs(d, "alloc", "cuMemAddressReserve")
    eq([(r["kind"], r["device"], r["size"], r["addr"]) for r in res],
       [(VA_RESERVE, 1, 1 * GiB, va)], "reservation record")
    creates = recs(d, "alloc", "cuMemCreate")
    eq([(r["kind"], r["device"], r["size"], r["addr"]) for r in creates],
       [(VMM, 1, 2 * MiB, v["h1"]), (VMM, 1, 4 * MiB, v["h2"])],
       "cuMemCreate: the handle is the address")
    for r in creates:
        in_frames(r, "create_physical")
    eq([(r["rec"], r["addr"], r["size"], r["handle"], r["device"]) for r in
        recs(d, "map") + recs(d, "unmap")],
       [("map", va, 2 * MiB, v["h1"], 1), ("map", va + 2 * MiB, 4 * MiB, v["h2"], 1),
        ("unmap", va, 2 * MiB, 0, 1)], "map/unmap records")
    eq([(r["api"], r["addr"]) for r in recs(d, "free")], [(API["cuMemRelease"], v["h1"])],
       "release")
    st = gpu_stats(env, out)
    devices(st, [1])
    # 1 GiB of address space is never memory; physical bytes count once, at
    # cuMemCreate, and go at cuMemRelease.
    device(st, 1, 2, 1, 6 * MiB, 6 * MiB, 4 * MiB, 1,
           {"vmm": (2, 6 * MiB, 6 * MiB, 4 * MiB)}, what="vmm")
    has_leak(env, out, 4 * MiB, "vmm", 1, ["create_physical", "scenario_vmm"])


def test_out_of_memory(env):
    out, v = traced(env, [env.prog("gpu_driver"), "oom"], extra_env={"FAKE_CUDA_OOM_ABOVE": str(GiB)})
    eq(v.get("oom_result"), 2, "CUDA_ERROR_OUT_OF_MEMORY")
    d = dump(env, out)
    fails = recs(d, "fail")
    eq([(r["api"], r["kind"], r["device"], r["size"], r["result"]) for r in fails],
       [(API["cuMemAlloc"], DEVICE, 0, 2 * GiB, 2)], "GPU_FAIL record")
    in_frames(fails[0], "try_huge_alloc")
    st = gpu_stats(env, out)
    device(st, 0, 1, 0, 1 * MiB, 1 * MiB, 1 * MiB, 1, {"device": (1, 1 * MiB, 1 * MiB, 1 * MiB)},
           failed=1, what="oom")
    # The same through the runtime's resolver path.
    out, v = traced(env, [env.prog("gpu_runtime12"), "oom"],
                    extra_env={"FAKE_CUDA_OOM_ABOVE": str(GiB)})
    eq(v.get("oom_result"), 2, "cudaErrorMemoryAllocation")
    fails = recs(dump(env, out), "fail")
    eq([(r["size"], r["result"]) for r in fails], [(2 * GiB, 2)], "runtime GPU_FAIL")
    in_frames(fails[0], "cudaMalloc")
    in_frames(fails[0], "rt_alloc_huge")
    eq(gpu_stats(env, out)["gpu"]["0"]["failed_allocations"], 1, "runtime failed allocations")


def test_imported_memory(env):
    out, v = traced(env, [env.prog("gpu_driver"), "import"])
    d = dump(env, out)
    eq([(r["api"], r["kind"], r["size"]) for r in recs(d, "alloc")],
       [(API["cuIpcOpenMemHandle"], IMPORTED, 8 * MiB),
        (API["cuMemPoolImportPointer"], IMPORTED, 4 * MiB),
        (API["cuMemImportFromShareable"], IMPORTED, 0)],
       "imported records (sizes from cuMemGetAddressRange; a shareable handle's is unknown)")
    st = gpu_stats(env, out)
    # Another process's memory: never this process's device bytes.
    device(st, 0, 0, 0, 0, 0, 0, 0, {"imported": (3, 12 * MiB, 8 * MiB, 4 * MiB)}, what="import")


def test_arrays(env):
    out, _ = traced(env, [env.prog("gpu_driver"), "array"])
    d = dump(env, out)
    allocs = recs(d, "alloc")
    eq([(r["api"], r["kind"], r["size"]) for r in allocs],
       [(API["cuArrayCreate"], ARRAY, 1 * MiB), (API["cuArray3DCreate"], ARRAY, 256 * KiB)],
       "array records")
    eq([(r["api"], r["kind"], r["addr"]) for r in recs(d, "free")],
       [(API["cuArrayDestroy"], ARRAY, allocs[0]["addr"])], "array destroy")
    st = gpu_stats(env, out)
    device(st, 0, 2, 1, 1 * MiB + 256 * KiB, 1 * MiB + 256 * KiB, 256 * KiB, 1,
           {"array": (2, 1 * MiB + 256 * KiB, 1 * MiB + 256 * KiB, 256 * KiB)}, what="array")
    has_leak(env, out, 256 * KiB, "array", 0, ["create_array3d"])


def test_devices(env):
    out, _ = traced(env, [env.prog("gpu_driver"), "device"])
    eq([(r["device"], r["size"]) for r in recs(dump(env, out), "alloc")],
       [(0, 1 * MiB), (1, 2 * MiB), (1, 4 * MiB)], "device of each allocation")
    st = gpu_stats(env, out)
    devices(st, [0, 1])
    device(st, 0, 1, 0, 1 * MiB, 1 * MiB, 1 * MiB, 1, {"device": (1, 1 * MiB, 1 * MiB, 1 * MiB)},
           what="device 0")
    device(st, 1, 2, 1, 6 * MiB, 6 * MiB, 4 * MiB, 1, {"device": (2, 6 * MiB, 6 * MiB, 4 * MiB)},
           what="device 1")


def test_stats_device_selection(env):
    """`stats --gpu` keeps only the GPU figures, `--device N` only device N."""
    out, _ = traced(env, [env.prog("gpu_driver"), "device"])
    cp = subprocess.run([env.tracker, "stats", "--json", "--device", "1", out],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    eq(cp.returncode, 0, "stats --device 1 exit status")
    st = json.loads(cp.stdout)
    eq(sorted(st["gpu"]), ["1"], "devices shown with --device 1")
    eq(st["gpu"]["1"]["peak_bytes"], 6 * MiB, "device 1 peak")
    check("peak_heap_bytes" not in st, "host figures left out of the GPU view")
    cp = subprocess.run([env.tracker, "stats", "--gpu", out], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    eq(cp.returncode, 0, "stats --gpu exit status")
    check("GPU 0" in cp.stdout and "GPU 1" in cp.stdout, "both devices in the text view")
    check("Heap (malloc family" not in cp.stdout, "no host section in the GPU view")
    cp = subprocess.run([env.tracker, "stats", "--device", "x", out], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    eq(cp.returncode, 2, "bad --device value is a usage error")


def test_no_context_device_unknown(env):
    out, _ = traced(env, [env.prog("gpu_driver"), "basic"], extra_env={"FAKE_CUDA_NO_CONTEXT": "1"})
    eq({r["device"] for r in recs(dump(env, out), "alloc")}, {-1},
       "cuCtxGetDevice failing: device unknown")


def test_threads(env):
    out, v = traced(env, [env.prog("gpu_driver"), "threads"])
    n, k = v["threads"], v["rounds"]
    d = dump(env, out)
    eq(len(recs(d, "alloc")), n * (k + 1), "allocation records")
    eq(len(recs(d, "free")), n * k, "free records")
    eq(len({r["tid"] for r in recs(d, "alloc")}), n, "threads that allocated")
    st = gpu_stats(env, out)
    g = st["gpu"]["0"]
    leaked = sum((i + 1) * 64 * KiB for i in range(n))
    eq_all([(g["allocations"], n * (k + 1), "allocations"), (g["frees"], n * k, "frees"),
            (g["bytes_allocated"], n * k * 64 * KiB + leaked, "bytes_allocated"),
            (g["leaked_bytes"], leaked, "leaked_bytes (addresses reused across threads)"),
            (g["leaked_allocations"], n, "leaked_allocations")])
    ge(g["peak_bytes"], leaked, "peak")
    le(g["peak_bytes"], leaked + n * 64 * KiB, "peak")


def test_fork_after_init(env):
    out, v = traced(env, [env.prog("gpu_driver"), "fork"])
    eq(v.get("child_status"), 0, "child exit status")
    child = os.path.join(os.path.dirname(out), "out.%d.bin" % v["child"])
    check(os.path.exists(child), "no capture of the forked child: %s" % os.listdir(
        os.path.dirname(out)))
    device(gpu_stats(env, out), 0, 1, 1, 1 * MiB, 1 * MiB, 0, 0,
           {"device": (1, 1 * MiB, 1 * MiB, 0)}, what="parent")
    device(gpu_stats(env, child), 0, 2, 1, 6 * MiB, 4 * MiB, 4 * MiB, 1,
           {"device": (2, 6 * MiB, 4 * MiB, 4 * MiB)}, what="child")
    has_leak(env, child, 4 * MiB, "device", 0, ["child_work"])


# ---- paths that bypass PLT interposition ---------------------------------------------

def test_dlsym_and_resolvers(env):
    out, v = traced(env, [env.prog("gpu_dlsym")])
    eq_all([(v.get("old_abi_calls"), 1, "the v2000 cuMemAlloc was called"),
            (v.get("ptsz_calls"), 1, "the _ptsz variant was called"),
            (v.get("via_default"), 1, "dlsym(RTLD_DEFAULT) found the hook"),
            (v.get("unknown_result"), 500, "unknown name passes through"),
            (v.get("unknown_status"), 1, "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND"),
            (v.get("unknown_null"), 1, "unknown name: NULL pointer")])
    d = dump(env, out)
    allocs = recs(d, "alloc")
    # The 12345-byte call of the old ABI is not here: passed through untouched.
    eq([(r["api"], r["kind"], r["size"], r["stream"]) for r in allocs],
       [(API["cuMemAlloc"], DEVICE, 1 * MiB, 0), (API["cuMemAlloc"], DEVICE, 2 * MiB, 0),
        (API["cuMemAllocAsync"], ASYNC, 3 * MiB, 0x42), (API["cuMemAlloc"], DEVICE, 4 * MiB, 0)],
       "records of the dlsym and resolver paths")
    in_frames(allocs[1], "alloc_via_gpa4")
    in_frames(allocs[2], "alloc_via_nested")
    in_frames(allocs[3], "alloc_via_default")
    st = gpu_stats(env, out)
    device(st, 0, 4, 2, 10 * MiB, 9 * MiB, 5 * MiB, 2,
           {"device": (3, 7 * MiB, 6 * MiB, 2 * MiB), "async": (1, 3 * MiB, 3 * MiB, 3 * MiB)},
           what="dlsym")


RUNTIMES = [("gpu_runtime12", 12080), ("gpu_runtime13", 13000), ("gpu_static_rt", 12080)]


def check_runtime_basic(env, prog, version):
    out, v = traced(env, [env.prog(prog), "basic"])
    eq(v.get("runtime_version"), version, "%s runtime version" % prog)
    d = dump(env, out)
    allocs = recs(d, "alloc")
    # One event per runtime call (driver level only), none for cudaFree(NULL).
    eq([(r["api"], r["kind"], r["size"], r["stream"]) for r in allocs],
       [(API["cuMemAlloc"], DEVICE, 1 * MiB, 0), (API["cuMemAlloc"], DEVICE, 5 * MiB, 0),
        (API["cuMemHostAlloc"], PINNED, 256 * KiB, 0),
        (API["cuMemAllocManaged"], MANAGED, 2 * MiB, 0),
        (API["cuMemAllocPitch"], DEVICE, 10240, 0),
        (API["cuMemAllocAsync"], ASYNC, 4 * MiB, 0x77),
        (API["cuMemAllocAsync"], ASYNC, 2 * MiB, 0x88)], "%s records" % prog)
    eq([r["api"] for r in recs(d, "free")],
       [API["cuMemFree"], API["cuMemFreeHost"], API["cuMemFreeAsync"]], "%s frees" % prog)
    for r in allocs[:2]:
        in_frames(r, "cudaMalloc")
        in_frames(r, "rt_alloc")
    in_frames(allocs[2], "rt_alloc_host")
    st = gpu_stats(env, out)
    devices(st, [0])
    device(st, 0, 6, 2, 14 * MiB + 10240, 14 * MiB + 10240, 11 * MiB + 10240, 4,
           {"device": (3, 6 * MiB + 10240, 6 * MiB + 10240, 5 * MiB + 10240),
            "managed": (1, 2 * MiB, 2 * MiB, 2 * MiB),
            "pinned_host": (1, 256 * KiB, 256 * KiB, 0),
            "async": (2, 6 * MiB, 6 * MiB, 4 * MiB)}, what=prog)
    # The runtime's frames are allocator frames: hidden like malloc's.
    has_leak(env, out, 5 * MiB, "device", 0, ["rt_alloc", "scenario_basic"])


def test_runtime_shared_12(env):
    check_runtime_basic(env, "gpu_runtime12", 12080)


def test_runtime_shared_13(env):
    check_runtime_basic(env, "gpu_runtime13", 13000)


def test_runtime_static(env):
    check_runtime_basic(env, "gpu_static_rt", 12080)


def test_driver_entry_points(env):
    """cudaGetDriverEntryPoint / ...ByVersion (PyTorch's VMM allocator, NCCL):
    pointers from the runtime's stored cuGetProcAddress."""
    for prog, _ in RUNTIMES:
        out, v = traced(env, [env.prog(prog), "entry"])
        d = dump(env, out)
        va = int(v["va"], 16)
        eq([(r["api"], r["kind"], r["size"]) for r in recs(d, "alloc")],
           [(API["cuMemAlloc"], DEVICE, 3 * MiB), (API["cuMemAddressReserve"], VA_RESERVE, 64 * MiB),
            (API["cuMemCreate"], VMM, 2 * MiB)], "%s entry-point records" % prog)
        in_frames(recs(d, "alloc")[0], "alloc_through_entry_point")
        eq([(r["rec"], r["addr"], r["size"]) for r in recs(d, "map") + recs(d, "unmap")],
           [("map", va, 2 * MiB), ("unmap", va, 2 * MiB)], "%s map/unmap" % prog)
        eq([r["api"] for r in recs(d, "free")],
           [API["cuMemRelease"], API["cuMemAddressFree"]], "%s releases" % prog)
        st = gpu_stats(env, out)
        devices(st, [0])
        device(st, 0, 2, 1, 5 * MiB, 5 * MiB, 3 * MiB, 1,
               {"device": (1, 3 * MiB, 3 * MiB, 3 * MiB), "vmm": (1, 2 * MiB, 2 * MiB, 0)},
               what=prog)


def test_rtld_local(env):
    """Runtime and driver users loaded RTLD_LOCAL behind dlopen: the
    runtime's driver is invisible to dlsym(RTLD_NEXT) (docs/GPU_INTERNALS.md §3 item 3)."""
    out, v = traced(env, [env.prog("gpu_local"), os.path.join(env.progdir, "libgpu_ext_rt.so"),
                          os.path.join(env.progdir, "libgpu_ext_drv.so")])
    eq(v.get("roundtrip"), 1, "round trip")
    eq(v.get("dlerror_clean"), 1, "no dlerror() left behind by the hooks")
    allocs = recs(dump(env, out), "alloc")
    eq([r["size"] for r in allocs], [7 * MiB, 1 * MiB, 6 * MiB], "sizes")
    in_frames(allocs[0], "ext_rt_alloc")
    in_frames(allocs[2], "ext_drv_alloc")
    st = gpu_stats(env, out)
    device(st, 0, 3, 1, 14 * MiB, 13 * MiB, 13 * MiB, 2,
           {"device": (3, 14 * MiB, 13 * MiB, 13 * MiB)}, what="rtld_local")
    has_leak(env, out, 6 * MiB, "device", 0, ["ext_drv_alloc"])
    has_leak(env, out, 7 * MiB, "device", 0, ["ext_rt_alloc"])


def test_real_static_cudart(env):
    """When nvcc is installed: the real CUDA runtime, linked statically (nvcc's
    default), against the fake driver. It cannot get past cuGetExportTable,
    but before that it resolves ~440 entry points, and every lookup must
    reach the driver through the tracker's wrapper (docs/GPU_INTERNALS.md
    §2 item 1, §10 item 3)."""
    import shutil
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.access(nvcc, os.X_OK):
        raise harness.Skip("nvcc not installed")
    exe = os.path.join(env.tmpdir("nvcc"), "gpu_raw")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "progs", "gpu_raw.cu")
    cp = env.run_raw([nvcc, "-O1", "-o", exe, src], timeout=240)
    if cp.returncode != 0:
        raise harness.Skip("nvcc cannot build here: %s" % cp.stderr.decode(errors="replace")[-300:])
    readelf = env.run_raw(["readelf", "-d", exe]).stdout.decode()
    check("libcudart" not in readelf, "gpu_raw links libcudart dynamically")
    cp, _, _ = env.run([exe], expect_rc=None, env={
        "LD_LIBRARY_PATH": fake(env, "cuda"), "FAKE_CUDA_REPORT": "1", "FAKE_CUDA_LOG": "1"})
    err = cp.stderr.decode(errors="replace")
    v = harness.kv(cp.stderr)
    ge(v.get("fake_cuda_lookups", 0), 400, "entry points the real runtime looked up")
    eq(v.get("fake_cuda_lookups_via_preload"), v.get("fake_cuda_lookups"),
       "lookups that went through the tracker's resolver wrapper")
    check('cuGetProcAddress("cuMemAlloc", 3020, 0)' in err, "the runtime looked up cuMemAlloc")


def test_gpu_calls_in_constructors(env):
    """A library's constructor uses the runtime, before or after ours: the
    program runs normally, a pair made before tracking started is simply not
    there, and what follows is exact. Also with the tracker last in
    LD_PRELOAD, behind a library that allocates in its constructor."""
    out, v = traced(env, [env.prog("gpu_early")])
    eq(v.get("early_ok"), 1, "constructor allocation worked")
    sizes = [r["size"] for r in recs(dump(env, out), "alloc")]
    check(sizes in ([2 * MiB], [1 * MiB, 2 * MiB]), "allocation records: %s" % sizes)
    g = gpu_stats(env, out)["gpu"]["0"]
    eq_all([(g["leaked_bytes"], 2 * MiB, "leaked"), (g["leaked_allocations"], 1, "leaked blocks")])
    early = os.path.join(env.progdir, "libgpu_early.so")
    cap = env.out_path("last")
    cp = env.run_raw([env.prog("gpu_runtime12"), "basic"],
                     env={"LD_PRELOAD": early + ":" + env.preload, "TRACKER_OUTPUT": cap,
                          "LD_LIBRARY_PATH": fake(env, "cuda")})
    eq(cp.returncode, 0, "tracker last in LD_PRELOAD: %s" % cp.stderr.decode(errors="replace"))
    g = gpu_stats(env, cap)["gpu"]["0"]
    eq(g["leaked_bytes"], 11 * MiB + 10240, "leaked bytes, tracker last in LD_PRELOAD")


# ---- HIP --------------------------------------------------------------------------------

def test_hip(env):
    out, v = traced(env, [env.prog("gpu_hip")], libs=("hip",))
    eq(v.get("pitch"), 1024, "pitch")
    d = dump(env, out)
    allocs = recs(d, "alloc")
    eq([(r["api"], r["kind"], r["device"], r["size"]) for r in allocs],
       [(API["hipMalloc"], DEVICE, 0, 1 * MiB), (API["hipMalloc"], DEVICE, 0, 3 * MiB),
        (API["hipExtMallocWithFlags"], DEVICE, 0, 1 * MiB),
        (API["hipMallocPitch"], DEVICE, 0, 10240), (API["hipMallocAsync"], ASYNC, 0, 4 * MiB),
        (API["hipHostMalloc"], PINNED, 0, 512 * KiB),
        (API["hipMemAddressReserve"], VA_RESERVE, 0, 256 * MiB),
        (API["hipMemCreate"], VMM, 0, 2 * MiB),
        (API["hipHostRegister"], HOST_REGISTER, 0, 128 * KiB),
        (API["hipMalloc"], DEVICE, 0, 6 * MiB), (API["hipMalloc"], DEVICE, 0, 7 * MiB),
        (API["hipMallocManaged"], MANAGED, 1, 2 * MiB)], "HIP records")
    in_frames(allocs[0], "hip_alloc")
    in_frames(allocs[9], "hip_alloc_procaddr")
    in_frames(allocs[10], "hip_roundtrip_dlsym")
    eq(allocs[4]["stream"], 0x99, "hipMallocAsync stream")
    eq([r["rec"] for r in recs(d, "map") + recs(d, "unmap")], ["map", "unmap"], "HIP VMM maps")
    st = gpu_stats(env, out)
    devices(st, [0, 1])
    device(st, 0, 8, 4, 24 * MiB + 10240, 17 * MiB + 10240, 10 * MiB + 10240, 4,
           {"device": (6, 18 * MiB + 10240, 17 * MiB + 10240, 10 * MiB + 10240),
            "async": (1, 4 * MiB, 4 * MiB, 0), "vmm": (1, 2 * MiB, 2 * MiB, 0),
            "pinned_host": (1, 512 * KiB, 512 * KiB, 0)}, what="hip 0")
    device(st, 1, 1, 0, 2 * MiB, 2 * MiB, 2 * MiB, 1, {"managed": (1, 2 * MiB, 2 * MiB, 2 * MiB)},
           what="hip 1")
    has_leak(env, out, 6 * MiB, "device", 0, ["hip_alloc_procaddr"])


# ---- NVML -------------------------------------------------------------------------------

def test_nvml_driver_figure(env):
    """The fake NVML lists devices in reverse CUDA order and reports this
    process's usage as the fake driver's bytes plus a 32 MiB context."""
    out, _ = traced(env, [env.prog("gpu_driver"), "sleep"], libs=("cuda", "nvml"))
    d = dump(env, out)
    info = recs(d, "meminfo")
    check(info, "no GPU_MEMINFO record")
    eq({r["device"] for r in info}, {0}, "NVML index 1 is CUDA device 0 (PCI match)")
    eq(info[0]["total"], 80 * GiB, "device total")
    eq(max(r["used"] for r in info), 64 * MiB, "highest driver figure: 32 MiB + context")
    eq(info[-1]["used"], 32 * MiB, "after the free: the context alone")
    g = gpu_stats(env, out)["gpu"]["0"]
    eq_all([(g["driver_peak_bytes"], 64 * MiB, "driver_peak_bytes"),
            (g["peak_bytes"], 32 * MiB, "tracked peak")])


def test_no_nvml_without_cuda(env):
    """NVML is present but the program never loads libcuda: no sampling,
    no GPU figures."""
    out, _ = traced(env, [env.prog("gpu_puts")], libs=("nvml",))
    eq(recs(dump(env, out), "meminfo"), [], "meminfo records")
    check(not env.stats(out).get("gpu"), "gpu figures for a program without GPU use")


# ---- coexistence and the CLI ----------------------------------------------------------

def test_other_preload_rtld_next(env):
    """Another preload's dlsym(RTLD_NEXT, "puts") still returns libc's puts,
    with libtracker.so first (tracker run) or second in LD_PRELOAD."""
    lib = os.path.join(env.progdir, "libpreload_puts.so")
    # Set by env(1) under the tracker, not for `tracker` itself (a sanitized
    # build of it must come first); the exec hook puts libtracker.so first.
    cp, _, _ = env.run(["/usr/bin/env", "LD_PRELOAD=" + lib, env.prog("gpu_puts")])
    eq(cp.stdout.decode().strip(), "[wrapped] hello", "tracker first")
    out = env.out_path("second")
    cp = env.run_raw([env.prog("gpu_puts")],
                     env={"LD_PRELOAD": lib + ":" + env.preload, "TRACKER_OUTPUT": out})
    eq((cp.returncode, cp.stdout.decode().strip()), (0, "[wrapped] hello"), "tracker second")
    check(os.path.exists(out), "no capture with the tracker second in LD_PRELOAD")


def test_untraced_programs_run(env):
    """The doubles and programs work without the tracker (so a failure above
    is the tracker's)."""
    cuda = {"LD_LIBRARY_PATH": fake(env, "cuda")}
    for argv in ([env.prog("gpu_driver"), "basic"], [env.prog("gpu_driver"), "host"],
                 [env.prog("gpu_dlsym")], [env.prog("gpu_runtime13"), "entry"],
                 [env.prog("gpu_static_rt"), "basic"]):
        cp = env.run_raw(argv, env=cuda)
        eq(cp.returncode, 0, "untraced %s: %s" % (argv, cp.stderr.decode(errors="replace")))
    cp = env.run_raw([env.prog("gpu_hip")], env={"LD_LIBRARY_PATH": fake(env, "hip")})
    eq(cp.returncode, 0, "untraced gpu_hip")
    cp = env.run_raw([env.prog("gpu_dlsym")], env=cuda)
    v = harness.kv(cp.stdout)
    eq(v.get("via_default"), 0, "untraced: nothing global defines cuMemAlloc_v2")


def test_cuda_no_caching_option(env):
    cp, _, v = env.run(["/usr/bin/env"], extra=["--cuda-no-caching"])
    eq(v.get("PYTORCH_NO_CUDA_MEMORY_CACHING"), 1, "--cuda-no-caching sets the variable")
    cp, _, v = env.run(["/usr/bin/env"], env={"PYTORCH_NO_CUDA_MEMORY_CACHING": ""})
    eq(v.get("PYTORCH_NO_CUDA_MEMORY_CACHING", ""), "", "not set without the option")


# ---- what the reports say about the runtime and PyTorch --------------------------------

def leak_stacks(env, path, size, extra=()):
    return [frames(e) for e in leaks(env, path, extra) if e["bytes"] == size
            and e["kind"] == "device"]


def test_runtime_frames_hidden(env):
    """The CUDA runtime's frames (cudaMalloc and the runtime's unnamed
    internals, through which PyTorch's autograd thread allocates: the
    location read "libcudart.so.13+0x41b5e") are allocator frames: hidden
    like malloc, so the runtime's caller is the location; the text says so,
    and --keep-allocator-frames shows them."""
    for prog in ("gpu_runtime13", "gpu_static_rt"):
        out, _ = traced(env, [env.prog(prog), "basic"])
        st = leak_stacks(env, out, 5 * MiB)
        eq(len(st), 1, "%s: one 5 MiB device leak" % prog)
        eq(st[0][0], "rt_alloc", "%s: innermost frame is the runtime's caller %s" % (prog, st[0]))
        check("cudaMalloc" not in st[0], "%s: cudaMalloc hidden: %s" % (prog, st[0]))
        kept = leak_stacks(env, out, 5 * MiB, ["--keep-allocator-frames"])
        check("cudaMalloc" in kept[0], "%s: --keep-allocator-frames keeps cudaMalloc: %s"
              % (prog, kept[0]))
        cp = env.run_raw([env.tracker, "summary", "--gpu", out])
        eq(cp.returncode, 0, "summary --gpu")
        text = cp.stdout.decode()
        top = [ln for ln in text.splitlines() if "  rt_alloc (" in ln or "cudaMalloc" in ln
               or "libcudart" in ln]
        check(top and "  rt_alloc (" in top[0],
              "%s: summary --gpu's first runtime-related row is rt_alloc: %s" % (prog, top))
        check("allocator frames" in text and "--keep-allocator-frames" in text,
              "%s: summary says allocator frames are hidden:\n%s" % (prog, text))


def test_torch_note_without_no_caching(env):
    """The note about PyTorch's caching allocator is for captures made
    without --cuda-no-caching only (a GPU run printed it for a capture made
    with it). A library named libc10_cuda.so stands for PyTorch's CUDA build."""
    d = env.tmpdir("torchnote")
    lib = os.path.join(d, "libc10_cuda.so")
    with open(os.path.join(env.progdir, "libgpu_ext_rt.so"), "rb") as src, open(lib, "wb") as dst:
        dst.write(src.read())
    argv = [env.prog("gpu_local"), lib, os.path.join(env.progdir, "libgpu_ext_drv.so")]
    libs = ("cuda", "cudart12")
    note = "PyTorch's caching allocator holds segments"
    for extra, e, want in (([], {"PYTORCH_NO_CUDA_MEMORY_CACHING": ""}, True),
                           (["--cuda-no-caching"], None, False)):
        out, _ = traced(env, argv, libs=libs, extra=extra, extra_env=e)
        for cmd in (["summary", "--gpu"], ["leaks", "--gpu"], ["tree", "--gpu"]):
            cp = env.run_raw([env.tracker] + cmd + [out])
            eq(cp.returncode, 0, "%s: %s" % (cmd, cp.stderr.decode(errors="replace")))
            eq(note in cp.stdout.decode(), want, "%s %s: the caching note" % (extra, cmd))


def test_run_on_gpu_tally(env):
    """tests/gpu/run_on_gpu.sh counts the checks it ran (it said "0 checks,
    0 failed" after 29 on an H100: its tally ran in a pipe's subshell). Run
    here with a stand-in nvcc whose "gpu_raw" is gpu_driver on the fake
    driver: whatever passes or fails, the final count must be the number of
    ok/FAIL lines printed, and the exit status must follow the failures."""
    import re
    import stat
    d = env.tmpdir("rog")
    nvcc = os.path.join(d, "nvcc")
    with open(nvcc, "w") as f:
        f.write('#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\n'
                'printf "#!/bin/sh\\nexec %s basic\\n" >"$2"\nchmod +x "$2"\n'
                % env.prog("gpu_driver"))
    os.chmod(nvcc, stat.S_IRWXU)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_on_gpu.sh")
    build = os.path.dirname(os.path.abspath(env.tracker))
    cp = env.run_raw(["sh", script, build], timeout=600,
                     env={"NVCC": nvcc, "LD_LIBRARY_PATH": fake(env, "cuda")})
    out = cp.stdout.decode(errors="replace")
    results = re.findall(r"^  (ok|FAIL) ", out, re.M)
    final = re.findall(r"^run_on_gpu: (\d+) checks, (\d+) failed", out, re.M)
    check(len(results) >= 10, "run_on_gpu.sh ran its checks:\n%s" % out[-3000:])
    eq(final and (int(final[-1][0]), int(final[-1][1])),
       (len(results), results.count("FAIL")), "run_on_gpu.sh's final count")
    eq(cp.returncode != 0, "FAIL" in results, "exit status follows the failures")


if __name__ == "__main__":
    sys.exit(harness.main(globals()))
