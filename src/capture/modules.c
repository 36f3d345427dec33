/* SPDX-License-Identifier: MIT
 *
 * modules.c - snapshots of the loaded ELF objects (path, load bias, build-id,
 * PT_LOAD segments) so that stacks can be symbolized offline, and the
 * address range of our own code so that its frames can be dropped.
 *
 * Snapshots are taken at start, after each dlopen/dlclose the hooks see, and
 * by the writer whenever dl_iterate_phdr's load/unload counters moved (loads
 * libc makes internally never pass through our dlopen hook). Never allocates.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "capture/events.h"
#include "capture/modules.h"
#include "capture/unwind.h"

static _Atomic uint64_t generation;

/* Objects already written, keyed by load bias and path hash: a snapshot
 * after each dlopen repeats every loaded object, which made a Python import
 * storm write O(n^2) module records. Only new ones are written now; when the
 * table is full everything is written again (correct, just larger). Touched
 * only under the loader lock (dl_iterate_phdr callbacks). */
#define SEEN_SLOTS 8192
static uint64_t seen[SEEN_SLOTS];
static unsigned seen_count;

static uint64_t module_key(uintptr_t base, const char *path)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ base;
    for (const char *p = path; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
    return h | 1;
}

/* Returns 1 when the object was written before; records it when `add`. */
static int seen_check(uint64_t key, int add)
{
    if (seen_count >= SEEN_SLOTS / 2)
        return 0;
    for (unsigned i = (unsigned)key & (SEEN_SLOTS - 1);; i = (i + 1) & (SEEN_SLOTS - 1)) {
        if (seen[i] == key)
            return 1;
        if (!seen[i]) {
            if (add) {
                seen[i] = key;
                seen_count++;
            }
            return 0;
        }
    }
}

void trk_modules_forget(void)
{
    memset(seen, 0, sizeof(seen));
    seen_count = 0;
}
static unsigned long long seen_adds, seen_subs;
static char exe_path[TRK_MODULE_PATH_MAX];
static size_t exe_len;

/* Finds the GNU build-id note in a loaded object's PT_NOTE segments. */
static size_t find_build_id(const struct dl_phdr_info *info, const uint8_t **out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
            const uint8_t *d = p + sizeof(*nh) + name;
            if (d + desc > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(p + sizeof(*nh), "GNU", 4) == 0) {
                *out = d;
                return nh->n_descsz;
            }
            p = d + desc;
        }
    }
    return 0;
}

struct snap_ctx {
    struct trk_thread *t;
    uint64_t gen;
    unsigned count;
    int emit;
    size_t bytes; /* encoded size of the whole snapshot (first pass) */
};

static int snap_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct snap_ctx *c = arg;
    seen_adds = info->dlpi_adds;
    seen_subs = info->dlpi_subs;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    uint64_t key = module_key(info->dlpi_addr, name);
    if (seen_check(key, 0))
        return 0;
    c->count++;

    struct trk_segment segs[TRK_MODULE_SEGS_MAX];
    unsigned nseg = 0;
    for (int i = 0; i < info->dlpi_phnum && nseg < TRK_MODULE_SEGS_MAX; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        segs[nseg].vaddr = ph->p_vaddr;
        segs[nseg].memsz = ph->p_memsz;
        segs[nseg].flags = ph->p_flags;
        nseg++;
    }
    const uint8_t *bid = NULL;
    size_t bid_len = find_build_id(info, &bid);
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    size_t path_len = strlen(path);
    if (path_len == 0) { /* only the main executable has no name */
        path = exe_path;
        path_len = exe_len;
    }
    static uint8_t buf[TRK_REC_MODULE_MAX]; /* callers are serialized: see below */
    uint8_t *e =
        trk_enc_module(buf, c->gen, info->dlpi_addr, path, path_len, bid, bid_len, segs, nseg);
    size_t len = (size_t)(e - buf);
    if (!c->emit) {
        c->bytes += len;
        return 0;
    }
    /* Never wait for the writer while the loader lock is held: room was
     * reserved before this pass; an object that appeared since is left for
     * the next snapshot. */
    if (trk_ring_free(c->t) < len)
        return 1;
    trk_ring_put(c->t, buf, len);
    trk_commit(c->t);
    seen_check(key, 1);
    return 0;
}

/* dl_iterate_phdr holds the loader's lock around the callbacks, which also
 * serializes concurrent snapshots and so protects snap_cb's static buffer.
 * The first pass measures, so that ring space is waited for outside the
 * lock: a thread blocked inside it could otherwise stall anyone who needs
 * the loader, forever. */
void trk_modules_snapshot(struct trk_thread *t)
{
    trk_unwind_modules_refresh(t); /* the own unwinder's table of .eh_frame_hdr */
    struct snap_ctx c = {.t = t, .gen = 0, .count = 0, .emit = 0, .bytes = 0};
    trk_dl_enter(t);
    dl_iterate_phdr(snap_cb, &c);
    trk_dl_leave(t);

    uint8_t buf[TRK_REC_MAX];
    c.gen = atomic_fetch_add(&generation, 1) + 1;
    uint64_t seq = trk_ev_begin(t);
    uint8_t *e = trk_enc_modules(buf, &t->enc, seq, trk_now_ns(), c.gen, c.count);
    trk_ev_finish(t, buf, (size_t)(e - buf), seq);

    if (trk_ring_reserve(t, c.bytes + 1024))
        return;
    c.count = 0;
    c.emit = 1;
    trk_dl_enter(t);
    dl_iterate_phdr(snap_cb, &c);
    trk_dl_leave(t);
}

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    unsigned long long *v = arg;
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1; /* the counters are global: the first object is enough */
}

int trk_modules_changed(struct trk_thread *t)
{
    unsigned long long v[2] = {seen_adds, seen_subs};
    trk_dl_enter(t);
    dl_iterate_phdr(count_cb, v);
    trk_dl_leave(t);
    return v[0] != seen_adds || v[1] != seen_subs;
}

/* The address range of the object containing probe (its PT_LOAD span). */
struct range_probe {
    uintptr_t probe, lo, hi;
};

static int range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct range_probe *r = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (r->probe >= lo && r->probe < hi) {
        r->lo = lo;
        r->hi = hi;
        return 1;
    }
    return 0;
}

static void range_of(const void *probe, uintptr_t *lo, uintptr_t *hi)
{
    struct range_probe r = {(uintptr_t)probe, 0, 0};
    dl_iterate_phdr(range_cb, &r);
    *lo = r.lo;
    *hi = r.hi;
}

uintptr_t trk_unw_lo, trk_unw_hi, trk_ldso_lo, trk_ldso_hi;

void trk_modules_init(void)
{
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
    exe_len = n > 0 ? (size_t)n : 0;
    exe_path[exe_len] = 0;
    range_of((const void *)&trk_modules_init, &trk_self_lo, &trk_self_hi);
    /* Callers whose calls inside our hooks are the unwinder's doing, not a
     * signal handler's: libunwind (its own cache mappings) and the dynamic
     * loader (a DTV resize when libunwind first touches its TLS after a
     * dlopen). See trk_enter. */
    range_of((const void *)&unw_backtrace, &trk_unw_lo, &trk_unw_hi);
    range_of((const void *)&_r_debug, &trk_ldso_lo, &trk_ldso_hi);
}
