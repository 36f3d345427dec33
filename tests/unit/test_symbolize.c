/* SPDX-License-Identifier: MIT
 *
 * test_symbolize.c - the symbolizer (src/symbol) on real captures: the
 * fixtures under tests/unit/symbolize/ run under the real `tracker`, and the
 * stack of one known allocation must come back with exact functions, files,
 * lines and inlined frames. Expected lines come from LINE: markers in the
 * fixture sources, never from numbers written here. Also: debug info found
 * through debug dirs, a changed file, deleted and broken files, the cache.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sym_fixtures.h"
#include "symbol/symbolize.h"
#include "tracker/reader.h"

extern char **environ;

#define MAX_IPS 128
#define MAX_FLAT 512

static char tmpdir[PATH_MAX];

/* ---- Helpers ------------------------------------------------------------------- */

/* snprintf that fails the test instead of truncating. */
__attribute__((format(printf, 3, 4))) static void fmt(char *out, size_t len, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(out, len, f, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < len);
}

static void path_in_tmp(char *out, size_t len, const char *name)
{
    fmt(out, len, "%s/%s", tmpdir, name);
}

static void mkdirs(const char *path)
{
    char buf[PATH_MAX];
    fmt(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755);
            *p = '/';
        }
    }
    mkdir(buf, 0755);
}

static void copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    assert_true(in >= 0);
    unlink(to);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    assert_true(out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    assert_int_equal(n, 0);
    close(in);
    close(out);
}

