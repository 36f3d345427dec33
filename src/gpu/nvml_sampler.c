/* SPDX-License-Identifier: MIT
 *
 * nvml_sampler.c - the driver's own figure of this process's GPU memory,
 * sampled about ten times a second into GPU_MEMINFO records, so reports can
 * set what we tracked against what the driver says: the gap is the CUDA
 * context, module code and whatever no hook saw (docs/GPU_INTERNALS.md §7).
 *
 * Sampled only on the tracker's sampler thread (writer.c), with the internal
 * guard set; loaded (trk_gpu_nvml_start) on the program's thread at its
 * first recorded CUDA allocation (cuda_hooks.c): a program that never
 * allocates on the GPU never gets NVML loaded into it, even with the driver
 * loaded (`import torch` loads libcuda and allocates nothing there; NVML's
 * library and nvmlInit were memory and time a plain run never spends, and
 * its figure is all zeros until then anyway). NVML device indices are
 * not CUDA ordinals (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER), so devices
 * are matched by PCI domain/bus/device. Must not: let any NVML failure reach
 * the program (every failure just turns sampling off), allocate itself,
 * block for long, or run in a forked child (NVML state is per process).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "gpu/gpu.h"

#define PERIOD_NS   100000000ull /* 10 Hz */
#define MAX_DEVICES 64
#define MAX_PROCS   256

typedef int nvml_ret;
typedef void *nvml_device;

struct nvml_proc { /* nvmlProcessInfo_t, v2 and v3 layout */
    unsigned int pid;
    unsigned long long used; /* NVML_VALUE_NOT_AVAILABLE (~0) when hidden */
    unsigned int gpu_instance, compute_instance;
};

struct nvml_pci { /* nvmlPciInfo_t */
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};

struct nvml_memory { /* nvmlMemory_t */
    unsigned long long total, free, used;
};

static struct {
    nvml_ret (*init)(void);
    nvml_ret (*count)(unsigned int *);
    nvml_ret (*handle)(unsigned int, nvml_device *);
    nvml_ret (*pci)(nvml_device, struct nvml_pci *);
    nvml_ret (*memory)(nvml_device, struct nvml_memory *);
    nvml_ret (*procs)(nvml_device, unsigned int *, struct nvml_proc *);
} nv;

enum { S_WAITING, S_OPENING, S_RUNNING, S_OFF };
static _Atomic int state;
static uint64_t next_ns;
static pid_t owner;
static unsigned ndev;
static nvml_device devs[MAX_DEVICES];
static int ordinal[MAX_DEVICES]; /* CUDA ordinal of NVML index i, -1 none */
static int mapped;
static uint64_t last_used[MAX_DEVICES];
static int reported[MAX_DEVICES];

static void *sym(void *h, const char *name)
{
    void *(*real)(void *, const char *) = (void *(*)(void *, const char *))trk_gpu_dlsym_real_get();
    return real ? real(h, name) : NULL;
}

static int nvml_open(void)
{
    if (!trk_real.dlopen)
        return -1;
    void *h = trk_real.dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    nv.init = (nvml_ret(*)(void))sym(h, "nvmlInit_v2");
    nv.count = (nvml_ret(*)(unsigned int *))sym(h, "nvmlDeviceGetCount_v2");
    nv.handle = (nvml_ret(*)(unsigned int, nvml_device *))sym(h, "nvmlDeviceGetHandleByIndex_v2");
    nv.pci = (nvml_ret(*)(nvml_device, struct nvml_pci *))sym(h, "nvmlDeviceGetPciInfo_v3");
    nv.memory = (nvml_ret(*)(nvml_device, struct nvml_memory *))sym(h, "nvmlDeviceGetMemoryInfo");
    nv.procs = (nvml_ret(*)(nvml_device, unsigned int *, struct nvml_proc *))sym(
        h, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!nv.procs)
        nv.procs = (nvml_ret(*)(nvml_device, unsigned int *, struct nvml_proc *))sym(
            h, "nvmlDeviceGetComputeRunningProcesses_v2");
    if (!nv.init || !nv.count || !nv.handle || !nv.pci || !nv.procs || nv.init() != 0)
        return -1;
    unsigned int n = 0;
    if (nv.count(&n) != 0 || n == 0)
        return -1;
    ndev = n < MAX_DEVICES ? n : MAX_DEVICES;
    for (unsigned i = 0; i < ndev; i++) {
        ordinal[i] = -1;
        if (nv.handle(i, &devs[i]) != 0)
            devs[i] = NULL;
    }
    return 0;
}

