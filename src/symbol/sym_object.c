/* SPDX-License-Identifier: MIT
 *
 * sym_object.c - opens one object file through libdwfl (at most once),
 * refuses it when it no longer matches the capture, lets elfutils find its
 * separate debug info, and maps file addresses to frames: DWARF first
 * (sym_dwarf.c), then the ELF symbol table, indexed here. Must not: trust a
 * file the capture does not vouch for, or fail on odd ELF (anything
 * unexpected degrades to fewer details, never to a crash or a wrong name).
 *
 * Each object gets its own Dwfl with the file reported at bias 0, so that
 * addresses are plain file vaddrs whatever the load bias in the capture,
 * and a file loaded at several addresses is still opened once. The symbol
 * table is sorted once: libdwfl's own lookup scans it all per address.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbol/sym_dwarf.h"
#include "symbol/sym_object.h"

enum obj_state { OBJ_NEW, OBJ_READY, OBJ_BAD };

/* An ELF symbol covering [lo, hi). */
struct sym_ent {
    uint64_t lo, hi;  /* hi 0: a label, ending at the next symbol or at cap */
    uint64_t cap;     /* a label's section end */
    const char *name; /* raw, points into libdwfl's string table */
    int rank;         /* lower is preferred among symbols at the same address */
};

struct trk_sym_obj {
    struct trk_sym_ctx *ctx;
    const char *path;
    uint8_t buildid[64];
    uint32_t buildid_len;
    uint32_t nseg;
    uint64_t seg_vaddr[16], seg_memsz[16];
    int pseudo;
    enum obj_state state;
    Dwfl_Callbacks cb;
    Dwfl *dwfl;
    Dwfl_Module *mod;
    struct trk_sym_dwarf *dwarf; /* NULL: no DWARF found */
    int syms_built;
    struct sym_ent *syms;
    size_t nsyms;
};

/* ---- Warnings -------------------------------------------------------------- */

void trk_sym_warn(struct trk_sym_ctx *ctx, const char *msg)
{
    if (!ctx->warn)
        return;
    const char *m = trk_sym_intern(&ctx->strings, msg);
    if (m) {
        for (size_t i = 0; i < ctx->nwarned; i++)
            if (ctx->warned[i] == m)
                return;
        if (ctx->nwarned == ctx->warned_cap) {
            size_t cap = ctx->warned_cap ? ctx->warned_cap * 2 : 8;
            const char **w = realloc(ctx->warned, cap * sizeof(*w));
            if (w) {
                ctx->warned = w;
                ctx->warned_cap = cap;
            }
        }
        if (ctx->nwarned < ctx->warned_cap)
            ctx->warned[ctx->nwarned++] = m;
    }
    ctx->warn(ctx->warn_ctx, msg);
}

static void obj_warn(struct trk_sym_obj *o, const char *what)
{
    char msg[4200];
    snprintf(msg, sizeof(msg), "%s: %s; its frames are shown as module+offset", o->path, what);
    trk_sym_warn(o->ctx, msg);
}

/* ---- Creation -------------------------------------------------------------- */

struct trk_sym_obj *trk_sym_obj_new(struct trk_sym_ctx *ctx, const char *path,
                                    const struct trk_module *m, int pseudo)
{
    struct trk_sym_obj *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->ctx = ctx;
    o->path = path;
    o->pseudo = pseudo;
    o->buildid_len = m->buildid_len <= sizeof(o->buildid) ? m->buildid_len : 0;
    memcpy(o->buildid, m->buildid, o->buildid_len);
    o->nseg = m->nseg <= 16 ? m->nseg : 16;
    for (uint32_t i = 0; i < o->nseg; i++) {
        o->seg_vaddr[i] = m->seg[i].vaddr;
        o->seg_memsz[i] = m->seg[i].memsz;
    }
    o->state = OBJ_NEW;
    return o;
}

int trk_sym_obj_is(const struct trk_sym_obj *o, const char *path, const struct trk_module *m)
{
    return o->path == path && o->buildid_len == m->buildid_len &&
           memcmp(o->buildid, m->buildid, o->buildid_len) == 0;
}

void trk_sym_obj_free(struct trk_sym_obj *o)
{
    if (!o)
        return;
    if (o->dwfl)
        dwfl_end(o->dwfl);
    trk_sym_dwarf_free(o->dwarf);
    free(o->syms);
    free(o);
}

/* ---- Opening --------------------------------------------------------------- */