/* Runs prog under `tracker run`, writing the capture to out. */
static void record(const char *prog, const char *out)
{
    char *argv[] = {(char *)SYM_TRACKER, "run", "-q", "-f", "-o", (char *)out, "--",
                    (char *)prog, NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, SYM_TRACKER, NULL, NULL, argv, environ), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* An opened capture and the stack of its first allocation of `size` bytes;
 * every event is read, so that all module snapshots are known. */
struct capture {
    struct trk_reader *r;
    uint64_t ips[MAX_IPS];
    int nips;
};

static void open_capture(struct capture *c, const char *path, uint64_t size)
{
    char err[512];
    memset(c, 0, sizeof(*c));
    if (trk_reader_open(path, &c->r, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    struct trk_event ev;
    int rc;
    while ((rc = trk_reader_next(c->r, &ev)) == 1)
        if (ev.type == TRK_EV_ALLOC && ev.size == size && c->nips == 0)
            c->nips = trk_reader_stack(c->r, ev.stack, c->ips, MAX_IPS);
    assert_int_equal(rc, 0);
    assert_true(c->nips > 0);
}

struct warnings {
    int count;
    char last[1024];
};

static void on_warn(void *ctx, const char *msg)
{
    struct warnings *w = ctx;
    w->count++;
    snprintf(w->last, sizeof(w->last), "%s", msg);
}

/* The frames of every address of c's stack, in order. */
struct flat {
    const struct trk_frame *f[MAX_FLAT];
    int n;
};

static void flatten_n(struct trk_symbolizer *s, const struct capture *c, struct flat *out,
                      int nips)
{
    out->n = 0;
    for (int i = 0; i < c->nips && i < nips; i++) {
        const struct trk_frame *f;
        int n = trk_symbolize(s, c->ips[i], &f);
        assert_true(n >= 1);
        for (int j = 0; j < n && out->n < MAX_FLAT; j++) {
            assert_int_equal(f[j].ip, c->ips[i]);
            assert_int_equal(f[j].inlined, j + 1 < n); /* only the last is not inlined */
            out->f[out->n++] = &f[j];
        }
    }
}

static void flatten(struct trk_symbolizer *s, const struct capture *c, struct flat *out)
{
    flatten_n(s, c, out, MAX_IPS);
}

static void dump(const struct flat *fl)
{
    for (int i = 0; i < fl->n; i++) {
        const struct trk_frame *f = fl->f[i];
        fprintf(stderr, "  #%d %s %s:%u%s [%s+0x%llx]\n", i, f->function ? f->function : "?",
                f->file ? f->file : "?", f->line, f->inlined ? " (inlined)" : "",
                f->module ? f->module : "?", (unsigned long long)f->offset);
    }
}

/* The line of `LINE:name` in the fixture source file. */
static uint32_t marker(const char *file, const char *name)
{
    char path[PATH_MAX], tag[128], line[1024];
    fmt(path, sizeof(path), "%s/%s", SYM_SRCDIR, file);
    fmt(tag, sizeof(tag), "LINE:%s ", name);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    uint32_t n = 0, found = 0;
    while (fgets(line, sizeof(line), fp)) {
        n++;
        if (strstr(line, tag)) {
            found = n;
            break;
        }
    }
    fclose(fp);
    assert_true(found > 0);
    return found;
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

/* Checks frame i of fl; file NULL: no source expected. */
static void expect(const struct flat *fl, int i, const char *function, const char *file,
                   const char *marker_name, int inlined)
{
    const struct trk_frame *f = i < fl->n ? fl->f[i] : NULL;
    int ok = f && f->function && strcmp(f->function, function) == 0 &&
             (int)f->inlined == inlined;
    if (ok && file)
        ok = f->file && strcmp(base_name(f->file), base_name(file)) == 0 &&
             f->line == marker(file, marker_name);
    else if (ok)
        ok = f->file == NULL && f->line == 0;
    if (!ok) {
        fprintf(stderr, "frame #%d: expected %s %s:%s%s; got:\n", i, function,
                file ? file : "-", marker_name ? marker_name : "-", inlined ? " (inlined)" : "");
        dump(fl);
        fail();
    }
}

static void real(const char *path, char *out)
{
    assert_non_null(realpath(path, out));
}

static void need(const char *path)
{
    if (!path[0])
        skip();
}

/* ---- Tests ------------------------------------------------------------------------ */

/* main -> foo -> bar -> baz at -O0: exact frames; then libc's frame, named
 * from its symbol table or its debug info. */
static void test_o0_chain(void **state)
{
    (void)state;
    char cap[PATH_MAX], exe[PATH_MAX];
    path_in_tmp(cap, sizeof(cap), "o0.bin");
    record(SYM_FX_O0, cap);
    struct capture c;
    open_capture(&c, cap, 1111);
    struct trk_symbolizer *s = trk_symbolizer_new(c.r, NULL);
    assert_non_null(s);
    struct flat fl;
    flatten(s, &c, &fl);
    expect(&fl, 0, "baz", "sym_fx_o0.c", "baz_alloc", 0);
    expect(&fl, 1, "bar", "sym_fx_o0.c", "bar_call", 0);
    expect(&fl, 2, "foo", "sym_fx_o0.c", "foo_call", 0);
    expect(&fl, 3, "main", "sym_fx_o0.c", "main_call", 0);
    real(SYM_FX_O0, exe);
    for (int i = 0; i < 4; i++)
        assert_string_equal(fl.f[i]->module, exe);
    assert_true(fl.f[0]->offset > 0 && fl.f[0]->offset < c.ips[0]);

    /* main's caller lives in libc; it has a name whatever debug info is
     * installed (libc6-dbg or not). */
    assert_true(fl.n > 4);
    const struct trk_frame *lc = fl.f[4];
    if (!lc->module || !strstr(lc->module, "libc.so")) {
        dump(&fl);
        fail_msg("main's caller is not in libc");
    }
    assert_non_null(lc->function);
    assert_true(strcmp(lc->function, "__libc_start_call_main") == 0 ||
                strcmp(lc->function, "__libc_start_main") == 0 ||
                strcmp(lc->function, "__libc_start_main_impl") == 0);
    trk_symbolizer_free(s);
    trk_reader_close(c.r);
}

/* The always-inline chain at -O2: one address, three frames. */
static void test_inline_chain(void **state)
{
    (void)state;
    char cap[PATH_MAX];
    path_in_tmp(cap, sizeof(cap), "inline.bin");
    record(SYM_FX_INLINE, cap);
    struct capture c;
    open_capture(&c, cap, 2223);
    struct trk_symbolizer *s = trk_symbolizer_new(c.r, NULL);
    assert_non_null(s);
    struct flat fl;
    flatten(s, &c, &fl);
    expect(&fl, 0, "inl_b", "sym_fx_inline.c", "inl_b_alloc", 1);
    expect(&fl, 1, "inl_a", "sym_fx_inline.c", "inl_a_call", 1);
    expect(&fl, 2, "outer", "sym_fx_inline.c", "outer_call", 0);
    expect(&fl, 3, "main", "sym_fx_inline.c", "main_call", 0);
    assert_int_equal(fl.f[0]->ip, fl.f[2]->ip);
    assert_int_equal(fl.f[0]->offset, fl.f[2]->offset);
    trk_symbolizer_free(s);
    trk_reader_close(c.r);
}

static void test_cxx_demangled(void **state)
{
    (void)state;
    need(SYM_FX_CXX);
    char cap[PATH_MAX];
    path_in_tmp(cap, sizeof(cap), "cxx.bin");
    record(SYM_FX_CXX, cap);
    struct capture c;
    open_capture(&c, cap, 833 * sizeof(int));
    struct trk_symbolizer *s = trk_symbolizer_new(c.r, NULL);
    assert_non_null(s);
    struct flat fl;
    flatten(s, &c, &fl);
    expect(&fl, 0, "trk_fx::Pool<int>::grab(unsigned long)", "sym_fx_cxx.cpp", "cxx_alloc", 0);
    expect(&fl, 1, "main", "sym_fx_cxx.cpp", "cxx_call", 0);
    trk_symbolizer_free(s);
    trk_reader_close(c.r);
}

/* Runs a copy of bin (at tmp/<dir>/prog) and returns its capture in c. */
static void record_copy(const char *bin, const char *dir, struct capture *c, char *prog)
{
    char d[PATH_MAX], cap[PATH_MAX];
    path_in_tmp(d, sizeof(d), dir);
    mkdirs(d);
    fmt(prog, PATH_MAX, "%s/prog", d);
    copy_file(bin, prog);
    fmt(cap, sizeof(cap), "%s/prog.bin", d);
    record(prog, cap);
    open_capture(c, cap, 1111);
}

/* Symbolizes the fixture's own frames of c (libc's debug info takes long
 * to load) with debug dir `dbg` (NULL: none); checks them. */
static void check_split(struct capture *c, const char *dbg, const char *want_fn, int want_src)
{
    const char *dirs[1] = {dbg};
    struct trk_symbolizer_options o = {.debug_dirs = dirs, .ndebug_dirs = dbg ? 1 : 0};
    struct trk_symbolizer *s = trk_symbolizer_new(c->r, &o);
    assert_non_null(s);
    struct flat fl;
    flatten_n(s, c, &fl, 4);
    if (want_fn) {
        expect(&fl, 0, want_fn, want_src ? "sym_fx_o0.c" : NULL, "baz_alloc", 0);
        expect(&fl, 3, "main", want_src ? "sym_fx_o0.c" : NULL, "main_call", 0);
    } else if (fl.f[0]->function || fl.f[0]->file || !fl.f[0]->module) {
        dump(&fl);
        fail_msg("expected module+offset only");
    }
    trk_symbolizer_free(s);
}

static void build_id_hex(struct capture *c, const char *prog, char *hex)
{
    const struct trk_module *m;
    size_t n = trk_reader_modules(c->r, &m);
    char rp[PATH_MAX];
    real(prog, rp);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].path, rp) != 0 && m[i].path[0])
            continue;
        assert_true(m[i].buildid_len > 0);
        for (uint32_t j = 0; j < m[i].buildid_len; j++)
            sprintf(hex + 2 * j, "%02x", m[i].buildid[j]);
        return;
    }
    fail_msg("no module for %s", prog);
}

