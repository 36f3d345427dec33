/* SPDX-License-Identifier: MIT
 *
 * fuzz_reader.c - fuzz target for the whole capture reader: the input is a
 * capture file. Owns the properties every input, however corrupt, must keep
 * (include/tracker/reader.h: "an error or a status, never a crash"):
 *   - opening fails cleanly or yields a reader whose strings are readable;
 *   - draining with trk_reader_next terminates, every event has a known type,
 *     every stack id and module it names can be looked up, and progress
 *     stays within the file and never goes back;
 *   - draining again with trk_reader_next_batch, in odd batch sizes, yields
 *     the same events in the same order (batching is only an optimisation);
 *   - trk_stats_compute on a third open agrees on the integrity counters.
 * ASan/UBSan/LSan do the rest. The same file serves libFuzzer and the
 * corpus replay test (replay_main.c).
 */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stats.h"
#include "fuzz.h"
#include "tracker/reader.h"

#define STACK_MAX 256

/* FNV-1a over the bytes of each value: a cheap fingerprint of an event
 * sequence, to compare two passes without storing either. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 0x100000001b3ull;
    }
    return mix(h, n);
}

static uint64_t hash_event(uint64_t h, const struct trk_event *e)
{
    h = mix(h, e->seq);
    h = mix(h, e->ts);
    h = mix(h, e->addr);
    h = mix(h, e->size);
    h = mix(h, e->stack);
    h = mix(h, e->tid);
    h = mix(h, (uint64_t)e->type << 16 | (uint64_t)e->kind << 8 | e->flags);
    if (e->type == TRK_EV_THREAD_NAME) {
        h = mix(h, e->u.thread_name.tid);
        return mix_str(h, e->u.thread_name.name);
    }
    if (e->type == TRK_EV_PY_IMPORT)
        return mix_str(h, e->u.py_import.name);
    /* Every other union member starts with two uint64_t fields; narrower
     * fields after them would bring padding bytes into the hash. */
    uint64_t w[3];
    memcpy(w, &e->u, sizeof(w));
    h = mix(mix(h, w[0]), w[1]);
    if (e->type == TRK_EV_MREMAP_OLD || e->type == TRK_EV_MREMAP_NEW)
        h = mix(h, e->u.pair.flags);
    return h;
}

static void check_info(const struct trk_reader_info *in)
{
    if (in->argc < 0 || !in->argv || in->argv[in->argc] != NULL)
        trk_fuzz_fail("info.argv is not argc entries then NULL");
    size_t total = 0;
    for (int i = 0; i < in->argc; i++)
        total += strlen(in->argv[i]);
    total += strlen(in->exe) + strlen(in->host) + strlen(in->cwd) + strlen(in->writer_version);
    (void)total;
}

static void check_modules(const struct trk_reader *r)
{
    const struct trk_module *mods;
    size_t n = trk_reader_modules(r, &mods);
    if ((n == 0) != (mods == NULL))
        trk_fuzz_fail("trk_reader_modules: count and pointer disagree");
    for (size_t i = 0; i < n; i++) {
        const struct trk_module *m = &mods[i];
        if (!m->path || m->buildid_len > sizeof(m->buildid) || m->nseg > 16)
            trk_fuzz_fail("trk_reader_modules: module out of bounds");
        (void)strlen(m->path);
    }
}

static void check_event(const struct trk_reader *r, const struct trk_event *e)
{
    /* The reader names every type it produces; new types need no change here. */
    if (e->type == 0 || strcmp(trk_event_type_name(e->type), "unknown") == 0)
        trk_fuzz_fail("event of unknown type");
    if (e->stack) {
        uint64_t ips[STACK_MAX];
        int n = trk_reader_stack(r, e->stack, ips, STACK_MAX);
        if (n < 0 || n > STACK_MAX)
            trk_fuzz_fail("trk_reader_stack out of range");
        /* A short buffer must give a prefix of the long answer. */
        uint64_t two[2];
        int m = trk_reader_stack(r, e->stack, two, 2);
        if (m != (n < 2 ? n : 2) || (m > 0 && two[0] != ips[0]) || (m > 1 && two[1] != ips[1]))
            trk_fuzz_fail("trk_reader_stack with a short buffer disagrees");
    }
    if (e->type == TRK_EV_THREAD_NAME) {
        if (!e->u.thread_name.name)
            trk_fuzz_fail("thread name is NULL");
        (void)strlen(e->u.thread_name.name);
    }
    if (e->type == TRK_EV_MODULES)
        check_modules(r);
}

struct pass {
    uint64_t hash;
    uint64_t events;
    struct trk_reader_status status;
    bool opened;
    bool read_error;
};

/* Opens a private copy of the input; the reader owns and closes the fd. */
static struct trk_reader *open_input(const uint8_t *data, size_t size)
{
    int fd = trk_fuzz_memfd(data, size);
    if (fd < 0)
        trk_fuzz_fail("memfd_create failed (environment, not the reader)");
    struct trk_reader *r = NULL;
    char err[256];
    memset(err, 'x', sizeof(err));
    int rc = trk_reader_open_fd(fd, "fuzz.bin", &r, err, sizeof(err));
    if (rc == 0) {
        if (!r)
            trk_fuzz_fail("trk_reader_open_fd returned 0 without a reader");
        if (trk_reader_error(r)[0] != '\0')
            trk_fuzz_fail("fresh reader has an error set");
        check_info(trk_reader_info(r));
        return r;
    }
    if (rc != -1 || r != NULL)
        trk_fuzz_fail("trk_reader_open_fd failure without -1 and NULL");
    if (!memchr(err, '\0', sizeof(err)) || strncmp(err, "fuzz.bin: ", 10) != 0)
        trk_fuzz_fail("open error is not a NUL-terminated message naming the file");
    return NULL;
}

