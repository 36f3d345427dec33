/* SPDX-License-Identifier: MIT
 *
 * eh_pages.c - 4096 functions, each allocating from its own call site, so
 * that a tracker's unwinder reads this program's .eh_frame_hdr and
 * .eh_frame all over (a new return address each time) - as it reads
 * libtorch_cpu's on `import torch` (test_eh_pages.py, issue 12 Memory).
 *
 * Then, without allocating (raw system calls only, so that nothing is
 * unwound again), it polls which pages of its unwind tables are mapped
 * into it (/proc/self/pagemap's present bit): from the first whole page
 * after .eh_frame_hdr to the end of the segment holding it, the range the
 * tracker gives back. Every 50 ms, for at most 30 s, until none is. The
 * last 256 functions are called only then: new return addresses, whose
 * rules come from the tables read again after the pages went.
 *
 * Built three times: as eh_pages, its unwind tables in a read-only segment,
 * as eh_pages_x, linked with -z noseparate-code, in the code segment,
 * where the tracker gives back only the tables' own whole pages: here,
 * .eh_frame being the segment's last section, all but its last 16 bytes
 * (the last FDE ends before its terminator); and as eh_pages_w (EH_RELRO,
 * with eh_frame_relro.S), its .eh_frame in the writable segment under
 * PT_GNU_RELRO, with .eh_frame_hdr in a read-only one: the range is then
 * .eh_frame's whole pages up to the last FDE's end, where only the pages
 * that still hold the file's bytes go back. The one the loader relocated
 * (eh_frame_relro.S's CIE) must stay, with the relocated address in it.
 *
 * Prints key=value lines (harness.kv): calls, eh_pages (pages in the
 * range), eh_segment_exec (1 code, 2 writable), present_after_calls,
 * present_final, polls, present_after_later_calls (page-cache pages
 * mapped in the range), anon_final (pages of the range that are private
 * copies), relocated_ok (EH_RELRO: the CIE's pointer is still malloc's).
 */
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

#define F(n)                                                                                       \
    __attribute__((noinline)) static void f_##n(void)                                              \
    {                                                                                              \
        sink = malloc(16);                                                                         \
        free(sink);                                                                                \
    }
