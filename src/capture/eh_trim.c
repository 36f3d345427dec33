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
 * hot-patching library may have written, are never in it. The vDSO is
 * left alone.
 *
 * Must not: allocate, open descriptors (it runs on the sampler thread:
 * issue 14 item 7), or touch any other range.
 */
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/eh_trim.h"
#include "capture/events.h"
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

/* The end of the last FDE that .eh_frame_hdr (at hdr, len bytes) lists,
 * where .eh_frame follows it at once (at most 64 bytes of padding
 * between) and ends inside [.., seg_end): else 0. Reads the whole table:
 * once per object (ends[]). */
static uintptr_t fdes_end(uintptr_t hdr, uintptr_t len, uintptr_t seg_end)
{
    const int32_t *tab;
    uintptr_t eh_frame;
    uint64_t count = trk_unwind_hdr_table(hdr, &tab, &eh_frame);
    if (count == 0 || eh_frame < hdr + len || eh_frame - (hdr + len) > 64 ||
        (uintptr_t)tab + 8 * count > hdr + len)
        return 0;
    uintptr_t last = 0;
    for (uint64_t i = 0; i < count; i++) {
        uintptr_t fde = hdr + (uintptr_t)(intptr_t)tab[2 * i + 1];
        if (fde > last)
            last = fde;
    }
    if (last < eh_frame || last + 4 > seg_end)
        return 0;
    uintptr_t end = (uintptr_t)trk_unwind_entry_end((const uint8_t *)last);
    return end && end <= seg_end ? end : 0;
}

/* fdes_end per object (its header's address), from when no object was
 * unloaded since (dlpi_subs): a header's address is only reused after an
 * unload. 0: nothing to give back. Full: the rest are left alone. */
#define ENDS 1024
static struct {
    uintptr_t hdr, end;
} ends[ENDS];
static unsigned long long ends_subs;

static uintptr_t fdes_end_cached(uintptr_t hdr, uintptr_t len, uintptr_t seg_end)
{
    size_t k = (size_t)((hdr >> 4) * 0x9E3779B97F4A7C15ull >> 54); /* 10 bits: ENDS */
    for (size_t n = 0; n < ENDS; n++, k = (k + 1) % ENDS) {
        if (ends[k].hdr == hdr)
            return ends[k].end;
        if (!ends[k].hdr) {
            ends[k].hdr = hdr;
            return ends[k].end = fdes_end(hdr, len, seg_end);
        }
    }
    return 0;
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
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || eh->p_vaddr < ph->p_vaddr ||
            eh->p_vaddr >= ph->p_vaddr + ph->p_filesz)
            continue;
        if (ph->p_flags & PF_W)
            return 0;
        if (has_textrel(info))
            return 0;
        /* The first whole page after the header's start: the page it starts
         * in may hold the end of code or .rodata. Up to the end of the file
         * data: what lies past p_filesz is not the file's; in a code
         * segment, to the last FDE's end (code may follow the tables). */
        uintptr_t hdr = info->dlpi_addr + eh->p_vaddr;
        uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
        if (ph->p_flags & PF_X)
            end = fdes_end_cached(hdr, eh->p_memsz, end);
        *lo = (hdr + page - 1) & ~(page - 1);
        *hi = end & ~(page - 1);
        return *hi > *lo;
    }
    return 0;
}

struct trim_ctx {
    uintptr_t page, vdso;
};

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
    if (info->dlpi_subs != ends_subs) { /* an object went: its header's address may be reused */
        __builtin_memset(ends, 0, sizeof(ends));
        ends_subs = info->dlpi_subs;
    }
    if (trim_range(info, c->page, &lo, &hi))
        madvise((void *)lo, hi - lo, MADV_DONTNEED); /* a failure leaves them mapped, no more */
    return 0;
}

static uint64_t last_ns; /* sampler thread only */

void trk_eh_trim_tick(struct trk_thread *t)
{
    uint64_t now = trk_now_ns();
    if (now - last_ns < TRK_EH_TRIM_PERIOD_NS)
        return;
    last_ns = now;
    struct trim_ctx c = {(uintptr_t)sysconf(_SC_PAGESIZE), (uintptr_t)getauxval(AT_SYSINFO_EHDR)};
    if (c.page == 0 || (c.page & (c.page - 1)))
        return;
    trk_dl_enter(t); /* a fork must not catch us inside the loader's lock */
    dl_iterate_phdr(trim_cb, &c);
    trk_dl_leave(t);
}
