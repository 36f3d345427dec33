/* SPDX-License-Identifier: MIT
 *
 * malloc_owner.c - whose malloc the program calls. An executable (or a
 * library preloaded ahead of us) that defines malloc itself comes first in
 * the symbol search order: LD_PRELOAD cannot interpose it, so the program's
 * heap is not seen, and libc's own calls go to that malloc too. Then the
 * tracker must not make libc allocate for it (dlerror formats its message
 * with asprintf, which reallocs through libc's realloc a block the
 * program's malloc made: a crash at start-up, issue 11), so the probes that
 * may leave a dl error (Python, GPU, other allocators) are skipped, and the
 * capture says that its heap figures are not the program's
 * (TRK_OPT_HEAP_UNSEEN, docs/FORMAT.md §2).
 *
 * Must not: allocate, or call anything that may fail a dl lookup: dlsym of
 * "malloc" always succeeds, and dladdr1 only reads the loader's maps.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "preload/preload.h"

static _Atomic int owner_state; /* 0 unknown, 1 ours, 2 another object's */

static int find_owner(const char **who)
{
    void *first = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info, self;
    struct link_map *lm = NULL;
    *who = NULL;
    if (!first || !dladdr1(first, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return 1;
    /* A non-PIE executable that takes malloc's address exports its PLT
     * stub under the name, undefined (SHN_UNDEF) but with an address
     * (Debian's /usr/bin/python3.11): dlsym and every library bind to the
     * stub, which jumps to the first real definition, ours. Only a defined
     * symbol named malloc starting exactly there is another malloc. */
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(first, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        sym->st_shndx == SHN_UNDEF || !info.dli_sname || strcmp(info.dli_sname, "malloc") != 0 ||
        info.dli_saddr != first)
        return 1;
    /* Our own object: the one this function is in (&malloc here would be
     * the interposed one, bound through the GOT). */
    if (!dladdr((void *)find_owner, &self) || info.dli_fbase == self.dli_fbase)
        return 1;
    *who = lm->l_name && lm->l_name[0] ? lm->l_name : NULL;
    return 2;
}

bool trk_malloc_foreign(void)
{
    int s = atomic_load_explicit(&owner_state, memory_order_relaxed);
    if (TRK_LIKELY(s))
        return s == 2;
    const char *who;
    int was = trk_guard_enter_internal();
    s = find_owner(&who);
    trk_guard_leave(was);
    int expect = 0;
    if (atomic_compare_exchange_strong(&owner_state, &expect, s) && s == 2)
        trk_log("warning: ", who ? who : "the executable itself",
                " defines malloc ahead of libtracker.so (LD_PRELOAD cannot interpose it): the "
                "program's heap allocations are not seen, and the capture says so");
    return s == 2;
}
