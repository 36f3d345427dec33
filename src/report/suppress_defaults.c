/* SPDX-License-Identifier: MIT
 *
 * suppress_defaults.c - the default suppression set of `tracker leaks`: the
 * one-time state that the C library, the dynamic loader and libstdc++ keep
 * for the whole process and never free, so that every program leaves it
 * live at exit (stdio buffers, locale and gettext data, NSS, time zone,
 * the environment setenv built, the loader's link maps and TLS, libstdc++'s
 * emergency exception pool). Reported as leaks they made a leak gate fail
 * on `ls`, `git --version` or any C++ program (issue 11). One table, which
 * --print-suppressions prints as is. Must not: hide what a program
 * allocated itself through these libraries and could free (a FILE it never
 * closed, a newlocale without freelocale, an iconv_open without
 * iconv_close): the patterns name the libraries' internal functions that
 * make the kept state, not the API the program calls.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static const struct {
    enum trk_sup_scope scope;
    const char *pattern;
    const char *about;
} defaults[] = {
    {TRK_SUP_ANY, "_IO_file_doallocate", "stdio: a stream's buffer, made at its first use"},
    {TRK_SUP_ANY, "_IO_wfile_doallocate", "stdio: a wide stream's buffer"},
    {TRK_SUP_ANY, "setlocale", "locale: the data setlocale loads, kept for the process"},
    {TRK_SUP_ANY, "__wcsmbs_load_conv", "locale: the multibyte converters of the locale"},
    {TRK_SUP_ANY, "__dcigettext", "gettext: message catalogs and their lookup cache"},
    {TRK_SUP_ANY, "textdomain", "gettext: (bind)textdomain's domain names and bindings"},
    {TRK_SUP_ANY, "nss_database", "NSS: the parsed nsswitch.conf and its service modules"},
    {TRK_SUP_ANY, "__nss_module", "NSS: a service module's state"},
    {TRK_SUP_ANY, "^getpwuid$", "NSS: getpwuid's one static result buffer"},
    {TRK_SUP_ANY, "^getpwnam$", "NSS: getpwnam's one static result buffer"},
    {TRK_SUP_ANY, "^getgrgid$", "NSS: getgrgid's one static result buffer"},
    {TRK_SUP_ANY, "^getgrnam$", "NSS: getgrnam's one static result buffer"},
    {TRK_SUP_ANY, "tzset_internal", "time zone: the rules tzset loads, kept for the process"},
    {TRK_SUP_ANY, "__add_to_environ", "setenv/putenv: environment strings libc never frees"},
    {TRK_SUP_ANY, "__new_exitfn", "atexit: the handler list beyond its static first block"},
    {TRK_SUP_TOP, "^ld-linux", "the loader: link maps, TLS blocks and DTVs, dlerror state"},
    {TRK_SUP_CTOR, "^libstdc++.so",
     "libstdc++'s own start-up: the emergency exception pool (eh_alloc.cc)"},
};

#define NDEFAULTS (sizeof(defaults) / sizeof(defaults[0]))

int trk_suppressions_add_defaults(struct trk_suppressions *s)
{
    struct trk_suppression *v = realloc(s->v, (s->n + NDEFAULTS) * sizeof(*v));
    if (!v)
        return -1;
    s->v = v;
    for (size_t i = 0; i < NDEFAULTS; i++) {
        char *p = strdup(defaults[i].pattern);
        if (!p)
            return -1;
        s->v[s->n++] = (struct trk_suppression){
            .pattern = p, .scope = defaults[i].scope, .builtin = true, .about = defaults[i].about};
    }
    return 0;
}

static const char *scope_name(enum trk_sup_scope s)
{
    return s == TRK_SUP_TOP ? "innermost" : s == TRK_SUP_CTOR ? "ctor" : "any";
}

void trk_suppressions_print_defaults(FILE *f)
{
    fputs("Default suppressions (--no-default-suppressions turns them off). frames: any = a "
          "frame of the stack\n(LeakSanitizer's leak:), innermost = the allocating frame, "
          "ctor = allocated by the module's\nown constructor while the loader ran it.\n\n",
          f);
    fprintf(f, "  %-26s %-9s %s\n", "pattern", "frames", "what it covers");
    for (size_t i = 0; i < NDEFAULTS; i++) {
        char pat[64];
        snprintf(pat, sizeof(pat), "leak:%s", defaults[i].pattern);
        fprintf(f, "  %-26s %-9s %s\n", pat, scope_name(defaults[i].scope), defaults[i].about);
    }
}
