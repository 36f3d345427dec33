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

/* ---- Separate debug files ---------------------------------------------------- */

/* Whether something that is not a regular file sits at path (stat does not
 * block, and follows symlinks as the open would). */
static bool not_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

/* The names elfutils' standard lookup opens for the debug file `link` of a
 * module in directory dir, per element of the search path: dir/link,
 * dir/.debug/link, and under an absolute root, root/<dir>/link with dir's
 * leading components chopped one at a time (down to root/link). Returns the
 * first that is not a regular file, in buf, or NULL. */
static const char *bad_debuglink(const char *search, const char *dir, const char *link, char *buf,
                                 size_t len)
{
    const char *e = search;
    while (e) {
        const char *colon = strchr(e, ':');
        int n = colon ? (int)(colon - e) : (int)strlen(e);
        if (n > 0 && (e[0] == '+' || e[0] == '-')) {
            e++;
            n--;
        }
        if (n == 0) {
            snprintf(buf, len, "%s/%s", dir, link);
            if (not_regular(buf))
                return buf;
        } else if (e[0] != '/') {
            snprintf(buf, len, "%s/%.*s/%s", dir, n, e, link);
            if (not_regular(buf))
                return buf;
        } else {
            for (const char *sub = dir; sub; sub = strchr(sub + 1, '/')) {
                snprintf(buf, len, "%.*s/%s/%s", n, e, sub + (*sub == '/'), link);
                if (not_regular(buf))
                    return buf;
            }
            snprintf(buf, len, "%.*s/%s", n, e, link);
            if (not_regular(buf))
                return buf;
        }
        e = colon ? colon + 1 : NULL;
    }
    return NULL;
}

/* elfutils opens its candidates for a separate debug file with a blocking
 * open(): a FIFO planted at one (beside a binary in a shared directory)
 * would hang the report. Check every name it may try first, and give up on
 * separate debug info for this module if one is not a regular file. */
static int find_debuginfo_checked(Dwfl_Module *mod, void **userdata, const char *modname,
                                  Dwarf_Addr base, const char *file_name,
                                  const char *debuglink_file, GElf_Word debuglink_crc,
                                  char **debuginfo_file_name)
{
    struct trk_sym_obj *o = *userdata;
    char buf[8192];
    const char *bad = NULL;
    if (o && file_name) {
        char dir[4096], real[4096], base_debug[4096];
        const char *names[2] = {debuglink_file, NULL};
        const char *slash = strrchr(file_name, '/');
        const char *basename = slash ? slash + 1 : file_name;
        if (!debuglink_file) {
            /* elfutils then invents <basename>.debug, and tries the basename. */
            snprintf(base_debug, sizeof(base_debug), "%s.debug", basename);
            names[0] = base_debug;
            names[1] = basename;
        }
        /* The file's own directory, and that of its target if a symlink. */
        const char *files[2] = {file_name, realpath(file_name, real) ? real : NULL};
        for (int f = 0; f < 2 && !bad; f++) {
            if (!files[f])
                continue;
            const char *sl = strrchr(files[f], '/');
            snprintf(dir, sizeof(dir), "%.*s", sl ? (int)(sl - files[f]) : 1, sl ? files[f] : ".");
            for (int k = 0; k < 2 && !bad && names[k]; k++)
                bad = bad_debuglink(o->ctx->debuginfo_path, dir, names[k], buf, sizeof(buf));
        }
        const unsigned char *id;
        GElf_Addr vaddr;
        int n = dwfl_module_build_id(mod, &id, &vaddr);
        for (size_t d = 0; !bad && n > 1 && d < o->ctx->ndebug_dirs; d++) {
            char hex[2 * 64 + 1];
            for (int i = 0; i < n && i < 64; i++)
                snprintf(hex + 2 * i, 3, "%02x", id[i]);
            snprintf(buf, sizeof(buf), "%s/.build-id/%.2s/%s.debug", o->ctx->debug_dirs[d], hex,
                     hex + 2);
            if (not_regular(buf))
                bad = buf;
        }
    }
    if (bad) {
        char what[8300];
        snprintf(what, sizeof(what), "debug file %s is not a regular file, not read", bad);
        trk_sym_warn(o->ctx, what);
        return -1;
    }
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                        debuglink_crc, debuginfo_file_name);
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
    o->cb.find_debuginfo = find_debuginfo_checked;
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
    void **userdata;
    if (o->mod && dwfl_module_info(o->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
        *userdata = o; /* for find_debuginfo_checked */
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
