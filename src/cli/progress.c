/* SPDX-License-Identifier: MIT
 *
 * progress.c - the progress bar of long capture reads and the warnings that
 * may interrupt it, both on stderr. The bar appears only when stderr is a
 * terminal (a pipe or a log file must not collect carriage returns) and only
 * once a read has taken a moment, so quick commands never flash one.
 * Warnings are printed once each, erasing the bar first. Must not: write to
 * stdout (reports go there, and scripts parse them).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define SHOW_AFTER_NS 300000000ULL /* reads shorter than this never show a bar */
#define REDRAW_NS     100000000ULL

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void trk_progress_init(struct trk_progress *p, bool wanted)
{
    memset(p, 0, sizeof(*p));
    p->on = wanted && isatty(STDERR_FILENO);
    p->start_ns = now_ns();
}

void trk_progress_clear(struct trk_progress *p)
{
    if (p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->drawn = false;
    }
}

void trk_progress_update(void *ctx, const char *path, uint64_t done, uint64_t total)
{
    struct trk_progress *p = ctx;
    if (!p->on)
        return;
    uint64_t t = now_ns();
    if (t - p->start_ns < SHOW_AFTER_NS || (p->drawn && t - p->last_ns < REDRAW_NS))
        return;
    p->last_ns = t;
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    if (total == 0) {
        /* Input that is not a regular file (a pipe) has no known size: a
         * moving byte count is the honest display. */
        fprintf(stderr, "\rreading %.40s: %.1f MB", name, (double)done / 1e6);
        fputs("\033[K", stderr);
    } else {
        struct winsize ws;
        int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
        double frac = (double)(done > total ? total : done) / (double)total;
        /* "reading NAME [=====     ]  42%": the name gives way to the bar. */
        int bar = cols - 24;
        if (bar > 40)
            bar = 40;
        int namew = cols - bar - 20;
        if (bar < 10 || namew < 4) {
            fprintf(stderr, "\rreading %3d%%", (int)(frac * 100));
        } else {
            int fill = (int)(frac * bar);
            fprintf(stderr, "\rreading %-*.*s [", namew, namew, name);
            for (int i = 0; i < bar; i++)
                fputc(i < fill ? '=' : ' ', stderr);
            fprintf(stderr, "] %3d%%", (int)(frac * 100));
        }
    }
    fflush(stderr);
    p->drawn = true;
}

void trk_progress_warn(void *ctx, const char *msg)
{
    struct trk_progress *p = ctx;
    /* Every capture of a set (and both sides of a diff) has a symbolizer of
     * its own that warns once: repeat no message across them. */
    for (size_t i = 0; i < p->nwarned; i++)
        if (strcmp(p->warned[i], msg) == 0)
            return;
    char **w = realloc(p->warned, (p->nwarned + 1) * sizeof(*w));
    char *copy = w ? strdup(msg) : NULL;
    if (w)
        p->warned = w;
    if (copy)
        p->warned[p->nwarned++] = copy;
    trk_progress_clear(p);
    trk_cli_error("warning: %s", msg);
}

void trk_progress_free(struct trk_progress *p)
{
    trk_progress_clear(p);
    for (size_t i = 0; i < p->nwarned; i++)
        free(p->warned[i]);
    free(p->warned);
    p->warned = NULL;
    p->nwarned = 0;
}
