/* SPDX-License-Identifier: MIT
 *
 * sym_dwarf.h - DWARF lookups for one module: the function that contains
 * an address, the inlined calls inside it, and their source lines. Builds
 * the indexes libdw lacks (functions per CU, CUs without .debug_aranges)
 * once, so that each address costs a few binary searches and a walk down
 * one function. Must not: open files, read the ELF symbol table (the
 * caller falls back to it), or cache per address.
 */
#ifndef TRK_SYM_DWARF_H
#define TRK_SYM_DWARF_H

#include <elfutils/libdwfl.h>

#include "symbol/sym_util.h"
#include "symbol/symbolize.h"

struct trk_sym_dwarf;

/* Lookups in mod's DWARF, which must exist (dwfl_module_getdwarf succeeded);
 * names are interned in strs. NULL when memory runs out. */
struct trk_sym_dwarf *trk_sym_dwarf_new(Dwfl_Module *mod, struct trk_sym_strings *strs);

/* Fills out[0..max) with the frames at addr (a module address, already
 * inside the call instruction), innermost first: function, file, line and
 * inlined only. The outermost frame's function is NULL when DWARF names
 * none (the caller asks the symbol table). Returns how many; 0 when DWARF
 * knows nothing of addr. */
int trk_sym_dwarf_resolve(struct trk_sym_dwarf *d, uint64_t addr, struct trk_frame *out, int max);

void trk_sym_dwarf_free(struct trk_sym_dwarf *d);

#endif /* TRK_SYM_DWARF_H */