/* A binary without symbols, its debug info moved to a debug dir: found by
 * build-id, by <dir>/<path>.debug, and by .gnu_debuglink. */
static void test_separate_debug(void **state)
{
    (void)state;
    need(SYM_FX_O0_STRIPPED);
    char prog[PATH_MAX], dbg[PATH_MAX], f[PATH_MAX * 2], hex[160], rp[PATH_MAX];
    struct capture c;

    /* Build-id layout. */
    record_copy(SYM_FX_O0_STRIPPED, "bid", &c, prog);
    check_split(&c, NULL, NULL, 0);
    build_id_hex(&c, prog, hex);
    path_in_tmp(dbg, sizeof(dbg), "dbg-bid");
    fmt(f, sizeof(f), "%s/.build-id/%.2s", dbg, hex);
    mkdirs(f);
    fmt(f, sizeof(f), "%s/.build-id/%.2s/%s.debug", dbg, hex, hex + 2);
    copy_file(SYM_FX_O0_DEBUG, f);
    check_split(&c, dbg, "baz", 1);

    /* Deleted since the run: the debug file found by build-id stands in. */
    unlink(prog);
    check_split(&c, dbg, "baz", 1);
    trk_reader_close(c.r);

    /* <dir>/<path of the binary>.debug. */
    record_copy(SYM_FX_O0_STRIPPED, "bypath", &c, prog);
    real(prog, rp);
    path_in_tmp(dbg, sizeof(dbg), "dbg-path");
    fmt(f, sizeof(f), "%s%s", dbg, rp);
    *strrchr(f, '/') = 0;
    mkdirs(f);
    fmt(f, sizeof(f), "%s%s.debug", dbg, rp);
    copy_file(SYM_FX_O0_DEBUG, f);
    check_split(&c, dbg, "baz", 1);
    trk_reader_close(c.r);

    /* .gnu_debuglink names sym_fx_o0.debug; .symtab alone gives names. */
    record_copy(SYM_FX_O0_LINKED, "link", &c, prog);
    check_split(&c, NULL, "baz", 0);
    real(prog, rp);
    path_in_tmp(dbg, sizeof(dbg), "dbg-link");
    fmt(f, sizeof(f), "%s%s", dbg, rp);
    *strrchr(f, '/') = 0;
    mkdirs(f);
    fmt(f + strlen(f), sizeof(f) - strlen(f), "/sym_fx_o0.debug");
    copy_file(SYM_FX_O0_DEBUG, f);
    check_split(&c, dbg, "baz", 1);
    trk_reader_close(c.r);
}

