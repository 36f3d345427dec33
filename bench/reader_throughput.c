/* SPDX-License-Identifier: MIT
 *
 * reader_throughput.c - the reader library's own speed: opens a capture,
 * drains every event (trk_reader_next_batch, or trk_reader_next with
 * --single) and does nothing else with them, so the figure is the ceiling
 * for any analysis on one core. Prints one line,
 *   events=N wall_s=S cpu_s=S events_per_s=R events_per_cpu_s=R
 * where cpu_s is this process's CPU time: on a shared machine that is the
 * steadier figure. Used by bench/run_reader_bench.py.
 *
 * usage: reader_throughput [--single] [--batch N] CAPTURE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracker/reader.h"

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int batch = 256;
    int single = 0;
    int bad = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--single") == 0)
            single = 1;
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            bad = 1;
    }
    if (bad || !path || batch < 1) {
        fprintf(stderr, "usage: reader_throughput [--single] [--batch N] CAPTURE\n");
        return 2;
    }
    struct trk_event *evs = malloc((size_t)batch * sizeof(*evs));
    if (!evs) {
        fprintf(stderr, "reader_throughput: out of memory\n");
        return 1;
    }
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    struct trk_reader *r;
    char err[512];
    if (trk_reader_open(path, &r, err, sizeof(err)) != 0) {
        fprintf(stderr, "reader_throughput: %s\n", err);
        free(evs);
        return 1;
    }
    uint64_t events = 0, sink = 0;
    int rc;
    if (single) {
        while ((rc = trk_reader_next(r, evs)) == 1) {
            sink += evs->addr;
            events++;
        }
    } else {
        while ((rc = trk_reader_next_batch(r, evs, batch)) > 0) {
            /* Touch one field per event, so the copy out is not dead code. */
            for (int i = 0; i < rc; i++)
                sink += evs[i].addr;
            events += (uint64_t)rc;
        }
    }
    double wall = now(CLOCK_MONOTONIC) - w0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (rc < 0) {
        fprintf(stderr, "reader_throughput: %s\n", trk_reader_error(r));
        trk_reader_close(r);
        free(evs);
        return 1;
    }
    trk_reader_close(r);
    free(evs);
    printf("events=%llu wall_s=%.3f cpu_s=%.3f events_per_s=%.0f events_per_cpu_s=%.0f "
           "sink=%llu\n",
           (unsigned long long)events, wall, cpu, wall > 0 ? (double)events / wall : 0.0,
           cpu > 0 ? (double)events / cpu : 0.0, (unsigned long long)(sink & 0xff));
    return 0;
}
