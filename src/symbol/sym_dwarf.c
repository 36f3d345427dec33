/* SPDX-License-Identifier: MIT
 *
 * sym_dwarf.c - address to (function, file, line) frames with inlined calls
 * expanded, over libdw. Owns the per-module indexes: concrete functions of
 * each CU (built on the CU's first use) and, for DWARF without
 * .debug_aranges, the CUs' own ranges. Must not: trust the DWARF (bad
 * forms, missing attributes and odd nesting mean fewer details, never a
 * crash), or scan a whole CU per address.
 *
 * dwarf_getscopes would do the walk, but it visits the whole CU per address
 * and, for inlined code, returns the abstract origin's scopes instead of the
 * physical callers; here the CU's functions are indexed once, then one
 * function is walked down to the innermost block holding the address.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/sym_dwarf.h"

/* Inline nesting deeper than this is cut (innermost frames dropped). */
#define MAX_DEPTH 64

/* [lo, hi): the head of both kinds of index entries, for range_find. */
struct span {
    uint64_t lo, hi;
};

/* A function's address range inside one CU. */
struct fn_range {
    struct span s;
    Dwarf_Die die;
};

/* The functions of one CU, sorted by lo. */
struct cu_funcs {
    Dwarf *dbg; /* NULL: an empty hash slot */
    Dwarf_Off off;
    struct fn_range *r;
    size_t n;
};

/* A CU's address range, for DWARF without .debug_aranges (clang's default),
 * which libdwfl 0.188 cannot search. */
struct cu_range {
    struct span s;
    Dwarf_Die cudie;
};

struct trk_sym_dwarf {
    Dwfl_Module *mod;
    struct trk_sym_strings *strs;
    Dwarf_Addr bias;      /* DWARF address = module address - bias */
    struct cu_funcs *cus; /* open addressing on (dbg, off) */
    size_t cus_cap, cus_count;
    int cu_ranges_built;
    struct cu_range *cu_ranges;
    size_t ncu_ranges;
};

struct trk_sym_dwarf *trk_sym_dwarf_new(Dwfl_Module *mod, struct trk_sym_strings *strs)
{
    struct trk_sym_dwarf *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->mod = mod;
    d->strs = strs;
    if (!dwfl_module_getdwarf(mod, &d->bias))
        d->bias = 0;
    return d;
}

void trk_sym_dwarf_free(struct trk_sym_dwarf *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->cus_cap; i++)
        free(d->cus[i].r);
    free(d->cus);
    free(d->cu_ranges);
    free(d);
}

/* ---- Sorted ranges ------------------------------------------------------------ */

/* Binary search shared by both indexes: the entry of v (n entries of
 * `size` bytes, each starting with a span; sorted by lo) that covers pc.
 * Ranges rarely nest, so a few steps back settle overlaps. */
static const void *range_find(const void *v, size_t n, size_t size, uint64_t pc)
{
    const unsigned char *b = v;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (((const struct span *)(const void *)(b + mid * size))->lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, steps = 0; i > 0 && steps < 8; i--, steps++) {
        const struct span *e = (const void *)(b + (i - 1) * size);
        if (pc < e->hi)
            return e;
    }
    return NULL;
}

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* ---- CUs without .debug_aranges ---------------------------------------------- */

static void build_cu_ranges(struct trk_sym_dwarf *d)
{
    d->cu_ranges_built = 1;
    Dwarf_Addr bias;
    Dwarf *dbg = dwfl_module_getdwarf(d->mod, &bias);
    if (!dbg)
        return;
    struct cu_range *v = NULL;
    size_t n = 0, cap = 0;
    Dwarf_CU *cu = NULL, *next;
    Dwarf_Half version;
    uint8_t type;
    Dwarf_Die cudie, subdie;
    memset(&subdie, 0, sizeof(subdie));
    while (dwarf_get_units(dbg, cu, &next, &version, &type, &cudie, &subdie) == 0) {
        cu = next;
        if (type != DW_UT_compile && type != DW_UT_skeleton)
            continue; /* partial and type units hold no code */
        /* A skeleton's functions are in its split unit, when found. */
        Dwarf_Die use = type == DW_UT_skeleton && subdie.cu ? subdie : cudie;
        Dwarf_Addr base, start, end;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0) {
            if (start >= end || start == 0)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                struct cu_range *t = realloc(v, cap * sizeof(*t));
                if (!t) {
                    free(v);
                    return;
                }
                v = t;
            }
            v[n++] = (struct cu_range){{start, end}, use};
        }
        memset(&subdie, 0, sizeof(subdie));
    }
    if (n)
        qsort(v, n, sizeof(*v), span_cmp);
    d->cu_ranges = v;
    d->ncu_ranges = n;
}

