/* SPDX-License-Identifier: MIT
 *
 * gpu.h - internal interface of the GPU layer (CUDA driver and HIP hooks,
 * the dlsym interposer, the NVML sampler). The facts behind every
 * choice: docs/GPU_INTERNALS.md, cited by section (§N).
 *
 * Owns: the minimal driver ABI types we need (no CUDA/HIP headers at build
 * time), the real-function resolution, and the per-call protocol every hook
 * follows. Must not: allocate, use stdio, hold the re-entry guard across a
 * driver call (the driver's own host allocations must be recorded, tagged),
 * or depend on our constructor having run: the runtime may resolve driver
 * entry points from another library's constructor (docs/GPU_INTERNALS.md §3 item 8).
 */
#ifndef TRK_GPU_H
#define TRK_GPU_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu_events.h"
#include "prim/real.h"

#ifndef TRK_EXPORT
#define TRK_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Driver ABI (CUDA 13.0 cuda.h / cudaTypedefs.h, HIP 6.x headers) ---- */

typedef int trk_cu_result;
#define TRK_CUDA_SUCCESS               0
#define TRK_CUDA_ERROR_NOT_INITIALIZED 3 /* what we answer when no real driver is there */
typedef uint64_t trk_cu_ptr;             /* CUdeviceptr (_v2: 64-bit) */
typedef uint64_t trk_cu_handle;          /* CUmemGenericAllocationHandle */
typedef struct {
    char reserved[64];
} trk_cu_ipc_handle; /* CUipcMemHandle, passed by value */

/* CUmemAllocationProp / hipMemAllocationProp: only the location is read,
 * { int type; int id; } at offset 8 (cuda.h 4278, 4305). */
struct trk_gpu_alloc_prop {
    int type;
    int handle_types;
    int loc_type; /* 1 = device (CU_MEM_LOCATION_TYPE_DEVICE, hipMemLocationTypeDevice) */
    int loc_id;
};

/* ---- Driver-reported memory (nvml_sampler.c) ------------------------------ */

/* Called by the capture engine's sampler thread on every tick (registered
 * as a layer callback by src/preload/init.c), with its own thread state and
 * the internal guard set; samples at its own, lower rate. */
void trk_gpu_sample(struct trk_thread *t) TRK_HIDDEN;
/* Loads NVML once, at the program's first recorded CUDA allocation (the
 * driver in the process is not enough); on the program's thread only,
 * outside the guard: the sampler opens no descriptor. Keeps errno. */
void trk_gpu_nvml_start(void) TRK_HIDDEN;

/* ---- Real functions (gpu_real.c) ---------------------------------------- */

enum trk_gpu_lib { TRK_GPU_LIB_CUDA = 0, TRK_GPU_LIB_HIP = 1 };

/* libc's dlsym, found with dlvsym so that it is never our own interposer
 * (docs/GPU_INTERNALS.md §3 item 1). NULL only if libc has none. The asm stub reads the
 * cached pointer directly. */
extern void *_Atomic trk_gpu_dlsym_real TRK_HIDDEN;
void *trk_gpu_dlsym_real_get(void) TRK_HIDDEN;

/* The next definition of name after us (RTLD_NEXT), else the definition in
 * the driver library itself when that was loaded RTLD_LOCAL, where
 * RTLD_NEXT cannot see it (docs/GPU_INTERNALS.md §3 item 3). Never one of ours. */
void *trk_gpu_lookup(enum trk_gpu_lib lib, const char *name) TRK_HIDDEN;

/* A handle of the loaded driver library (RTLD_NOLOAD), NULL if not loaded. */
void *trk_gpu_lib_handle(enum trk_gpu_lib lib) TRK_HIDDEN;

/* Is p inside libtracker.so? A pointer the driver hands back that is
 * already ours (dlsym of the global scope finds our exports) must never be
 * stored as "real": calling it would recurse. */
int trk_gpu_is_ours(const void *p) TRK_HIDDEN;

/* Stores p in *slot unless another real pointer is already there. Returns 1
 * when *slot now holds p (wrap it), 0 when it holds something else (pass p
 * through untouched rather than call the wrong function). */
int trk_gpu_slot_claim(void *_Atomic *slot, void *p) TRK_HIDDEN;

/* ---- Wrapping of pointers handed out by resolvers ----------------------- */

/* dlsym(handle, name) returned p: our wrapper for known names, else p. */
void *trk_gpu_dlsym_wrap(const char *name, void *p) TRK_HIDDEN;
void *trk_cu_dlsym_wrap(const char *name, void *p) TRK_HIDDEN;
void *trk_hip_dlsym_wrap(const char *name, void *p) TRK_HIDDEN;

/* cuGetProcAddress[_v2](name, version, flags) returned p (cuda_procaddr.c). */
void *trk_cu_procaddr_wrap(const char *name, int version, uint64_t flags, void *p) TRK_HIDDEN;

/* ---- The per-call protocol ----------------------------------------------
 *
 * Every hook: open (take the stack of an allocating call; for a release,
 * record it now, before the driver can hand the address out again), GPU_ENTER,
 * drop the guard, the real call, the device lookup, then GPU_EXIT and the
 * acquisition record. A scope byte travels in the same ring write as the
 * record next to it. The thread-local depth suppresses nested GPU events: a
 * driver that implements one hooked entry point with another (through the
 * PLT or the global scope) is one API call, not two (docs/GPU_INTERNALS.md §3 items 6-7).
 */
