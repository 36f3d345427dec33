/* SPDX-License-Identifier: MIT
 *
 * third_party.c - a program outside the project that reads a capture through
 * the installed reader library only (<tracker/reader.h>, pkg-config
 * trkreader): tests/integration/test_format.py compiles it against a staged
 * `meson install` and compares what it prints with `tracker stats --json`.
 * It must not include anything from src/.
 *
 * usage: third_party CAPTURE
 */
#include <stdio.h>
#include <tracker/reader.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CAPTURE\n", argv[0]);
        return 2;
    }
    char err[512];
    struct trk_reader *r;
    if (trk_reader_open(argv[1], &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const struct trk_reader_info *in = trk_reader_info(r);
    unsigned long long allocs = 0, frees = 0, bytes = 0, events = 0;
    struct trk_event evs[64];
    int n;
    while ((n = trk_reader_next_batch(r, evs, 64)) > 0) {
        for (int i = 0; i < n; i++) {
            events++;
            if (evs[i].type == TRK_EV_ALLOC && !(evs[i].flags & TRK_EVF_INHERITED)) {
                allocs++;
                bytes += evs[i].size;
            } else if (evs[i].type == TRK_EV_FREE) {
                frees++;
            }
        }
    }
    if (n < 0) {
        fprintf(stderr, "%s\n", trk_reader_error(r));
        trk_reader_close(r);
        return 1;
    }
    const struct trk_reader_status *st = trk_reader_status(r);
    printf("reader_version=%d\n", TRK_READER_FORMAT_VERSION);
    printf("version=%u\npid=%u\nevents=%llu\nallocations=%llu\nfrees=%llu\nbytes=%llu\n",
           in->version, in->pid, events, allocs, frees, bytes);
    printf("truncated=%d\nmodule_size=%zu\n", st->truncated ? 1 : 0, sizeof(struct trk_module));
    trk_reader_close(r);
    return 0;
}