/* The CU holding module address addr, and the matching DWARF address. */
static int cu_at(struct trk_sym_dwarf *d, uint64_t addr, Dwarf_Die *cudie, Dwarf_Addr *pc)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cup = dwfl_module_addrdie(d->mod, addr, &bias);
    if (cup) {
        *cudie = *cup;
        *pc = addr - bias;
        return 1;
    }
    if (!d->cu_ranges_built)
        build_cu_ranges(d);
    *pc = addr - d->bias;
    const struct cu_range *r = range_find(d->cu_ranges, d->ncu_ranges, sizeof(*d->cu_ranges), *pc);
    if (!r)
        return 0;
    *cudie = r->cudie;
    return 1;
}

/* ---- Functions of a CU ---------------------------------------------------------- */

struct fn_vec {
    struct fn_range *r;
    size_t n, cap;
    int oom;
};

static void fn_push(struct fn_vec *v, uint64_t lo, uint64_t hi, const Dwarf_Die *die)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        struct fn_range *r = realloc(v->r, cap * sizeof(*r));
        if (!r) {
            v->oom = 1;
            return;
        }
        v->r = r;
        v->cap = cap;
    }
    v->r[v->n++] = (struct fn_range){{lo, hi}, *die};
}

/* Collects the address ranges of the concrete functions among parent's
 * children; C++ nests them in namespaces (and sometimes classes). */