extern __thread int trk_gpu_depth TRK_TLS TRK_HIDDEN;

struct trk_gpu_call {
    uint32_t stack; /* allocation stack, 0 = none */
    int scoped;     /* GPU_ENTER was written: this call is being recorded */
    int err;        /* errno to restore */
};

/* Returns the thread with its guard held when the call is to be recorded;
 * the caller then writes GPU_ENTER (alone, or after its release record) and
 * calls trk_gpu_entered. */
static inline struct trk_thread *trk_gpu_open(struct trk_gpu_call *c, int want_stack)
{
    c->stack = 0;
    c->scoped = 0;
    if (trk_gpu_depth++ != 0)
        return NULL;
    struct trk_thread *t = trk_enter();
    if (!t)
        return NULL;
    c->err = errno;
    if (want_stack)
        c->stack = trk_stack(t);
    return t;
}

static inline void trk_gpu_entered(struct trk_gpu_call *c)
{
    c->scoped = 1;
    trk_leave();
    errno = c->err;
}

/* After the real call: the thread with its guard held, for the record that
 * carries GPU_EXIT (TRK_GPU_EXIT_BEFORE) or for trk_ev_gpu_scope(t, 0);
 * NULL when the call is not recorded. Always pair with trk_gpu_done. */
static inline struct trk_thread *trk_gpu_exit(struct trk_gpu_call *c)
{
    trk_gpu_depth--;
    if (!c->scoped)
        return NULL;
    c->err = errno;
    return trk_enter();
}

static inline void trk_gpu_done(struct trk_gpu_call *c, struct trk_thread *t)
{
    if (!c->scoped)
        return;
    if (t)
        trk_leave();
    errno = c->err;
}

/* An allocating call. */
static inline void trk_gpu_begin(struct trk_gpu_call *c)
{
    struct trk_thread *t = trk_gpu_open(c, 1);
    if (t) {
        trk_ev_gpu_scope(t, 1);
        trk_gpu_entered(c);
    }
}

/* A call without a record of its own before it (a map). */
static inline void trk_gpu_begin_plain(struct trk_gpu_call *c)
{
    struct trk_thread *t = trk_gpu_open(c, 0);
    if (t) {
        trk_ev_gpu_scope(t, 1);
        trk_gpu_entered(c);
    }
}

/* A releasing call: the release is recorded before the real call; address
 * 0 releases nothing (cudaFree(NULL)-style calls). */
static inline void trk_gpu_begin_free(struct trk_gpu_call *c, unsigned api, unsigned kind,
                                      uint64_t addr)
{
    struct trk_thread *t = trk_gpu_open(c, 0);
    if (t) {
        if (addr)
            trk_ev_gpu_free(t, TRK_GPU_ENTER_AFTER, api, kind, -1, addr);
        else
            trk_ev_gpu_scope(t, 1);
        trk_gpu_entered(c);
    }
}

/* Ends a call without an acquisition record. */
static inline void trk_gpu_end(struct trk_gpu_call *c)
{
    struct trk_thread *t = trk_gpu_exit(c);
    if (t)
        trk_ev_gpu_scope(t, 0);
    trk_gpu_done(c, t);
}

/* Ends an allocating call: GPU_ALLOC on success; GPU_FAIL when the driver
 * refused memory of this process (not an import, reservation or
 * registration: those fail for other reasons than memory). */
static inline void trk_gpu_end_alloc(struct trk_gpu_call *c, int result, unsigned api,
                                     unsigned kind, int device, uint64_t addr, uint64_t size,
                                     uint64_t stream)
{
    struct trk_thread *t = trk_gpu_exit(c);
    if (t) {
        if (result == 0)
            trk_ev_gpu_alloc(t, TRK_GPU_EXIT_BEFORE, api, kind, device, addr, size, stream,
                             c->stack);
        else if (kind != TRK_GPU_IMPORTED && kind != TRK_GPU_VA_RESERVE &&
                 kind != TRK_GPU_HOST_REGISTER)
            trk_ev_gpu_fail(t, TRK_GPU_EXIT_BEFORE, api, kind, device, size,
                            (uint64_t)(unsigned)result, c->stack);
        else
            trk_ev_gpu_scope(t, 0);
    }
    trk_gpu_done(c, t);
}

/* Ends a map call: GPU_MAP on success. */
static inline void trk_gpu_end_map(struct trk_gpu_call *c, int result, unsigned api, int device,
                                   uint64_t va, uint64_t size, uint64_t handle, uint64_t offset)
{
    struct trk_thread *t = trk_gpu_exit(c);
    if (t) {
        if (result == 0)
            trk_ev_gpu_map(t, TRK_GPU_EXIT_BEFORE, api, TRK_GPU_OP_MAP, device, va, size, handle,
                           offset);
        else
            trk_ev_gpu_scope(t, 0);
    }
    trk_gpu_done(c, t);
}

/* Begins an unmap: recorded before the real call, like any release. */
static inline void trk_gpu_begin_unmap(struct trk_gpu_call *c, unsigned api, int device,
                                       uint64_t va, uint64_t size)
{
    struct trk_thread *t = trk_gpu_open(c, 0);
    if (t) {
        trk_ev_gpu_map(t, TRK_GPU_ENTER_AFTER, api, TRK_GPU_OP_UNMAP, device, va, size, 0, 0);
        trk_gpu_entered(c);
    }
}

#endif /* TRK_GPU_H */
