/* SPDX-License-Identifier: MIT
 *
 * options.c - the options `tracker summary`, `tree`, `leaks`, `diff`,
 * `export` and `flamegraph` share (the memory they cover: heap, mappings,
 * GPU devices; the temporary rules; debug info; which frames stacks show):
 * their defaults and what they mean to the analysis. Their spelling and
 * checks are the CLI's option table (src/cli/opts.c). Must not: print or
 * exit.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

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
                                       .hide_imports = o->hide_imports,
                                       .native = o->native};
}

void trk_report_opts_free(struct trk_report_opts *o)
{
    free(o->debug_dirs);
    o->debug_dirs = NULL;
    o->ndebug_dirs = 0;
}