static void index_scope(struct fn_vec *v, Dwarf_Die *parent, int depth)
{
    Dwarf_Die c;
    if (depth > 32 || dwarf_child(parent, &c) != 0)
        return;
    do {
        switch (dwarf_tag(&c)) {
        case DW_TAG_subprogram: {
            Dwarf_Addr base, start, end;
            ptrdiff_t off = 0;
            while ((off = dwarf_ranges(&c, off, &base, &start, &end)) > 0)
                if (start < end && start != 0) /* 0: dropped by the linker */
                    fn_push(v, start, end, &c);
            break;
        }
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            index_scope(v, &c, depth + 1);
            break;
        default:
            break;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
}

static int cus_grow(struct trk_sym_dwarf *d)
{
    size_t cap = d->cus_cap ? d->cus_cap * 2 : 64;
    struct cu_funcs *t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < d->cus_cap; i++) {
        if (!d->cus[i].dbg)
            continue;
        size_t j = trk_sym_mix64(d->cus[i].off ^ (uintptr_t)d->cus[i].dbg) & (cap - 1);
        while (t[j].dbg)
            j = (j + 1) & (cap - 1);
        t[j] = d->cus[i];
    }
    free(d->cus);
    d->cus = t;
    d->cus_cap = cap;
    return 0;
}

static const struct cu_funcs *cu_funcs(struct trk_sym_dwarf *d, Dwarf_Die *cudie)
{
    Dwarf *dbg = dwarf_cu_getdwarf(cudie->cu);
    Dwarf_Off off = dwarf_dieoffset(cudie);
    if (!dbg || ((d->cus_count + 1) * 2 > d->cus_cap && cus_grow(d) != 0))
        return NULL;
    size_t j = trk_sym_mix64(off ^ (uintptr_t)dbg) & (d->cus_cap - 1);
    while (d->cus[j].dbg) {
        if (d->cus[j].dbg == dbg && d->cus[j].off == off)
            return &d->cus[j];
        j = (j + 1) & (d->cus_cap - 1);
    }
    struct fn_vec v = {0};
    index_scope(&v, cudie, 0);
    if (v.oom) {
        free(v.r);
        return NULL;
    }
    if (v.n)
        qsort(v.r, v.n, sizeof(*v.r), span_cmp);
    d->cus[j] = (struct cu_funcs){dbg, off, v.r, v.n};
    d->cus_count++;
    return &d->cus[j];
}

/* ---- Walking down one function -------------------------------------------------- */

static int is_block(int tag)
{
    return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
           tag == DW_TAG_try_block || tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt;
}

/* The child block of parent that contains pc. A lexical block without
 * addresses of its own is looked through (its children may have some). */
static int child_at(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out, int budget)
{
    Dwarf_Die c;
    if (dwarf_child(parent, &c) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&c);
        if (!is_block(tag))
            continue;
        if (dwarf_hasattr(&c, DW_AT_low_pc) || dwarf_hasattr(&c, DW_AT_ranges)) {
            if (dwarf_haspc(&c, pc) == 1) {
                *out = c;
                return 1;
            }
        } else if (tag == DW_TAG_lexical_block && budget > 0 && dwarf_haschildren(&c) > 0 &&
                   child_at(&c, pc, out, budget - 1)) {
            return 1;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
    return 0;
}

/* The demangled linkage name when it is a C++ one (it carries the scope and
 * the parameters the plain name lacks), else the plain name; looks through
 * abstract_origin and specification. A C linkage name is an asm label
 * (glibc's __GI_setlocale for setlocale): the plain name reads better. */
static const char *die_name(struct trk_sym_dwarf *d, Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
    if (!link)
        link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
    if (link && link[0] == '_' && link[1] == 'Z')
        return trk_sym_intern_demangled(d->strs, link);
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
    return trk_sym_intern(d->strs, name ? name : link);
}

static void set_frame(struct trk_frame *f, const char *function, const char *file, uint32_t line,
                      uint32_t inlined)
{
    f->function = function;
    f->file = file;
    f->line = line;
    f->inlined = inlined;
}

int trk_sym_dwarf_resolve(struct trk_sym_dwarf *d, uint64_t addr, struct trk_frame *out, int max)
{
    Dwarf_Die cudie;
    Dwarf_Addr pc;
    if (max < 1 || !cu_at(d, addr, &cudie, &pc))
        return 0;

    const char *file = NULL;
    int line = 0;
    Dwarf_Line *dl = dwarf_getsrc_die(&cudie, pc);
    if (dl) {
        file = trk_sym_intern(d->strs, dwarf_linesrc(dl, NULL, NULL));
        if (dwarf_lineno(dl, &line) != 0 || line < 0)
            line = 0;
    }

    /* The function, then each inlined call down to the innermost. */
    Dwarf_Die chain[MAX_DEPTH];
    int depth = 0;
    const struct cu_funcs *cf = cu_funcs(d, &cudie);
    const struct fn_range *fn = cf ? range_find(cf->r, cf->n, sizeof(*cf->r), pc) : NULL;
    if (fn) {
        Dwarf_Die cur = fn->die, next;
        chain[depth++] = cur;
        while (depth < max && depth < MAX_DEPTH && child_at(&cur, pc, &next, 8)) {
            if (dwarf_tag(&next) == DW_TAG_inlined_subroutine)
                chain[depth++] = next;
            cur = next;
        }
    }
    if (depth == 0) {
        /* Lines but no function (assembly, say): the caller names it. */
        if (!file)
            return 0;
        set_frame(&out[0], NULL, file, (uint32_t)line, 0);
        return 1;
    }

    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    int n = 0;
    for (int i = depth - 1; i >= 0; i--, n++) {
        uint32_t inlined = dwarf_tag(&chain[i]) == DW_TAG_inlined_subroutine;
        const char *name = die_name(d, &chain[i]);
        if (i == depth - 1) {
            set_frame(&out[n], name, file, (uint32_t)line, inlined);
            continue;
        }
        /* An outer frame stands at the call of the inlined scope within it. */
        Dwarf_Attribute a;
        Dwarf_Word cfile = 0, cline = 0;
        const char *src = NULL;
        if (dwarf_formudata(dwarf_attr(&chain[i + 1], DW_AT_call_file, &a), &cfile) == 0) {
            if (!files && dwarf_getsrcfiles(&cudie, &files, &nfiles) != 0)
                files = NULL;
            if (files && cfile < nfiles)
                src = trk_sym_intern(d->strs, dwarf_filesrc(files, cfile, NULL, NULL));
        }
        if (dwarf_formudata(dwarf_attr(&chain[i + 1], DW_AT_call_line, &a), &cline) != 0 ||
            cline > UINT32_MAX)
            cline = 0;
        set_frame(&out[n], name, src, (uint32_t)cline, inlined);
    }
    return n;
}
