/* SPDX-License-Identifier: MIT
 *
 * eh_trim.c - gives back the pages of the loaded objects' unwind tables
 * (.eh_frame_hdr, .eh_frame and what follows them in their read-only
 * segment) that stack walking paged into the process.
 *
 * Why: a plain run never reads those tables; ours does on every new return
 * address (the rule cache of unwind_cfi.c, libunwind). On `import torch`
 * that was ~14 MB of file pages (libtorch_cpu's 1.7 MB .eh_frame_hdr and
 * 9.9 MB .eh_frame alone gave 6.6 MB) counted in the program's peak RSS for
 * the rest of its life. madvise(MADV_DONTNEED) unmaps them from this
 * process; they stay in the page cache, and a later read takes a minor
 * fault. Only the rule cache's misses read them again. Done by the sampler
 * thread every TRK_EH_TRIM_PERIOD_NS, never at exit: dl_iterate_phdr there
 * could wait forever on a thread of the program stopped inside the
 * loader's lock (the pages of the last period were ~1.5 MB on
 * `import torch`, not worth that).
 *
 * Safe because the range is clean file data: MADV_DONTNEED on a private
 * mapping throws away private changes, so only pages that can never have
 * been written are given back, and only of objects without text
 * relocations (the loader would have written into them). In a read-only
 * segment: from the first whole page after .eh_frame_hdr to the end of the
 * segment (the unwind tables, .gcc_except_table, nothing the program
 * writes). In a code segment (a layout without -z separate-code, as
 * CUDA's libraries have: their tables were ~18 MB of `import torch` 2.11's
 * peak RSS, bench/results_gpu.md): only the whole pages between the
 * header's start and the end of the last FDE it lists, where .eh_frame
 * follows the header at once; code pages, which a debugger or a
 * hot-patching library may have written, are never in it. A .eh_frame in
 * the writable segment, under PT_GNU_RELRO (trim_relro): only its pages
 * that pagemap shows still hold the file's bytes. The vDSO is left alone.
 *
 * Must not: allocate, open descriptors (it runs on the sampler thread:
 * issue 14 item 7; pagemap is opened with the writer, fds.h), or touch any
 * other range.
 */
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/eh_trim.h"
#include "capture/events.h"
#include "capture/fds.h"
#include "capture/thread.h"
#include "capture/unwind.h"

/* Whether the object's dynamic section asks for text relocations. */
static int has_textrel(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_DYNAMIC)
            continue;
        const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        for (; d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)))
                return 1;
    }
    return 0;
}

/* The PT_LOAD whose file data holds the object's address a, or NULL. */
static const ElfW(Phdr) * load_of(const struct dl_phdr_info *info, uintptr_t a)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_filesz)
            return ph;
    }
    return NULL;
}

/* Per object (its header's address), from when no object was unloaded
 * since (dlpi_subs): a header's address is only reused after an unload.
 * frame, end: where .eh_frame starts and where the last FDE that
 * .eh_frame_hdr lists ends (end 0: unknown; read: looked for). relro:
 * whether .eh_frame is in a writable segment (0 not known yet, 1 no, 2
 * yes). seen: the ticks that found the object (saturating). Full: the rest
 * are left alone. */
#define SPANS 1024
static struct span {
    uintptr_t hdr, frame, end;
    uint8_t read, relro, seen;
} spans[SPANS];
static unsigned long long spans_subs;

/* Reads the header's whole table, within the header (len bytes) and the
 * file data of the segment holding .eh_frame: once per object. */
static void span_read(const struct dl_phdr_info *info, uintptr_t len, struct span *s)
{
    const int32_t *tab;
    uintptr_t frame;
    s->read = 1;
    uint64_t count = trk_unwind_hdr_table(s->hdr, &tab, &frame);
    const ElfW(Phdr) *seg = count ? load_of(info, frame) : NULL;
    if (!seg || (uintptr_t)tab + 8 * count > s->hdr + len)
        return;
    uintptr_t seg_end = info->dlpi_addr + seg->p_vaddr + seg->p_filesz, last = 0;
    for (uint64_t i = 0; i < count; i++) {
        uintptr_t fde = s->hdr + (uintptr_t)(intptr_t)tab[2 * i + 1];
        if (fde > last)
            last = fde;
    }
    if (last < frame || last + 4 > seg_end)
        return;
    uintptr_t end = (uintptr_t)trk_unwind_entry_end((const uint8_t *)last);
    if (end && end <= seg_end) {
        s->frame = frame;
        s->end = end;
    }
}