/* Opens a file the capture names, only if it is a regular file: the path may
 * now be a FIFO (open would wait for a writer forever, hence O_NONBLOCK) or a
 * device. Symlinks are followed: /lib/.../libc.so.6 is one. Returns the fd,
 * or -1 with errno set (EINVAL: not a regular file). */
static int open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0)
        err = errno;
    else if (S_ISDIR(st.st_mode))
        err = EISDIR;
    else if (!S_ISREG(st.st_mode))
        err = EINVAL;
    if (err) {
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* The build-id of the ELF file open at fd; 0 when it has none. Leaves fd's
 * position alone (libelf reads with pread). */
static size_t fd_build_id(int fd, uint8_t *out, size_t max)
{
    size_t n = 0;
    elf_version(EV_CURRENT); /* this may run before any dwfl_begin did it */
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf)
        return 0;
    Elf_Scn *scn = NULL;
    while (n == 0 && (scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t off = 0, name_off, desc_off;
        GElf_Nhdr nh;
        while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0 && nh.n_descsz <= max) {
                memcpy(out, (char *)d->d_buf + desc_off, nh.n_descsz);
                n = nh.n_descsz;
                break;
            }
        }
    }
    elf_end(elf);
    return n;
}

/* The file was deleted or replaced, but the capture's build-id may still
 * find its debug file (which has symbols, DWARF and the program headers):
 * <dir>/.build-id/xx/rest[.debug] under each debug root. Returns an open
 * fd of a file whose build-id is the capture's, or -1. */
static int open_by_build_id(struct trk_sym_obj *o, char *found, size_t foundlen)
{
    if (o->buildid_len == 0)
        return -1;
    char hex[2 * sizeof(o->buildid) + 1];
    for (uint32_t i = 0; i < o->buildid_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", o->buildid[i]);
    for (size_t d = 0; d < o->ctx->ndebug_dirs; d++) {
        for (int debug = 0; debug < 2; debug++) {
            snprintf(found, foundlen, "%s/.build-id/%.2s/%s%s", o->ctx->debug_dirs[d], hex, hex + 2,
                     debug ? ".debug" : "");
            int fd = open_regular(found);
            if (fd < 0)
                continue;
            uint8_t id[64];
            size_t n = fd_build_id(fd, id, sizeof(id));
            if (n == o->buildid_len && memcmp(id, o->buildid, n) == 0)
                return fd;
            close(fd);
        }
    }
    return -1;
}

/* Without a build-id in the capture, the PT_LOAD layout is the only check
 * left that the file is still the one that was loaded. */
static int segments_match(struct trk_sym_obj *o)
{
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(o->mod, &bias);
    size_t phnum;
    if (!elf || elf_getphdrnum(elf, &phnum) != 0)
        return 0;
    uint32_t k = 0;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (k >= o->nseg)
            return k == 16; /* the capture keeps 16 at most */
        if (ph.p_vaddr != o->seg_vaddr[k] || ph.p_memsz != o->seg_memsz[k])
            return 0;
        k++;
    }
    return k == o->nseg;
}

static void obj_open(struct trk_sym_obj *o)
{
    o->state = OBJ_BAD;
    if (o->pseudo || !o->path || !o->path[0])
        return;
    char path[4096];
    snprintf(path, sizeof(path), "%s", o->path);
    int fd = open_regular(path);
    if (fd < 0) {
        int err = errno;
        fd = open_by_build_id(o, path, sizeof(path));
        if (fd < 0) {
            char what[300];
            if (err == EINVAL)
                snprintf(what, sizeof(what), "not a regular file");
            else
                snprintf(what, sizeof(what), "cannot open (%s)", strerror(err));
            obj_warn(o, what);
            return;
        }
    }

    o->cb.find_elf = dwfl_build_id_find_elf;
    o->cb.find_debuginfo = dwfl_standard_find_debuginfo;
    o->cb.section_address = dwfl_offline_section_address;
    o->cb.debuginfo_path = &o->ctx->debuginfo_path;
    o->dwfl = dwfl_begin(&o->cb);
    if (!o->dwfl) {
        close(fd);
        return;
    }
    dwfl_report_begin(o->dwfl);
    /* Bias 0 (add_p_vaddr): the module's addresses are its own vaddrs. libdwfl
     * takes fd over. */
    o->mod = dwfl_report_elf(o->dwfl, o->path, path, fd, 0, true);
    dwfl_report_end(o->dwfl, NULL, NULL);
    if (!o->mod) {
        char what[300];
        snprintf(what, sizeof(what), "not a usable ELF file (%s)", dwfl_errmsg(-1));
        obj_warn(o, what);
        return;
    }

    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(o->mod, &bits, &vaddr);
    if (o->buildid_len > 0) {
        if (n != (int)o->buildid_len || memcmp(bits, o->buildid, o->buildid_len) != 0) {
            obj_warn(o, "build-id differs from the capture (file changed since recording)");
            return;
        }
    } else if (o->nseg > 0 && !segments_match(o)) {
        obj_warn(o, "program headers differ from the capture (file changed since recording)");
        return;
    }

    Dwarf_Addr bias;
    if (dwfl_module_getdwarf(o->mod, &bias))
        o->dwarf = trk_sym_dwarf_new(o->mod, &o->ctx->strings);
    o->state = OBJ_READY;
}

