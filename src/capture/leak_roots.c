/* SPDX-License-Identifier: MIT
 *
 * leak_roots.c - the roots of the exit-time leak scan (leakscan.h): every
 * readable and writable mapping of /proc/self/maps (data and bss of every
 * object, anonymous mmaps, TLS and thread control blocks, pthread-specific
 * data), minus what is not the program's: the malloc heap itself (blocks
 * are scanned only once marked), the tracker's own memory, and each
 * thread's stack below its stack pointer (dead frames must not hide a
 * leak). Threads' registers count too. Must not: read a page that is not
 * resident (an untouched reservation reads as zeros, and may be huge), read
 * a file mapping's page the program never wrote (the page cache's: reading
 * it maps it in), read device mappings, allocate, or take a lock.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/leak_threads.h"
#include "capture/leakscan.h"
#include "capture/own_mem.h"
#include "capture/thread.h"

struct map {
    uint64_t lo, hi;
    uint64_t from; /* scan window start (stacks: the stack pointer) */
    uint8_t r, w, skip, anon, guard_before;
    uint8_t heap, stack, libc;
    uint8_t file, shared; /* backed by a file (or shmem); MAP_SHARED */
};

struct maps {
    struct map *v;
    size_t n, cap, len;
    char *text; /* /proc/self/maps as read */
    size_t text_len;
};

struct range {
    uint64_t lo, hi;
};

struct excl {
    struct range *v;
    size_t n, cap, len;
};

static uint64_t hex(const char **pp)
{
    const char *p = *pp;
    uint64_t v = 0;
    for (;; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            break;
        v = v * 16 + (uint64_t)d;
    }
    *pp = p;
    return v;
}

/* /proc/self/maps into a buffer of ours (grown until it all fits). */
static char *read_maps(size_t *len_out, size_t *cap_out)
{
    size_t cap = 1u << 20;
    for (int tries = 0; tries < 8; tries++, cap *= 4) {
        char *buf = trk_lmem(cap);
        if (!buf)
            return NULL;
        int fd = (int)syscall(SYS_openat, -100 /* AT_FDCWD */, "/proc/self/maps", 0);
        size_t len = 0;
        ssize_t n = 0;
        while (fd >= 0 && len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
            len += (size_t)n;
        if (fd >= 0)
            syscall(SYS_close, fd);
        if (fd >= 0 && n == 0) {
            buf[len] = 0;
            *len_out = len;
            *cap_out = cap;
            return buf;
        }
        trk_lmem_free(buf, cap);
        if (fd < 0)
            return NULL;
    }
    return NULL;
}

static void parse_line(struct map *m, const char *p)
{
    memset(m, 0, sizeof(*m));
    m->lo = hex(&p);
    p++;
    m->hi = hex(&p);
    p++;
    m->r = p[0] == 'r';
    m->w = p[1] == 'w';
    m->shared = p[3] == 's';
    p += 5;
    hex(&p); /* offset */
    p++;
    hex(&p); /* major */
    p++;
    hex(&p); /* minor */
    while (*p == ' ')
        p++;
    uint64_t inode = 0;
    while (*p >= '0' && *p <= '9')
        inode = inode * 10 + (uint64_t)(*p++ - '0');
    while (*p == ' ')
        p++;
    m->anon = inode == 0 && (*p == '\n' || *p == 0);
    m->file = inode != 0;
    m->heap = strncmp(p, "[heap]", 6) == 0;
    const char *eol = strchr(p, '\n');
    for (const char *q = p; *q && (!eol || q < eol); q++)
        if (strncmp(q, "/libc.so", 8) == 0 || strncmp(q, "/libc-", 6) == 0)
            m->libc = 1;
    m->stack = strncmp(p, "[stack]", 7) == 0;
    /* Device memory (GPU apertures, framebuffers) may fault or hang on a
     * read; the kernel's own pages are not the program's. */
    m->skip = (strncmp(p, "/dev/", 5) == 0 && strncmp(p, "/dev/zero", 9) != 0) ||
              strncmp(p, "[vvar", 5) == 0 || strncmp(p, "[vsyscall]", 10) == 0 ||
              strncmp(p, "[vdso]", 6) == 0;
    m->from = m->lo;
}

static int parse_maps(struct maps *ms)
{
    size_t len, cap;
    char *buf = read_maps(&len, &cap);
    if (!buf)
        return -1;
    ms->text = buf; /* listed in itself: freed only after the scan */
    ms->text_len = cap;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    ms->len = (lines + 1) * sizeof(*ms->v);
    ms->v = trk_lmem(ms->len);
    if (!ms->v)
        return -1;
    const char *p = buf;
    while (*p && ms->n <= lines) {
        parse_line(&ms->v[ms->n++], p);
        while (*p && *p != '\n')
            p++;
        if (*p)
            p++;
    }
    for (size_t i = 1; i < ms->n; i++) {
        const struct map *g = &ms->v[i - 1];
        ms->v[i].guard_before = g->hi == ms->v[i].lo && !g->r && !g->w && g->anon;
    }
    return 0;
}

static struct map *map_of(struct maps *ms, uint64_t a)
{
    size_t lo = 0, hi = ms->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ms->v[mid].hi <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ms->n && ms->v[lo].lo <= a ? &ms->v[lo] : NULL;
}

static void excl_add(struct excl *x, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return;
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 4096;
        struct range *nv = trk_lmem(nc * sizeof(*nv));
        if (!nv)
            return;
        if (x->v)
            memcpy(nv, x->v, x->n * sizeof(*nv));
        trk_lmem_free(x->v, x->len);
        x->v = nv;
        x->cap = nc;
        x->len = nc * sizeof(*nv);
    }
    x->v[x->n++] = (struct range){lo, hi};
}