/* The object's entry (a new one zeroed), or NULL when the table is full. */
static struct span *span_of(uintptr_t hdr)
{
    size_t k = (size_t)((hdr >> 4) * 0x9E3779B97F4A7C15ull >> 54); /* 10 bits: SPANS */
    for (size_t n = 0; n < SPANS; n++, k = (k + 1) % SPANS) {
        struct span *s = &spans[k];
        if (!s->hdr)
            s->hdr = hdr;
        else if (s->hdr != hdr)
            continue;
        return s;
    }
    return NULL;
}

/* The range to give back of one object: [*lo, *hi), or 0 if none. */
static int trim_range(const struct dl_phdr_info *info, uintptr_t page, uintptr_t *lo, uintptr_t *hi)
{
    const ElfW(Phdr) *eh = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = &info->dlpi_phdr[i];
    if (!eh)
        return 0;
    uintptr_t hdr = info->dlpi_addr + eh->p_vaddr;
    const ElfW(Phdr) *ph = load_of(info, hdr);
    if (!ph || (ph->p_flags & PF_W) || has_textrel(info))
        return 0;
    /* The first whole page after the header's start: the page it starts in
     * may hold the end of code or .rodata. Up to the end of the file data:
     * what lies past p_filesz is not the file's; in a code segment, to the
     * last FDE's end (code may follow the tables). */
    uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
    if (ph->p_flags & PF_X) {
        /* .eh_frame right after the header (at most 64 bytes of padding
         * between), in this segment */
        struct span *sp = span_of(hdr);
        if (sp && !sp->read)
            span_read(info, eh->p_memsz, sp);
        int after = sp && sp->end && sp->frame >= hdr + eh->p_memsz &&
                    sp->frame - (hdr + eh->p_memsz) <= 64 && sp->end <= end;
        end = after ? sp->end : 0;
    }
    *lo = (hdr + page - 1) & ~(page - 1);
    *hi = end & ~(page - 1);
    return *hi > *lo;
}

struct trim_ctx {
    uintptr_t page, vdso;
    int pagemap; /* /proc/self/pagemap (fds.h), or -1 */
};

/* Pages of [lo, hi) that hold only the file's bytes, given back a run at a
 * time: present and a page-cache page (pagemap.txt in the kernel's docs:
 * bit 63 present, bit 61 file page). A page the loader relocated is an
 * anonymous copy, and MADV_DONTNEED would throw its relocations away: it
 * stays, as does every page whose entry cannot be read. */
static void give_back_file_pages(const struct trim_ctx *c, uintptr_t lo, uintptr_t hi)
{
    uint64_t pm[256];
    while (lo < hi) {
        size_t n = (size_t)((hi - lo) / c->page);
        n = n < 256 ? n : 256;
        if (pread(c->pagemap, pm, n * 8, (off_t)(lo / c->page * 8)) != (ssize_t)(n * 8))
            return;
        size_t run = 0; /* file pages in a row, ending before page i */
        for (size_t i = 0; i <= n; i++) {
            if (i < n && (pm[i] >> 63) && (pm[i] >> 61 & 1)) {
                run++;
                continue;
            }
            if (run)
                madvise((void *)(lo + (i - run) * c->page), run * c->page, MADV_DONTNEED);
            run = 0;
        }
        lo += n * c->page;
    }
}

/* .eh_frame in a writable segment, after the loader made it read-only
 * (PT_GNU_RELRO): libnvrtc and libnvJitLink of CUDA 13 have it so, with
 * .eh_frame_hdr in a read-only segment: 7 MB of `import torch` 2.11's
 * peak RSS (bench/results_gpu.md). Such a .eh_frame is writable because
 * some of its entries hold absolute addresses, relocated by the loader into
 * anonymous copies of their pages: only its page-cache pages go back
 * (give_back_file_pages), and only of an object an earlier tick saw, whose
 * relocation is over (the loader relocates an object in the dlopen that
 * listed it, and then makes the range read-only: no write can come later). */