/* ---- ELF symbol table ------------------------------------------------------ */

static int sym_cmp(const void *a, const void *b)
{
    const struct sym_ent *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->rank - y->rank;
}

/* Functions and labels, sorted, one per address. A label without a size
 * ends at the next symbol or at the end of its section. */
static void build_symbols(struct trk_sym_obj *o)
{
    o->syms_built = 1;
    int n = dwfl_module_getsymtab(o->mod);
    if (n <= 1)
        return;
    struct sym_ent *v = malloc((size_t)n * sizeof(*v));
    if (!v)
        return;
    size_t k = 0;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf = NULL;
        Dwarf_Addr bias = 0;
        const char *name = dwfl_module_getsym_info(o->mod, i, &sym, &addr, &shndx, &elf, &bias);
        if (!name || !name[0] || shndx == SHN_UNDEF || shndx == (GElf_Word)-1)
            continue;
        int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
            continue;
        if (addr == 0 || sym.st_shndx == SHN_ABS)
            continue;
        uint64_t cap = 0;
        if (sym.st_size == 0) {
            /* A label: only in code, and never past its section. */
            GElf_Shdr sh;
            Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
            if (scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR))
                cap = sh.sh_addr + sh.sh_size + bias;
            if (cap <= addr)
                continue;
        }
        v[k].lo = addr;
        v[k].hi = sym.st_size ? addr + sym.st_size : 0;
        v[k].cap = cap;
        v[k].name = name;
        /* Prefer sized over labels, then global over weak over local, then
         * names without a leading underscore (the public alias). */
        int bind_rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
        v[k].rank = (sym.st_size ? 0 : 8) + 2 * bind_rank + (name[0] == '_');
        k++;
    }
    qsort(v, k, sizeof(*v), sym_cmp);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m > 0 && v[m - 1].lo == v[i].lo)
            continue; /* an alias: the first is the preferred one */
        v[m++] = v[i];
    }
    for (size_t i = 0; i < m; i++) {
        if (v[i].hi != 0)
            continue;
        v[i].hi = v[i].cap;
        if (i + 1 < m && v[i + 1].lo < v[i].hi)
            v[i].hi = v[i + 1].lo;
    }
    o->syms = v;
    o->nsyms = m;
}

static const char *sym_lookup(struct trk_sym_obj *o, uint64_t addr)
{
    if (!o->syms_built)
        build_symbols(o);
    size_t lo = 0, hi = o->nsyms;
    while (lo < hi) { /* first entry with lo > addr */
        size_t mid = lo + (hi - lo) / 2;
        if (o->syms[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* A symbol may sit inside a bigger one (a local label in a function):
     * look back a little for the one that covers addr. */
    for (size_t i = lo, steps = 0; i > 0 && steps < 8; i--, steps++)
        if (addr < o->syms[i - 1].hi)
            return o->syms[i - 1].name;
    return NULL;
}

int trk_sym_obj_resolve(struct trk_sym_obj *o, uint64_t addr, struct trk_frame *out, int max)
{
    if (o->state == OBJ_NEW)
        obj_open(o);
    if (o->state != OBJ_READY || max < 1)
        return 0;
    struct trk_sym_strings *strs = &o->ctx->strings;
    int n = o->dwarf ? trk_sym_dwarf_resolve(o->dwarf, addr, out, max) : 0;
    if (n > 0) {
        if (!out[n - 1].function)
            out[n - 1].function = trk_sym_intern_demangled(strs, sym_lookup(o, addr));
        return n;
    }
    const char *name = trk_sym_intern_demangled(strs, sym_lookup(o, addr));
    if (!name)
        return 0;
    out[0].function = name;
    out[0].file = NULL;
    out[0].line = 0;
    out[0].inlined = 0;
    return 1;
}