/* Shell sort by start (a few thousand ranges at most). */
static void excl_sort(struct excl *x)
{
    for (size_t gap = x->n / 2; gap; gap /= 2)
        for (size_t i = gap; i < x->n; i++) {
            struct range t = x->v[i];
            size_t j = i;
            for (; j >= gap && x->v[j - gap].lo > t.lo; j -= gap)
                x->v[j] = x->v[j - gap];
            x->v[j] = t;
        }
}

/* Where glibc malloc keeps a block outside the brk heap: its own mmap
 * (IS_MMAPPED) or a secondary arena's heap (NON_MAIN_ARENA, 64 MiB
 * aligned, its size in the heap_info header). Anything else - another
 * allocator - costs the whole mapping holding the block. */
#define CHUNK_MMAPPED  2u
#define CHUNK_NONMAIN  4u
#define ARENA_HEAP_MAX (64ull << 20)

TRK_LEAK_RAW_READ static void territory(struct trk_lset *s, struct maps *ms, struct excl *x,
                                        struct excl *heapx)
{
    uint64_t last_arena = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t p = s->v[i].addr, size = s->v[i].size;
        struct map *m = map_of(ms, p);
        if (!m || m->heap)
            continue;
        struct map *h = p >= 16 ? map_of(ms, p - 16) : NULL;
        uint64_t hdr = h && h->r ? *(const uint64_t *)(uintptr_t)(p - 8) : 0;
        uint64_t csize = hdr & ~7ull;
        if (h && (hdr & CHUNK_MMAPPED) && csize >= size + 16 && csize - size < (1u << 20)) {
            uint64_t chunk = p - 16, pre = *(const uint64_t *)(uintptr_t)chunk;
            excl_add(x, chunk - pre, chunk + csize);
            continue;
        }
        if (h && (hdr & CHUNK_NONMAIN) && csize >= size + 8 && csize - size < (1u << 20)) {
            uint64_t base = (p - 16) & ~(ARENA_HEAP_MAX - 1);
            struct map *bm = map_of(ms, base);
            uint64_t hs = bm && bm->r ? *(const uint64_t *)(uintptr_t)(base + 16) : 0;
            if (hs && hs <= ARENA_HEAP_MAX && base + hs > p) {
                if (base != last_arena) {
                    excl_add(x, base, base + hs);
                    if (heapx)
                        excl_add(heapx, base, base + hs);
                }
                last_arena = base;
                continue;
            }
        }
        s->flags |= TRK_LEAKF_FOREIGN;
        m->skip = 1;
    }
}

/* A stack glibc keeps cached after its thread ended: its thread control
 * block (x86-64: tcb and self both point at it) lies in its top pages and
 * is no live thread's. Returns that block's address (the dead frames below
 * it are not scanned, as valgrind's dead stack is not addressable; the
 * block itself, with its DTV and thread-specific data, is), else 0. */