#define F16(p)                                                                                     \
    F(p##0) F(p##1) F(p##2) F(p##3) F(p##4) F(p##5) F(p##6) F(p##7) F(p##8) F(p##9) F(p##a)       \
        F(p##b) F(p##c) F(p##d) F(p##e) F(p##f)
#define F256(p)                                                                                    \
    F16(p##0) F16(p##1) F16(p##2) F16(p##3) F16(p##4) F16(p##5) F16(p##6) F16(p##7) F16(p##8)      \
        F16(p##9) F16(p##a) F16(p##b) F16(p##c) F16(p##d) F16(p##e) F16(p##f)
F256(0) F256(1) F256(2) F256(3) F256(4) F256(5) F256(6) F256(7) F256(8) F256(9) F256(a) F256(b)
    F256(c) F256(d) F256(e) F256(f)

#define P(n) f_##n,
#define P16(p)                                                                                     \
    P(p##0) P(p##1) P(p##2) P(p##3) P(p##4) P(p##5) P(p##6) P(p##7) P(p##8) P(p##9) P(p##a)       \
        P(p##b) P(p##c) P(p##d) P(p##e) P(p##f)
#define P256(p)                                                                                    \
    P16(p##0) P16(p##1) P16(p##2) P16(p##3) P16(p##4) P16(p##5) P16(p##6) P16(p##7) P16(p##8)      \
        P16(p##9) P16(p##a) P16(p##b) P16(p##c) P16(p##d) P16(p##e) P16(p##f)
static void (*const fns[])(void) = {P256(0) P256(1) P256(2) P256(3) P256(4) P256(5) P256(6)
                                        P256(7) P256(8) P256(9) P256(a) P256(b) P256(c) P256(d)
                                            P256(e) P256(f)};

static uintptr_t lo, hi, page;
static int exec_seg;

#ifdef EH_RELRO
void relro_abs_fn(void);
static const uint8_t *relro_cie; /* eh_frame_relro.S's CIE */

/* .eh_frame's start (hdr: its .eh_frame_hdr, with the encodings a GNU
 * link writes: pcrel sdata4 pointer, udata4 count, datarel sdata4 table),
 * the end of the last FDE the table lists, and relro_abs_fn's CIE. */
static int relro_span(uintptr_t hdr, uintptr_t *frame, uintptr_t *end)
{
    const uint8_t *h = (const uint8_t *)hdr;
    if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
        return -1;
    *frame = hdr + 4 + (uintptr_t)(intptr_t) * (const int32_t *)(h + 4);
    uint32_t count = *(const uint32_t *)(h + 8);
    const int32_t *tab = (const int32_t *)(h + 12);
    uintptr_t last = 0;
    for (uint32_t i = 0; i < count; i++) {
        uintptr_t fde = hdr + (uintptr_t)(intptr_t)tab[2 * i + 1];
        last = fde > last ? fde : last;
        if (hdr + (uintptr_t)(intptr_t)tab[2 * i] == (uintptr_t)relro_abs_fn)
            relro_cie = (const uint8_t *)(fde + 4 - *(const uint32_t *)(fde + 4));
    }
    *end = last + 4 + *(const uint32_t *)last;
    return relro_cie ? 0 : -1;
}
#endif

/* The range of this program's unwind tables, as eh_trim.c computes it. */
static int range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const ElfW(Phdr) *eh = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = &info->dlpi_phdr[i];
#ifdef EH_RELRO
    const ElfW(Phdr) *relro = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
            relro = &info->dlpi_phdr[i];
    uintptr_t frame, end;
    if (eh && relro && relro_span(info->dlpi_addr + eh->p_vaddr, &frame, &end) == 0) {
        uintptr_t rlo = info->dlpi_addr + relro->p_vaddr, rhi = rlo + relro->p_memsz;
        exec_seg = 2;
        lo = ((frame > rlo ? frame : rlo) + page - 1) & ~(page - 1);
        hi = (end < rhi ? end : rhi) & ~(page - 1);
    }
    return 1;
#endif
    for (int i = 0; eh && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && eh->p_vaddr >= ph->p_vaddr &&
            eh->p_vaddr < ph->p_vaddr + ph->p_filesz) {
            exec_seg = (ph->p_flags & PF_X) != 0;
            lo = (info->dlpi_addr + eh->p_vaddr + page - 1) & ~(page - 1);
            hi = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz - (exec_seg ? 16 : 0)) & ~(page - 1);
        }
    }
    return 1; /* the program itself is the first object */
}

/* Pages of [lo, hi) mapped into this process, page-cache pages (anon 0)
 * or private copies (anon 1); no allocation. */
static long present(int fd, int anon)
{
    long n = 0;
    for (uintptr_t a = lo; a < hi; a += page) {
        uint64_t e = 0;
        if (pread(fd, &e, sizeof(e), (off_t)(a / page * sizeof(e))) != (ssize_t)sizeof(e))
            return -1;
        n += (long)(e >> 63 & 1 && (e >> 61 & 1) != (uint64_t)anon);
    }
    return n;
}

int main(void)
{
    page = (uintptr_t)sysconf(_SC_PAGESIZE);
    dl_iterate_phdr(range_cb, NULL);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0 || hi <= lo) {
        fprintf(stderr, "no pagemap or no unwind table range\n");
        return 1;
    }
    size_t n = sizeof(fns) / sizeof(fns[0]), later = 256;
    for (size_t i = 0; i < n - later; i++)
        fns[i]();
#ifdef EH_RELRO
    relro_abs_fn(); /* under the relocated CIE */
#endif
    long after = present(fd, 0), now = after;
    int polls = 0;
    struct timespec ts = {0, 50000000};
    while (now != 0 && polls < 600) {
        nanosleep(&ts, NULL);
        now = present(fd, 0);
        polls++;
    }
    /* New return addresses after the pages went: read again from the
     * page cache. */
    for (size_t i = n - later; i < n; i++)
        fns[i]();
    long again = present(fd, 0), anon = present(fd, 1);
    int relocated_ok = 1;
#ifdef EH_RELRO
    relro_abs_fn();
    uint64_t ptr;
    __builtin_memcpy(&ptr, relro_cie + 18, sizeof(ptr));
    relocated_ok = ptr == (uint64_t)(uintptr_t)malloc;
#endif
    close(fd);
    printf("calls=%zu\neh_pages=%ld\neh_segment_exec=%d\npresent_after_calls=%ld\n"
           "present_final=%ld\npolls=%d\npresent_after_later_calls=%ld\nanon_final=%ld\n"
           "relocated_ok=%d\n",
           n, (long)((hi - lo) / page), exec_seg, after, now, polls, again, anon, relocated_ok);
    return 0;
}
