/* SPDX-License-Identifier: MIT
 *
 * options.c - the options `tracker summary`, `tree`, `leaks`, `diff`,
 * `export` and `flamegraph` share (the memory they cover: heap, mappings,
 * GPU devices; the temporary rules; debug info; which frames stacks show),
 * parsed in one place so that they spell and check them alike. Must not:
 * print or exit (errors come back as one-line messages).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

const char trk_report_common_help[] =
    "  --json                 machine-readable output\n"
    "  --all                  every capture of the run (FILE's <stem>.<pid>.bin siblings)\n"
    "  --debug-dir DIR        also look for debug info under DIR (repeatable)\n"
    "  --mmap                 count anonymous mappings beside the heap\n"
    "  --gpu                  GPU memory of every device instead of host memory\n"
    "  --device N             GPU memory of device N only\n"
    "  --no-driver-host       leave out host memory the GPU driver allocated itself\n"
    "  --keep-allocator-frames\n"
    "                         keep operator new, jemalloc and tracker frames\n"
    "  --python-internals     keep the interpreter's own frames in Python stacks\n"
    "                         (hidden by default but for those at the allocation)\n"
    "  --hide-imports         hide importlib's frames in Python stacks\n"
    "  --temp-allocs N        temporary = freed before N more allocations on its thread\n"
    "                         (default 1)\n"
    "  --temp-ms T            temporary = freed within T milliseconds\n"
    "  --no-progress          no progress bar on stderr\n";

void trk_report_opts_init(struct trk_report_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->temp_allocs = 1;
    o->device = -1;
}

struct trk_frames_options trk_report_frames(const struct trk_report_opts *o)
{
    return (struct trk_frames_options){.keep_allocator_frames = o->keep_allocator_frames,
                                       .python_internals = o->python_internals,
                                       .hide_imports = o->hide_imports};
}

void trk_report_opts_free(struct trk_report_opts *o)
{
    free(o->debug_dirs);
    o->debug_dirs = NULL;
    o->ndebug_dirs = 0;
}

int trk_report_opt_value(int argc, char **argv, int *i, const char *name, const char **val,
                         char *err, size_t errlen)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        snprintf(err, errlen, "option '%s' needs a value", name);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int trk_report_parse_common(struct trk_report_opts *o, int argc, char **argv, int *i, char *err,
                            size_t errlen)
{
    const char *a = argv[*i], *v;
    int r;
    if (strcmp(a, "--json") == 0) {
        o->json = true;
    } else if (strcmp(a, "--all") == 0) {
        o->all = true;
    } else if (strcmp(a, "--mmap") == 0) {
        o->mmap = true;
    } else if (strcmp(a, "--gpu") == 0) {
        o->gpu = true;
    } else if (strcmp(a, "--no-driver-host") == 0) {
        o->no_driver_host = true;
    } else if (strcmp(a, "--keep-allocator-frames") == 0) {
        o->keep_allocator_frames = true;
    } else if (strcmp(a, "--python-internals") == 0) {
        o->python_internals = true;
    } else if (strcmp(a, "--hide-imports") == 0) {
        o->hide_imports = true;
    } else if (strcmp(a, "--no-progress") == 0) {
        o->no_progress = true;
    } else if ((r = trk_report_opt_value(argc, argv, i, "--debug-dir", &v, err, errlen)) != 0) {
        if (r < 0)
            return -1;
        if (!*v) {
            snprintf(err, errlen, "--debug-dir needs a directory");
            return -1;
        }
        const char **d = realloc(o->debug_dirs, (o->ndebug_dirs + 1) * sizeof(*d));
        if (!d) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        d[o->ndebug_dirs++] = v;
        o->debug_dirs = d;
    } else if ((r = trk_report_opt_value(argc, argv, i, "--device", &v, err, errlen)) != 0) {
        uint64_t d;
        if (r < 0)
            return -1;
        if (parse_u64(v, 0, TRK_GPU_DEVICES_MAX - 1, &d) < 0) {
            snprintf(err, errlen, "--device: '%s' is not a device ordinal (0 to %d)", v,
                     TRK_GPU_DEVICES_MAX - 1);
            return -1;
        }
        o->gpu = true;
        o->device = (int32_t)d;
    } else if ((r = trk_report_opt_value(argc, argv, i, "--temp-allocs", &v, err, errlen)) != 0) {
        if (r < 0)
            return -1;
        if (parse_u64(v, 1, UINT32_MAX, &o->temp_allocs) < 0) {
            snprintf(err, errlen, "--temp-allocs: '%s' is not a whole number >= 1", v);
            return -1;
        }
    } else if ((r = trk_report_opt_value(argc, argv, i, "--temp-ms", &v, err, errlen)) != 0) {
        if (r < 0)
            return -1;
        char *end;
        errno = 0;
        double ms = strtod(v, &end);
        /* A day is far beyond any sensible "temporary"; it also keeps the
         * nanosecond product well inside 64 bits. */
        if (errno || end == v || *end || !isfinite(ms) || ms <= 0 || ms > 86400e3) {
            snprintf(err, errlen, "--temp-ms: '%s' is not a positive number of milliseconds", v);
            return -1;
        }
        o->temp_ns = (uint64_t)(ms * 1e6);
        if (o->temp_ns == 0)
            o->temp_ns = 1;
    } else {
        return 0;
    }
    return 1;
}