/* A one-file debuginfod server on loopback: answers GET
 * /buildid/<hex>/debuginfo with the debug file, anything else with 404. */
struct mini_server {
    int fd;
    char hex[160];
    const char *file;
    int hits; /* requests for our build-id */
};

static void *serve(void *arg)
{
    struct mini_server *m = arg;
    int c;
    while ((c = accept(m->fd, NULL, NULL)) >= 0) {
        char req[4096];
        size_t n = 0;
        ssize_t k;
        while (n < sizeof(req) - 1 && (k = read(c, req + n, sizeof(req) - 1 - n)) > 0) {
            n += (size_t)k;
            req[n] = 0;
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        req[n] = 0;
        char want[256];
        snprintf(want, sizeof(want), "GET /buildid/%s/debuginfo ", m->hex);
        int fd = strncmp(req, want, strlen(want)) == 0 ? open(m->file, O_RDONLY) : -1;
        struct stat st;
        char head[256];
        if (fd >= 0 && fstat(fd, &st) == 0) {
            m->hits++;
            int h = snprintf(head, sizeof(head),
                             "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n",
                             (long long)st.st_size);
            ssize_t w = write(c, head, (size_t)h);
            char buf[65536];
            while (w >= 0 && (k = read(fd, buf, sizeof(buf))) > 0)
                w = write(c, buf, (size_t)k);
        } else {
            const char *nf = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            if (write(c, nf, strlen(nf)) < 0)
                break;
        }
        if (fd >= 0)
            close(fd);
        close(c);
    }
    return NULL;
}

/* Debug info fetched through debuginfod (DEBUGINFOD_URLS), as elfutils
 * does when libdebuginfod is installed. */
static void test_debuginfod(void **state)
{
    (void)state;
    need(SYM_FX_O0_STRIPPED);
    void *h = dlopen("libdebuginfod.so.1", RTLD_LAZY);
    if (!h)
        skip();
    dlclose(h);
    char prog[PATH_MAX], cache[PATH_MAX], url[64];
    struct capture c;
    record_copy(SYM_FX_O0_STRIPPED, "dinfod", &c, prog);
    struct mini_server m = {.file = SYM_FX_O0_DEBUG};
    build_id_hex(&c, prog, m.hex);

    m.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(m.fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(m.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(m.fd, 8), 0);
    assert_int_equal(getsockname(m.fd, (struct sockaddr *)&sa, &len), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, serve, &m), 0);

    fmt(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    path_in_tmp(cache, sizeof(cache), "dinfod-cache");
    setenv("DEBUGINFOD_URLS", url, 1);
    setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
    setenv("DEBUGINFOD_TIMEOUT", "5", 1);
    check_split(&c, NULL, "baz", 1);
    unsetenv("DEBUGINFOD_URLS");

    shutdown(m.fd, SHUT_RDWR);
    close(m.fd);
    pthread_join(t, NULL);
    assert_int_equal(m.hits, 1);
    trk_reader_close(c.r);
}

/* The binary was rebuilt after the run: one warning, no names at all. */
static void test_build_id_mismatch(void **state)
{
    (void)state;
    char prog[PATH_MAX], rp[PATH_MAX], want[PATH_MAX + 200];
    struct capture c;
    record_copy(SYM_FX_O0, "changed", &c, prog);
    real(prog, rp);
    copy_file(SYM_FX_INLINE, prog);

    struct warnings w = {0};
    struct trk_symbolizer_options o = {.warn = on_warn, .warn_ctx = &w};
    struct trk_symbolizer *s = trk_symbolizer_new(c.r, &o);
    assert_non_null(s);
    struct flat fl;
    flatten(s, &c, &fl);
    flatten(s, &c, &fl);
    assert_int_equal(w.count, 1);
    fmt(want, sizeof(want),
             "%s: build-id differs from the capture (file changed since recording); its frames "
             "are shown as module+offset",
             rp);
    assert_string_equal(w.last, want);
    int seen = 0;
    for (int i = 0; i < fl.n; i++) {
        if (!fl.f[i]->module || strcmp(fl.f[i]->module, rp) != 0)
            continue;
        seen++;
        assert_null(fl.f[i]->function);
        assert_null(fl.f[i]->file);
        assert_int_equal(fl.f[i]->offset + 0, fl.f[i]->ip - (c.ips[0] - fl.f[0]->offset));
    }
    assert_true(seen >= 4);
    trk_symbolizer_free(s);
    trk_reader_close(c.r);
}

/* Files that are no longer ELF, or cut short: warnings or fewer details,
 * never a crash. */
static void test_broken_files(void **state)
{
    (void)state;
    char prog[PATH_MAX];
    struct capture c;
    record_copy(SYM_FX_O0, "garbage", &c, prog);
    FILE *fp = fopen(prog, "w");
    assert_non_null(fp);
    fputs("not an ELF file\n", fp);
    fclose(fp);
    struct warnings w = {0};
    struct trk_symbolizer_options o = {.warn = on_warn, .warn_ctx = &w};
    struct trk_symbolizer *s = trk_symbolizer_new(c.r, &o);
    struct flat fl;
    flatten(s, &c, &fl);
    assert_int_equal(w.count, 1);
    assert_null(fl.f[0]->function);
    trk_symbolizer_free(s);
    trk_reader_close(c.r);

    /* Truncated at several points: the build-id may still match. */
    record_copy(SYM_FX_O0, "cut", &c, prog);
    struct stat st;
    assert_int_equal(stat(SYM_FX_O0, &st), 0);
    for (int k = 1; k < 8; k++) {
        copy_file(SYM_FX_O0, prog);
        assert_int_equal(truncate(prog, st.st_size * k / 8), 0);
        s = trk_symbolizer_new(c.r, &o);
        flatten_n(s, &c, &fl, 4);
        assert_true(fl.n >= 4);
        trk_symbolizer_free(s);
    }
    trk_reader_close(c.r);
}

/* The same address twice: the same array. Outside every module, and in
 * the vDSO: the address alone. */
static void test_cache_and_odd_addresses(void **state)
{
    (void)state;
    char cap[PATH_MAX];
    path_in_tmp(cap, sizeof(cap), "o0-cache.bin");
    record(SYM_FX_O0, cap);
    struct capture c;
    open_capture(&c, cap, 1111);
    struct trk_symbolizer *s = trk_symbolizer_new(c.r, NULL);
    const struct trk_frame *a, *b;
    int na = trk_symbolize(s, c.ips[0], &a);
    int nb = trk_symbolize(s, c.ips[0], &b);
    assert_int_equal(na, nb);
    assert_ptr_equal(a, b);
    assert_string_equal(a->function, "baz");

    assert_int_equal(trk_symbolize(s, 0x10, &a), 1);
    assert_null(a->module);
    assert_null(a->function);
    assert_int_equal(a->offset, 0x10);
    assert_int_equal(a->ip, 0x10);

    const struct trk_module *m;
    size_t n = trk_reader_modules(c.r, &m);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].path, "linux-vdso.so.1") != 0 && strcmp(m[i].path, "[vdso]") != 0)
            continue;
        assert_true(m[i].nseg > 0);
        uint64_t ip = m[i].base + m[i].seg[0].vaddr + 1;
        assert_int_equal(trk_symbolize(s, ip, &a), 1);
        assert_string_equal(a->module, m[i].path);
        assert_null(a->function);
        assert_int_equal(a->offset, ip - m[i].base);
    }
    trk_symbolizer_free(s);
    trk_reader_close(c.r);
}

/* ---- Setup ---------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    /* No network lookups from a unit test. */
    unsetenv("DEBUGINFOD_URLS");
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/trk_symtest.XXXXXX", t && t[0] ? t : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (!getenv("TRK_KEEP_TMP"))
        nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_o0_chain),
        cmocka_unit_test(test_inline_chain),
        cmocka_unit_test(test_cxx_demangled),
        cmocka_unit_test(test_separate_debug),
        cmocka_unit_test(test_debuginfod),
        cmocka_unit_test(test_build_id_mismatch),
        cmocka_unit_test(test_broken_files),
        cmocka_unit_test(test_cache_and_odd_addresses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