TRK_LEAK_RAW_READ static uint64_t dead_stack(const struct map *m, const struct trk_lthread *t,
                                             int nt, uint64_t self_tp)
{
    /* Not past 1 GiB: a thread's stack is not that large, a sanitizer's
     * shadow is (ASan faults on reading its own shadow). */
    if (!m->anon || !m->guard_before || m->hi - m->lo < 16384 || m->hi - m->lo > (1ull << 30))
        return 0;
    /* Only top pages that are there to read: the mapping may have been
     * unmapped meanwhile by a thread that was not stopped. */
    unsigned char vec[8192 / 4096];
    if (mincore((void *)(uintptr_t)(m->hi - 8192), 8192, vec) != 0 || !(vec[0] & vec[1] & 1))
        return 0;
    for (uint64_t a = m->hi - 64; a >= m->hi - 8192; a -= 64) {
        const uint64_t *w = (const uint64_t *)(uintptr_t)a;
        if (w[0] != a || w[2] != a)
            continue;
        if (a == self_tp)
            return 0;
        for (int i = 0; i < nt; i++)
            if (t[i].tp == a)
                return 0;
        return a;
    }
    return 0;
}

/* glibc's main arena (struct malloc_state, in libc's data) points into the
 * heap at chunk headers, which lie inside the block before them: interior
 * pointers no program holds (valgrind, whose malloc replaces glibc's, never
 * sees them). Found by its shape: an empty bin points at itself minus 16,
 * and a lone main arena's `next` points at itself (else most bins are empty). Layout of glibc 2.26+
 * on 64-bit: bins at 112, next at 2160, 2200 bytes in all. */
#define ARENA_BINS 112
#define ARENA_NEXT 2160
#define ARENA_SIZE 2200

/* Lone arena: next is itself; else most of its 127 bins are empty (a
 * program's data does not look like that by chance). */
TRK_LEAK_RAW_READ static int arena_at(uint64_t base)
{
    if (*(const uint64_t *)(uintptr_t)(base + ARENA_NEXT) == base)
        return 1;
    int empty = 0;
    for (uint64_t k = 0; k < 127; k++) {
        uint64_t a = base + ARENA_BINS + 16 * k;
        const uint64_t *w = (const uint64_t *)(uintptr_t)a;
        empty += w[0] == a - 16 && w[1] == a - 16;
    }
    return empty >= 64;
}

static void exclude_main_arena(const struct maps *ms, struct excl *x)
{
    for (size_t i = 0; i < ms->n; i++) {
        const struct map *m = &ms->v[i];
        if (!m->libc || !m->r || !m->w)
            continue;
        for (uint64_t a = m->lo + ARENA_BINS; a + 16 <= m->hi; a += 8) {
            const uint64_t *w = (const uint64_t *)(uintptr_t)a;
            if (w[0] != a - 16 || w[1] != a - 16)
                continue;
            for (uint64_t j = 0; j < 127; j++) {
                uint64_t base = a - ARENA_BINS - 16 * j;
                if (base < m->lo || base + ARENA_SIZE > m->hi)
                    continue;
                if (arena_at(base)) {
                    excl_add(x, base, base + ARENA_SIZE);
                    return;
                }
            }
        }
    }
}

/* One scan at a time (under the writer's lock): static, off the exiting
 * thread's stack, shared by both ways of finding the pages to read. */
static union {
    unsigned char vec[65536];
    uint64_t pm[8192];
} pages;
static int pagemap_fd = -1;

/* Pages of a file mapping that hold what the program wrote (pagemap.txt in
 * the kernel's docs: bit 63 present, bit 61 a page-cache or shmem page).
 * mincore() would say "resident" for every page the page cache holds, and
 * reading those would map them in: on PyTorch 2.11 with CUDA's libraries
 * that was 135-150 MB of RSS at exit for pages that hold only the file's
 * bytes (the program's writes to a private mapping land in anonymous
 * copies). A shared mapping's written pages are the page cache's own:
 * there every present page counts. Returns -1 when pagemap cannot be read
 * (mincore then decides, as before). */
static int scan_file_pages(struct trk_lset *s, uint64_t lo, uint64_t hi, int shared)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (pagemap_fd < 0)
        return -1;
    while (lo < hi) {
        uint64_t base = lo & ~(page - 1);
        uint64_t end = base + page * (sizeof(pages.pm) / sizeof(pages.pm[0]));
        if (end > hi)
            end = hi;
        size_t npages = (size_t)((end - base + page - 1) / page);
        ssize_t got = pread(pagemap_fd, pages.pm, npages * 8, (off_t)(base / page * 8));
        if (got != (ssize_t)(npages * 8))
            return -1;
        for (size_t i = 0; i < npages; i++) {
            uint64_t e = pages.pm[i];
            if (!(e >> 63) || (!shared && (e >> 61 & 1)))
                continue;
            uint64_t a = base + i * page;
            trk_lmark_range(s, a > lo ? a : lo, a + page < end ? a + page : end);
        }
        lo = end;
    }
    return 0;
}

