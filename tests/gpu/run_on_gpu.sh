#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run_on_gpu.sh - the GPU checks that need a real NVIDIA GPU (docs/GPU_INTERNALS.md §11),
# for a machine with the driver, nvcc and (optionally) PyTorch. Not part of
# the test suite: tests/gpu/test_gpu.py covers everything a fake driver can.
#
#   sh tests/gpu/run_on_gpu.sh [BUILD_DIR]      (default: build)
#
# 1. Builds tests/gpu/progs/gpu_raw.cu with nvcc's default, static runtime
#    (no libcudart NEEDED: the runtime reaches the driver only through
#    dlopen + cuGetProcAddress_v2) and runs it under `tracker run`.
#    Expected on device 0 (`tracker stats --json`, "gpu"."0"):
#      allocations 3, frees 2              (64 MiB + 16 MiB cudaMalloc, 8 MiB
#                                           cudaMallocAsync; pinned host memory
#                                           is not device memory)
#      bytes_allocated 92274688 (88 MiB), peak_bytes 92274688 (all live at once)
#      leaked_bytes 16777216 (16 MiB), leaked_allocations 1, failed 0
#      by_kind device      {allocations 2, bytes 80 MiB, peak 80 MiB, leaked 16 MiB}
#      by_kind async       {allocations 1, bytes 8 MiB,  peak 8 MiB,  leaked 0}
#      by_kind pinned_host {allocations 1, bytes 1 MiB,  peak 1 MiB,  leaked 0}
#      driver_peak_bytes > peak_bytes      (NVML: the CUDA context, hundreds of MiB)
#    and `tracker leaks --json --gpu`: one 16 MiB device leak whose stack has
#    keep_buffer and main. Each cudaMalloc must appear once (driver level
#    only): a doubled count means runtime and driver were both counted.
# 2. If python3 can import torch with CUDA: torch.empty(100 MiB) and three
#    4 MiB tensors on device 0, freed, then torch.cuda.empty_cache().
#    Expected without --cuda-no-caching (PyTorch's caching allocator asks
#    the driver for segments, docs/GPU_INTERNALS.md §8 item 1): 2 allocations, 100 MiB + 20 MiB
#    (one 20 MiB segment holds the three 4 MiB tensors), both freed by
#    empty_cache: leaked 0, peak 120 MiB.
#    Expected with --cuda-no-caching (PYTORCH_NO_CUDA_MEMORY_CACHING=1, one
#    cudaMalloc per tensor): 4 allocations, 100 MiB + 3 x 4 MiB = 112 MiB,
#    leaked 0, peak 112 MiB.
#
# Prints "expected ... actual ..." lines, and a final "run_on_gpu: N checks,
# N failed". Exit status 0 only when every check passed.
set -u
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
TRACKER=$BUILD/tracker
WORK=$(mktemp -d /tmp/trk-gpu.XXXXXX)
echo "run_on_gpu: build $BUILD, work directory $WORK"

if [ ! -x "$TRACKER" ]; then
    echo "== building the tracker into $BUILD"
    { [ -d "$BUILD" ] || meson setup "$BUILD"; } && ninja -C "$BUILD" || exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc

# check.py CAPTURE LABEL EXPECTATION...: compares `tracker stats --json`'s
# gpu figures with "path=value" (exact) or "path>path2" expectations.
cat >"$WORK/check.py" <<'EOF'
import json, subprocess, sys
tracker, cap, label = sys.argv[1:4]
st = json.loads(subprocess.run([tracker, "stats", "--json", cap], check=True,
                               stdout=subprocess.PIPE).stdout)
def get(path):
    v = st
    for k in path.split("."):
        v = v.get(k, {}) if isinstance(v, dict) else {}
    return v if v != {} else 0
bad = 0
for e in sys.argv[4:]:
    if ">" in e:
        a, b = e.split(">")
        ok = get(a) > get(b)
        print("  %-4s %s: expected %s > %s, actual %s vs %s" % ("ok" if ok else "FAIL", label,
              a, b, get(a), get(b)))
    else:
        a, want = e.split("=")
        ok = get(a) == int(want)
        print("  %-4s %s: %s expected %s, actual %s" % ("ok" if ok else "FAIL", label, a, want,
              get(a)))
    bad += not ok
print("CHECKS %d %d" % (len(sys.argv) - 4, bad))
EOF
checks=0 failed=0
# tally FILE: prints check output, adding its "CHECKS n bad" lines to the
# counters. It reads a file, never a pipe: a pipe into tally runs it in a
# subshell, whose counters were lost (the script said "0 checks, 0 failed"
# after 29 checks).
tally() {
    while IFS= read -r line; do
        case $line in
        "CHECKS "*) set -- $line; checks=$((checks + $2)); failed=$((failed + $3)) ;;
        *) echo "$line" ;;
        esac
    done <"$1"
}
OUT=$WORK/checks.out
MiB=1048576

echo "== 1. raw CUDA program, static runtime"
if ! "$NVCC" -O1 -g -Xcompiler -fno-omit-frame-pointer -o "$WORK/gpu_raw" tests/gpu/progs/gpu_raw.cu; then
    echo "  FAIL nvcc could not build gpu_raw.cu"; failed=$((failed + 1)); checks=$((checks + 1))