/* Matches NVML devices to CUDA ordinals by PCI location. Needs cuInit to
 * have run in the program (cuDeviceGetCount fails before), so it is retried
 * on every sample until it succeeds. */
static int map_devices(void)
{
    int (*count)(int *) = (int (*)(int *))trk_gpu_lookup(TRK_GPU_LIB_CUDA, "cuDeviceGetCount");
    int (*get)(int *, int) = (int (*)(int *, int))trk_gpu_lookup(TRK_GPU_LIB_CUDA, "cuDeviceGet");
    int (*attr)(int *, int, int) =
        (int (*)(int *, int, int))trk_gpu_lookup(TRK_GPU_LIB_CUDA, "cuDeviceGetAttribute");
    int n = 0;
    if (!count || !get || !attr || count(&n) != 0)
        return -1;
    for (int o = 0; o < n; o++) {
        int dev = 0, bus = -1, slot = -1, domain = -1;
        /* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID 33, _PCI_DEVICE_ID 34, _PCI_DOMAIN_ID 50 */
        if (get(&dev, o) != 0 || attr(&bus, 33, dev) != 0 || attr(&slot, 34, dev) != 0 ||
            attr(&domain, 50, dev) != 0)
            continue;
        for (unsigned i = 0; i < ndev; i++) {
            struct nvml_pci pci;
            memset(&pci, 0, sizeof(pci));
            if (devs[i] && nv.pci(devs[i], &pci) == 0 && pci.domain == (unsigned)domain &&
                pci.bus == (unsigned)bus && pci.device == (unsigned)slot)
                ordinal[i] = o;
        }
    }
    return 0;
}

static void sample(struct trk_thread *t)
{
    static struct nvml_proc procs[MAX_PROCS]; /* sampler thread only */
    for (unsigned i = 0; i < ndev; i++) {
        if (!devs[i] || ordinal[i] < 0)
            continue;
        unsigned int n = MAX_PROCS;
        if (nv.procs(devs[i], &n, procs) != 0)
            continue; /* includes "more than MAX_PROCS processes": skip this round */
        uint64_t used = 0;
        int found = 0;
        for (unsigned k = 0; k < n && k < MAX_PROCS; k++) {
            if (procs[k].pid == (unsigned)trk_pid && procs[k].used != ~0ull) {
                used += procs[k].used;
                found = 1;
            }
        }
        /* Only on change: the figure is a step function, and a device this
         * process never used writes nothing at all. */
        if ((!found && !reported[i]) || (reported[i] && used == last_used[i]))
            continue;
        struct nvml_memory mem = {0, 0, 0};
        if (!nv.memory || nv.memory(devs[i], &mem) != 0)
            mem.total = 0;
        trk_ev_gpu_meminfo(t, (unsigned)ordinal[i], used, mem.total);
        last_used[i] = used;
        reported[i] = 1;
    }
}

/* Loading NVML opens files (the library, /etc/ld.so.cache) and nvmlInit
 * opens the driver's devices: done by the sampler thread, that raced with
 * the program's own descriptors (issue 14 item 7). So it happens on the
 * program's thread, inside its first GPU allocation call, after the real
 * call returned, as if the driver had done it. A process whose parent
 * started NVML before fork never samples (its state is the parent's); one
 * that allocates first after the fork starts its own. errno is kept: the
 * caller returns to the program. */
void trk_gpu_nvml_start(void)
{
    int expect = S_WAITING;
    if (TRK_LIKELY(atomic_load_explicit(&state, memory_order_relaxed) != S_WAITING) ||
        trk_guard_get() || !atomic_load_explicit(&trk_active, memory_order_relaxed))
        return;
    int err = errno;
    if (trk_gpu_lib_handle(TRK_GPU_LIB_CUDA) &&
        atomic_compare_exchange_strong(&state, &expect, S_OPENING)) {
        int was = trk_guard_enter_internal(); /* NVML's own allocations are not the program's */
        int ok = nvml_open() == 0;
        trk_guard_leave(was);
        owner = trk_pid;
        atomic_store(&state, ok ? S_RUNNING : S_OFF);
    }
    errno = err;
}

void trk_gpu_sample(struct trk_thread *t)
{
    int st = atomic_load(&state);
    if (st != S_RUNNING)
        return; /* the sampler never opens anything (trk_gpu_nvml_start) */
    uint64_t now = trk_now_ns();
    if (now < next_ns)
        return;
    next_ns = now + PERIOD_NS;
    if (owner != trk_pid) {
        atomic_store(&state, S_OFF); /* a forked child: NVML's state belongs to the parent */
        return;
    }
    if (!mapped && map_devices() == 0)
        mapped = 1;
    if (mapped)
        sample(t);
}