/* Resident pages of [lo, hi), as roots. */
static void scan_resident(struct trk_lset *s, const struct map *m, uint64_t lo, uint64_t hi)
{
    if (m && m->file && scan_file_pages(s, lo, hi, m->shared) == 0)
        return;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    unsigned char *vec = pages.vec;
    /* 256 MiB a call: a huge sparse mapping (a sanitizer's terabytes of
     * shadow) costs thousands of calls, not millions. */
    while (lo < hi) {
        uint64_t base = lo & ~(page - 1);
        uint64_t end = base + page * sizeof(pages.vec);
        if (end > hi)
            end = hi;
        if (mincore((void *)(uintptr_t)base, end - base, vec) != 0) {
            lo = end; /* gone meanwhile (unmapped): nothing to read */
            continue;
        }
        size_t npages = (size_t)((end - base + page - 1) / page);
        for (size_t i = 0; i < npages; i++) {
            /* eight absent pages at a time (most of a sparse mapping) */
            uint64_t eight;
            if ((i & 7) == 0 && i + 8 <= npages) {
                memcpy(&eight, vec + i, 8);
                if (!(eight & 0x0101010101010101ull)) {
                    i += 7;
                    continue;
                }
            }
            uint64_t a = base + i * page;
            uint64_t from = a > lo ? a : lo, to = a + page < end ? a + page : end;
            if (vec[i] & 1)
                trk_lmark_range(s, from, to);
        }
        lo = end;
    }
}

static void scan_minus(struct trk_lset *s, const struct excl *x, const struct map *m, uint64_t lo,
                       uint64_t hi)
{
    for (size_t i = 0; i < x->n && lo < hi; i++) {
        const struct range *r = &x->v[i];
        if (r->hi <= lo || r->lo >= hi)
            continue;
        if (r->lo > lo)
            scan_resident(s, m, lo, r->lo);
        if (r->hi > lo)
            lo = r->hi;
    }
    if (lo < hi)
        scan_resident(s, m, lo, hi);
}

/* A fork child's capture holds only the child's allocations: the blocks
 * it inherited live in its heap unknown to the scan, and the child's
 * blocks they point to would read as lost (a list the parent built, with a
 * node the child added). There the heap outside the child's own blocks is
 * scanned as a root: inherited blocks reach what they point to, at the
 * price of stale pointers in free chunks hiding some of the child's leaks
 * (reported as reachable, never a false loss). */
static int inherited_heap;

void trk_lroots_fork_child(void)
{
    inherited_heap = 1;
}

/* [lo, hi) minus the set's blocks (sorted by address), as roots. */
static void scan_outside_blocks(struct trk_lset *s, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = s->n;
    while (a < b) { /* the first block that ends after lo */
        size_t m = a + (b - a) / 2;
        if (s->v[m].addr + s->v[m].size <= lo)
            a = m + 1;
        else
            b = m;
    }
    for (size_t i = a; i < s->n && lo < hi && s->v[i].addr < hi; i++) {
        if (s->v[i].addr > lo)
            scan_resident(s, NULL, lo, s->v[i].addr);
        uint64_t end = s->v[i].addr + s->v[i].size;
        if (end > lo)
            lo = end;
    }
    if (lo < hi)
        scan_resident(s, NULL, lo, hi);
}

static void scan_inherited_heap(struct trk_lset *s, const struct maps *ms, const struct excl *hx)
{
    for (size_t i = 0; i < ms->n; i++)
        if (ms->v[i].heap && ms->v[i].r && ms->v[i].w)
            scan_outside_blocks(s, ms->v[i].lo, ms->v[i].hi);
    for (size_t i = 0; i < hx->n; i++)
        scan_outside_blocks(s, hx->v[i].lo, hx->v[i].hi);
}

static char own_bss_probe; /* finds our own bss mapping */

static void excl_own(void *x, uint64_t lo, uint64_t hi)
{
    excl_add(x, lo, hi);
}

/* The tracker's own memory: its data and bss, every range it mapped for
 * itself (own_mem.h: thread states and rings, intern tables, the writer's
 * buffers holding copies of block addresses, the unwinder's tables, the
 * stopped threads' register slots), and the scan's own tables. */