/* One event at a time, checking each one against the lookup functions. */
static void pass_single(const uint8_t *data, size_t size, struct pass *p)
{
    memset(p, 0, sizeof(*p));
    p->hash = 0xcbf29ce484222325ull;
    struct trk_reader *r = open_input(data, size);
    if (!r)
        return;
    p->opened = true;
    struct trk_event e;
    int rc;
    uint64_t done_before = 0;
    while ((rc = trk_reader_next(r, &e)) == 1) {
        check_event(r, &e);
        uint64_t done, total;
        trk_reader_progress(r, &done, &total);
        if (total != size || done > total || done < done_before)
            trk_fuzz_fail("trk_reader_progress out of range or going back");
        done_before = done;
        p->hash = hash_event(p->hash, &e);
        p->events++;
    }
    if (rc != 0 && rc != -1)
        trk_fuzz_fail("trk_reader_next returned neither 1, 0 nor -1");
    p->read_error = rc < 0;
    /* After the end, the end stays the end. */
    if (rc == 0 && trk_reader_next(r, &e) != 0)
        trk_fuzz_fail("trk_reader_next after the end returned an event");
    check_modules(r);
    p->status = *trk_reader_status(r);
    if (!p->read_error && p->status.events != p->events)
        trk_fuzz_fail("status.events differs from the events returned");
    trk_reader_close(r);
}

/* Batches of irregular sizes, so runs are cut at every possible place. */
static void pass_batch(const uint8_t *data, size_t size, struct pass *p)
{
    static const int sizes[] = {1, 7, 256, 2, 64, 3, 1000, 5};
    struct trk_event evs[1000];
    memset(p, 0, sizeof(*p));
    p->hash = 0xcbf29ce484222325ull;
    struct trk_reader *r = open_input(data, size);
    if (!r)
        return;
    p->opened = true;
    int rc;
    for (unsigned k = 0;; k++) {
        int max = sizes[k % (sizeof(sizes) / sizeof(sizes[0]))];
        rc = trk_reader_next_batch(r, evs, max);
        if (rc <= 0)
            break;
        if (rc > max)
            trk_fuzz_fail("trk_reader_next_batch returned more than max");
        for (int i = 0; i < rc; i++) {
            check_event(r, &evs[i]);
            p->hash = hash_event(p->hash, &evs[i]);
        }
        p->events += (uint64_t)rc;
    }
    if (rc != 0 && rc != -1)
        trk_fuzz_fail("trk_reader_next_batch returned a negative count other than -1");
    p->read_error = rc < 0;
    p->status = *trk_reader_status(r);
    trk_reader_close(r);
}

static void pass_stats(const uint8_t *data, size_t size, const struct pass *ref)
{
    struct trk_reader *r = open_input(data, size);
    if (!r)
        return;
    struct trk_stats st;
    int rc = trk_stats_compute(r, &st);
    if (rc == 0 && !ref->read_error) {
        const struct trk_reader_status *s = &ref->status;
        if (st.events != s->events || st.truncated != s->truncated ||
            st.checksum_failures != s->checksum_failures || st.bad_chunks != s->bad_chunks ||
            st.broken_streams != s->broken_streams || st.bytes_lost != s->bytes_lost ||
            st.lost_events != s->lost_events || st.missing_chunks != s->missing_chunks ||
            st.ends_inside_chunk != s->ends_inside_chunk)
            trk_fuzz_fail("trk_stats_compute disagrees with the reader's status");
        /* Live totals must stay sums over live blocks, whatever sizes a
         * corrupt file claims. */
        if (st.leaked_bytes > 0 && st.leaked_allocations == 0)
            trk_fuzz_fail("stats: leaked bytes without a leaked allocation");
        if (st.leaked_bytes > st.peak_heap_bytes || st.mmap_leaked_bytes > st.mmap_peak_bytes)
            trk_fuzz_fail("stats: more leaked than at the peak");
        if (!st.command)
            trk_fuzz_fail("stats: command is NULL");
    }
    trk_stats_free(&st);
    trk_reader_close(r);
}

/* Field by field: a struct copy need not copy padding. */
static bool status_equal(const struct trk_reader_status *a, const struct trk_reader_status *b)
{
    return a->truncated == b->truncated && a->end_seen == b->end_seen &&
           a->end_reason == b->end_reason && a->end_ts == b->end_ts &&
           a->end_records == b->end_records && a->end_streams == b->end_streams &&
           a->lost_events == b->lost_events && a->checksum_failures == b->checksum_failures &&
           a->bad_chunks == b->bad_chunks && a->broken_streams == b->broken_streams &&
           a->bytes_lost == b->bytes_lost && a->streams == b->streams &&
           a->chunks == b->chunks && a->records == b->records && a->events == b->events &&
           a->order_violations == b->order_violations && a->bad_stacks == b->bad_stacks &&
           a->missing_chunks == b->missing_chunks && a->ends_inside_chunk == b->ends_inside_chunk;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pass one, batch;
    pass_single(data, size, &one);
    pass_batch(data, size, &batch);
    if (one.opened != batch.opened)
        trk_fuzz_fail("the same bytes opened once and failed once");
    if (one.opened && !one.read_error && !batch.read_error) {
        if (one.events != batch.events || one.hash != batch.hash)
            trk_fuzz_fail("trk_reader_next and trk_reader_next_batch disagree");
        if (!status_equal(&one.status, &batch.status))
            trk_fuzz_fail("status differs between two reads of the same bytes");
    }
    if (one.opened)
        pass_stats(data, size, &one);
    return 0;
}
