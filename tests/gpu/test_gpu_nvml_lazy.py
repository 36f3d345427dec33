# SPDX-License-Identifier: MIT
"""test_gpu_nvml_lazy.py - NVML (the driver's figure of this process's GPU
memory) is loaded at the program's first GPU allocation, not as soon as the
CUDA driver is in the process (issue 12: `import torch` loads libcuda but
allocates nothing on the GPU; loading and initialising NVML there was memory
and time a plain run never spends).

gpu_nvml_lazy (linked with the fake libcuda.so.1) and gpu_nvml_lazy_dl (the
driver loaded with dlopen) print nvml=1 when libnvidia-ml.so.1 is mapped into
them after 300 ms; nothing but the tracker loads it. The fake NVML is on
LD_LIBRARY_PATH in every run, so only the tracker's choice decides.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

import harness  # noqa: E402
from harness import check, eq, eq_all  # noqa: E402

from test_gpu import dump, gpu_stats, recs, traced  # noqa: E402


def run(env, prog, scenario):
    out, v = traced(env, [env.prog(prog), scenario], libs=("cuda", "nvml"))
    eq(v.get("done"), 1, "%s %s ran" % (prog, scenario))
    return out, v


def test_untraced_never_loads_nvml(env):
    """Without the tracker no scenario maps NVML (so a 1 below is ours)."""
    libs = ":".join(os.path.join(env.progdir, "fake", n) for n in ("cuda", "nvml"))
    got = []
    for prog, scenario in (("gpu_nvml_lazy", "none"), ("gpu_nvml_lazy", "alloc"),
                           ("gpu_nvml_lazy_dl", "dlopen"), ("gpu_nvml_lazy_dl", "dlopen_alloc")):
        cp = env.run_raw([env.prog(prog), scenario], env={"LD_LIBRARY_PATH": libs})
        eq(cp.returncode, 0, "%s %s exit status" % (prog, scenario))
        got.append((harness.kv(cp.stdout).get("nvml"), 0, "%s %s untraced nvml" % (prog, scenario)))
    eq_all(got)


def test_linked_driver_without_allocation(env):
    """Linked with the driver, cuInit and a device count, no allocation: NVML
    never loaded, no driver figure in the capture."""
    out, v = run(env, "gpu_nvml_lazy", "none")
    eq(v.get("nvml"), 0, "NVML mapped in a program that never allocated on the GPU")
    eq(recs(dump(env, out), "meminfo"), [], "meminfo records")


def test_dlopened_driver_without_allocation(env):
    """The driver dlopen'ed and initialised, no allocation: NVML never loaded."""
    out, v = run(env, "gpu_nvml_lazy_dl", "dlopen")
    eq(v.get("nvml"), 0, "NVML mapped after dlopen of the driver alone")
    eq(recs(dump(env, out), "meminfo"), [], "meminfo records")


def test_linked_driver_allocation_starts_nvml(env):
    """A 1 MiB cuMemAlloc_v2 (freed at once) loads NVML, and the sampler
    then records the driver's figure: the fake context's 32 MiB."""
    out, v = run(env, "gpu_nvml_lazy", "alloc")
    eq(v.get("nvml"), 1, "NVML mapped after the first device allocation")
    info = recs(dump(env, out), "meminfo")
    check(info, "no GPU_MEMINFO record after the first allocation")
    eq({r["device"] for r in info}, {0}, "driver figure's device")
    eq(info[-1]["used"], 32 << 20, "driver figure after the free: the context alone")
    eq(gpu_stats(env, out)["gpu"]["0"]["allocations"], 1, "device 0 allocations")


def test_dlsym_allocation_starts_nvml(env):
    """The same through dlsym on a dlopen'ed driver (our wrapper)."""
    out, v = run(env, "gpu_nvml_lazy_dl", "dlopen_alloc")
    eq(v.get("nvml"), 1, "NVML mapped after the first device allocation (dlsym)")
    check(recs(dump(env, out), "meminfo"), "no GPU_MEMINFO record after the first allocation")


if __name__ == "__main__":
    sys.exit(harness.main(globals()))