else
    echo "  expected: no libcudart in NEEDED (static runtime); actual NEEDED:"
    readelf -d "$WORK/gpu_raw" | sed -n 's/.*NEEDED.*\[\(.*\)\]/    \1/p'
    "$TRACKER" run -o "$WORK/raw.bin" -f -- "$WORK/gpu_raw"
    python3 "$WORK/check.py" "$TRACKER" "$WORK/raw.bin" raw \
        gpu.0.allocations=3 gpu.0.frees=2 gpu.0.bytes_allocated=$((88 * MiB)) \
        gpu.0.peak_bytes=$((88 * MiB)) gpu.0.leaked_bytes=$((16 * MiB)) \
        gpu.0.leaked_allocations=1 gpu.0.failed_allocations=0 \
        gpu.0.by_kind.device.allocations=2 gpu.0.by_kind.device.bytes=$((80 * MiB)) \
        gpu.0.by_kind.device.peak_bytes=$((80 * MiB)) \
        gpu.0.by_kind.device.leaked_bytes=$((16 * MiB)) \
        gpu.0.by_kind.async.allocations=1 gpu.0.by_kind.async.bytes=$((8 * MiB)) \
        gpu.0.by_kind.async.leaked_bytes=0 \
        gpu.0.by_kind.pinned_host.allocations=1 gpu.0.by_kind.pinned_host.bytes=$((1 * MiB)) \
        gpu.0.by_kind.pinned_host.leaked_bytes=0 \
        "gpu.0.driver_peak_bytes>gpu.0.peak_bytes" >"$OUT"
    tally "$OUT"
    echo "  expected: one 16 MiB device leak with keep_buffer and main in its stack; actual:"
    "$TRACKER" leaks --json --gpu "$WORK/raw.bin" | python3 -c '
import json, sys
leaks = json.load(sys.stdin)
for e in leaks:
    print("    %d bytes, %s, device %s: %s" % (e["bytes"], e["kind"], e["device"],
          " < ".join(f.get("function") or "?" for f in e["stack"][:6])))
ok = any(e["bytes"] == 16 << 20 and e["kind"] == "device" and
         {"keep_buffer", "main"} <= {f.get("function") for f in e["stack"]} for e in leaks)
print("  %-4s raw: the 16 MiB leak and its stack" % ("ok" if ok else "FAIL"))
print("CHECKS 1 %d" % (not ok))' >"$OUT"
    tally "$OUT"
fi

echo "== 2. PyTorch"
cat >"$WORK/torch_alloc.py" <<'EOF'
import torch

def big_tensor():
    return torch.empty(100 * 2**20, dtype=torch.uint8, device="cuda:0")

def small_tensors():
    return [torch.empty(4 * 2**20, dtype=torch.uint8, device="cuda:0") for _ in range(3)]

t = big_tensor()
s = small_tensors()
torch.cuda.synchronize()
print("memory_reserved=%d" % torch.cuda.memory_reserved())
del t, s
torch.cuda.synchronize()
torch.cuda.empty_cache()
EOF
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    "$TRACKER" run -o "$WORK/torch.bin" -f -- python3 "$WORK/torch_alloc.py"
    python3 "$WORK/check.py" "$TRACKER" "$WORK/torch.bin" "torch caching" \
        gpu.0.allocations=2 gpu.0.bytes_allocated=$((120 * MiB)) \
        gpu.0.peak_bytes=$((120 * MiB)) gpu.0.leaked_bytes=0 \
        "gpu.0.driver_peak_bytes>gpu.0.peak_bytes" >"$OUT"
    tally "$OUT"
    "$TRACKER" run --cuda-no-caching -o "$WORK/torch_nc.bin" -f -- python3 "$WORK/torch_alloc.py"
    python3 "$WORK/check.py" "$TRACKER" "$WORK/torch_nc.bin" "torch --cuda-no-caching" \
        gpu.0.allocations=4 gpu.0.bytes_allocated=$((112 * MiB)) \
        gpu.0.peak_bytes=$((112 * MiB)) gpu.0.leaked_bytes=0 >"$OUT"
    tally "$OUT"
    echo "  where the device memory was allocated (--cuda-no-caching, top 5):"
    "$TRACKER" summary --gpu -n 5 "$WORK/torch_nc.bin" | tee "$WORK/torch_nc.txt"
    # No advice to use the option the capture was made with; no location in
    # the CUDA runtime (its frames are hidden like malloc's).
    python3 - "$WORK/torch_nc.txt" >"$OUT" <<'EOF'
import sys
text = open(sys.argv[1]).read()
bad = 0
for ok, what in (("caching allocator holds segments" not in text, "no caching note"),
                 ("libcudart" not in text and "cudaMalloc" not in text,
                  "no location in the CUDA runtime")):
    print("  %-4s torch --cuda-no-caching summary: %s" % ("ok" if ok else "FAIL", what))
    bad += not ok
print("CHECKS 2 %d" % bad)
EOF
    tally "$OUT"
else
    echo "  skipped: python3 cannot import torch with CUDA"
fi

echo "run_on_gpu: $checks checks, $failed failed (captures kept in $WORK)"
[ "$failed" -eq 0 ]