static void exclude_ours(struct trk_lset *s, struct maps *ms, struct excl *x)
{
    trk_own_ranges(excl_own, x);
    struct map *text = map_of(ms, (uint64_t)(uintptr_t)&trk_lroots_scan);
    struct map *bss = map_of(ms, (uint64_t)(uintptr_t)&own_bss_probe);
    for (size_t i = 0; text && i < ms->n; i++) {
        struct map *m = &ms->v[i];
        /* Our object's mappings follow its text, up to and with its bss. */
        if (m >= text && bss && m <= bss && m->w)
            m->skip = 1;
    }
    for (struct trk_thread *t = trk_thread_list(); t; t = t->next) {
        excl_add(x, (uint64_t)(uintptr_t)t, (uint64_t)(uintptr_t)(t + 1));
        if (t->ring)
            excl_add(x, (uint64_t)(uintptr_t)t->ring,
                     (uint64_t)(uintptr_t)t->ring + t->ring_mask + 1);
    }
    excl_add(x, (uint64_t)(uintptr_t)s->v, (uint64_t)(uintptr_t)s->v + s->map_len);
    excl_add(x, (uint64_t)(uintptr_t)s->stack, (uint64_t)(uintptr_t)s->stack + s->stack_len);
    excl_add(x, (uint64_t)(uintptr_t)ms->v, (uint64_t)(uintptr_t)ms->v + ms->len);
    excl_add(x, (uint64_t)(uintptr_t)ms->text, (uint64_t)(uintptr_t)ms->text + ms->text_len);
}

#define STACK_REDZONE 128 /* the ABI's red zone below the stack pointer (x86-64) */

static void place_stacks(struct trk_lset *s, struct maps *ms, const struct trk_lthread *t, int nt,
                         uint64_t self_sp)
{
    int unknown = 0;
    for (int i = 0; i < nt; i++) {
        if (t[i].gone)
            continue;
        struct map *m = t[i].sp ? map_of(ms, t[i].sp) : NULL;
        if (t[i].ours) {
            if (m)
                m->skip = 1; /* our threads' stacks hold nothing of the program's */
            continue;
        }
        if (!atomic_load(&t[i].stopped)) {
            s->flags |= TRK_LEAKF_UNSTOPPED; /* scanned whole, conservatively */
            if (m)
                m->stack = 2;
            unknown += !m;
            continue;
        }
        if (m && t[i].sp - STACK_REDZONE > m->from)
            m->from = t[i].sp - STACK_REDZONE;
        if (m)
            m->stack = 2; /* a live thread's */
        trk_lmark_words(s, t[i].regs, (size_t)t[i].nregs);
    }
    struct map *m = map_of(ms, self_sp);
    if (m) {
        m->from = self_sp;
        m->stack = 2;
    }
    uint64_t self_tp = (uint64_t)pthread_self();
    for (size_t i = 0; !unknown && i < ms->n; i++) {
        struct map *d = &ms->v[i];
        uint64_t tcb =
            d->stack != 2 && d->r && d->w && !d->skip ? dead_stack(d, t, nt, self_tp) : 0;
        if (tcb)
            d->from = tcb;
    }
}

void trk_lroots_scan(struct trk_lset *s, const void *stack_top)
{
    struct trk_lthread *t = NULL;
    int nt = trk_lthreads_stop(&t);
    struct maps ms = {0};
    struct excl x = {0}, hx = {0};
    if (nt < 0 || parse_maps(&ms) != 0) {
        s->flags |= TRK_LEAKF_INCOMPLETE;
        goto out;
    }
    exclude_ours(s, &ms, &x);
    exclude_main_arena(&ms, &x);
    territory(s, &ms, &x, inherited_heap ? &hx : NULL);
    excl_sort(&x);
    place_stacks(s, &ms, t, nt, (uint64_t)(uintptr_t)stack_top);
    pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    for (size_t i = 0; i < ms.n; i++) {
        const struct map *m = &ms.v[i];
        if (m->r && m->w && !m->skip && !m->heap)
            scan_minus(s, &x, m, m->from, m->hi);
    }
    if (inherited_heap) /* what TRK_LEAKF_INHERITED tells the reader (leakscan.c) */
        scan_inherited_heap(s, &ms, &hx);
    if (pagemap_fd >= 0)
        close(pagemap_fd);
    pagemap_fd = -1;
    trk_lmark_finish(s);
out:
    if (nt >= 0)
        trk_lthreads_resume(t, nt);
    trk_lmem_free(ms.v, ms.len);
    trk_lmem_free(ms.text, ms.text_len);
    trk_lmem_free(x.v, x.len);
    trk_lmem_free(hx.v, hx.len);
}