static void trim_relro(const struct dl_phdr_info *info, const struct trim_ctx *c)
{
    const ElfW(Phdr) *eh = NULL, *relro = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            eh = &info->dlpi_phdr[i];
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO)
            relro = &info->dlpi_phdr[i];
    }
    if (!eh || !relro || c->pagemap < 0)
        return;
    struct span *sp = span_of(info->dlpi_addr + eh->p_vaddr);
    if (!sp || sp->relro == 1)
        return;
    sp->seen += sp->seen < 2;
    if (!sp->relro) {
        /* Decided from the header's first words, once, and only once an
         * unwinder has read them (their page is mapped): reading them
         * ourselves would map a page of every object in for nothing. */
        const int32_t *tab;
        uintptr_t frame;
        uint64_t e = 0;
        if (pread(c->pagemap, &e, 8, (off_t)(sp->hdr / c->page * 8)) != 8 || !(e >> 63))
            return;
        const ElfW(Phdr) *seg =
            trk_unwind_hdr_table(sp->hdr, &tab, &frame) ? load_of(info, frame) : NULL;
        sp->relro = seg && (seg->p_flags & PF_W) ? 2 : 1;
        if (sp->relro == 1)
            return;
    }
    if (!sp->read)
        span_read(info, eh->p_memsz, sp);
    if (!sp->end || sp->seen < 2)
        return;
    /* What the loader protects: from the start's page to the end's page,
     * rounded down (glibc's _dl_protect_relro). */
    uintptr_t rlo = (info->dlpi_addr + relro->p_vaddr) & ~(c->page - 1);
    uintptr_t rhi = (info->dlpi_addr + relro->p_vaddr + relro->p_memsz) & ~(c->page - 1);
    uintptr_t lo = ((sp->frame > rlo ? sp->frame : rlo) + c->page - 1) & ~(c->page - 1);
    uintptr_t hi = (sp->end < rhi ? sp->end : rhi) & ~(c->page - 1);
    if (hi > lo)
        give_back_file_pages(c, lo, hi);
}

/* The vDSO's pages are the kernel's: its ELF header is where AT_SYSINFO_EHDR
 * says, at the start of its first segment. */
static int is_vdso(const struct dl_phdr_info *info, uintptr_t vdso)
{
    for (int i = 0; vdso && i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_offset == 0 &&
            info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == vdso)
            return 1;
    return 0;
}

static int trim_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct trim_ctx *c = arg;
    uintptr_t lo, hi;
    if (is_vdso(info, c->vdso))
        return 0;
    if (info->dlpi_subs != spans_subs) { /* an object went: its header's address may be reused */
        __builtin_memset(spans, 0, sizeof(spans));
        spans_subs = info->dlpi_subs;
    }
    if (trim_range(info, c->page, &lo, &hi))
        madvise((void *)lo, hi - lo, MADV_DONTNEED); /* a failure leaves them mapped, no more */
    trim_relro(info, c);
    return 0;
}

static uint64_t last_ns; /* sampler thread only */

void trk_eh_trim_tick(struct trk_thread *t)
{
    uint64_t now = trk_now_ns();
    if (now - last_ns < TRK_EH_TRIM_PERIOD_NS)
        return;
    last_ns = now;
    struct trim_ctx c = {(uintptr_t)sysconf(_SC_PAGESIZE), (uintptr_t)getauxval(AT_SYSINFO_EHDR),
                         trk_fd_pin(TRK_FD_PAGEMAP)};
    if (c.page != 0 && !(c.page & (c.page - 1))) {
        trk_dl_enter(t); /* a fork must not catch us inside the loader's lock */
        dl_iterate_phdr(trim_cb, &c);
        trk_dl_leave(t);
    }
    trk_fd_unpin(TRK_FD_PAGEMAP);
}
