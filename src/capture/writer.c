/* SPDX-License-Identifier: MIT
 *
 * writer.c - the two background threads and the file's chunk stream.
 *
 * The writer thread is a pure consumer: it writes each thread's committed
 * bytes as a DATA chunk (HUF- or LZ4-compressed where that pays, see
 * write_stream), then a WATERMARK. It never takes the loader lock and never
 * produces records, so producers waiting for ring space always make progress.
 * The sampler thread is a producer: RSS every TRACKER_RSS_MS and module
 * snapshots when the loader's counters moved.
 *
 * Neither thread is the program's: glibc ends a process with exit(0) when
 * its last thread ends (main's pthread_exit included), and counts threads in
 * __nptl_nthreads, so ours are taken out of that count once created (see
 * spawn) and never end through glibc afterwards (finish_thread).
 *
 * Watermarks. Let G0 be the seq counter read at the start of a cycle and
 * f(t) each thread's floor, read before its committed offset c(t). Every
 * event with seq < W = min(G0, f(t)...) is inside [consumed, c(t)) of its
 * thread or already written: a thread that took such a seq either committed
 * it before we read c(t), or is still in flight, in which case its floor (set
 * before the fetch-add, published by it) is at most that seq. So after the
 * cycle's DATA chunks, "all seq < W precede this point" holds. The same
 * holds for calls a signal handler made inside a hook, which wait in a side
 * queue until the hook publishes them: their floor is nfloor (nested.c).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <lz4.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "capture/eh_trim.h"
#include "capture/events.h"
#include "capture/fds.h"
#include "capture/layers.h"
#include "capture/leakscan.h"
#include "capture/lz_link.h"
#include "capture/modules.h"
#include "capture/output.h"
#include "capture/own_mem.h"
#include "capture/unwind.h"
#include "prim/sys.h"
#include "common/crc32c.h"
#include "common/env_options.h"
#include "common/huf.h"

enum { WS_NONE, WS_RUNNING, WS_FAILED };

static _Atomic int writer_state;
static _Atomic int finished;
/* END(exec) is written and the image may be gone any moment: nothing more
 * may be written (nothing follows END), unless the exec fails, when the END
 * is cut off again (end_off) and the capture goes on. */
static _Atomic int ended;
static off_t end_off;
static uint64_t end_chunks;
static _Atomic uint32_t wake_word;
static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *raw_buf, *lz_buf, *huf_buf;
static void *lz_state; /* LZ4's 16 KiB state: not on the stack of an exec'ing thread */
static int lz_cap;
static uint64_t last_wm;
static uint64_t chunks_written;
static uint64_t cycle_raw; /* raw DATA bytes the current flush cycle wrote */
static _Atomic int fail_reported;
static int leak_scan; /* TRACKER_LEAK_SCAN, read at start */
/* zstd, not LZ4, for the linked pieces (codec 4, lz_link.c): where Python's
 * own allocators are traced. Their streams of object records come out
 * 1.4-3.7x smaller under zstd; heap records of native programs gain nothing
 * over HUF at a fraction of its speed, and import torch's default-mode
 * stream 22% for 4x the time (bench/results_size.md). */
static int zlink;

/* glibc's count of live threads (GLIBC_PRIVATE, an unsigned int since
 * NPTL began). start_thread and main's pthread_exit decrement it, and the
 * thread that takes it to zero calls exit(0): the program's last thread ends
 * the process. Counting ours there kept a process whose main thread called
 * pthread_exit alive forever once its other threads were done. NULL when
 * this libc has no such count (then our threads count, as before). */
static _Atomic unsigned int *nthreads;

static void nthreads_resolve(void)
{
    if (nthreads)
        return;
    void *p = dlsym(RTLD_DEFAULT, "__nptl_nthreads");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    /* Only an object of exactly that size is the count we know. */
    if (p && dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
        sym->st_size == sizeof(unsigned int) && ELF64_ST_TYPE(sym->st_info) == STT_OBJECT)
        nthreads = p;
    else
        dlerror(); /* not the program's error */
}

/* A background thread of ours ends only with the process. Returning would
 * give glibc back a count we took away (and could make it call exit a
 * second time, concurrently with the program's); parked, it costs nothing
 * and keeps nothing alive. */
static void finish_thread(void)
{
    if (!nthreads)
        return;
    static uint32_t never;
    for (;;)
        syscall(SYS_futex, &never, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

int trk_writer_alive(void)
{
    return atomic_load_explicit(&writer_state, memory_order_relaxed) == WS_RUNNING;
}

void trk_writer_wake(void)
{
    atomic_fetch_add_explicit(&wake_word, 1, memory_order_release);
    syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void trk_fail(const char *what, int err)
{
    atomic_store(&trk_active, 0);
    int expect = 0;
    if (atomic_compare_exchange_strong(&fail_reported, &expect, 1))
        trk_log("stopped tracking: ", what, err ? strerrordesc_np(err) : NULL);
}

/* Writes one chunk whose stored payload is p1[0, n1) then p2[0, n2) (a ring
 * piece that wraps is written from the ring itself, without a copy). */
static int write_chunk2(unsigned type, uint32_t stream, const uint8_t *p1, uint32_t n1,
                        const uint8_t *p2, uint32_t n2, uint32_t raw, unsigned codec, uint64_t arg)
{
    uint32_t stored = n1 + n2;
    uint8_t h[TRK_CHUNK_HEAD];
    memcpy(h, TRK_CHUNK_MAGIC, 4);
    h[4] = (uint8_t)type;
    h[5] = (uint8_t)codec;
    trk_put_le16(h + 6, 0);
    trk_put_le32(h + 8, stream);
    trk_put_le32(h + 12, stored);
    trk_put_le32(h + 16, raw);
    trk_put_le64(h + 24, arg);
    uint32_t crc = trk_crc32c(0, h + 4, 16);
    crc = trk_crc32c(crc, h + 24, 8);
    crc = trk_crc32c(crc, p1, n1);
    crc = trk_crc32c(crc, p2, n2);
    trk_put_le32(h + 20, crc);

    struct iovec iov[3] = {{h, sizeof(h)}, {(void *)p1, n1}, {(void *)p2, n2}};
    size_t total = sizeof(h) + stored;
    /* Pinned: a program's dup2 onto this number waits until we are done
     * (fds.c). The identity check catches what no hook sees (a raw
     * syscall): never write into a file the program owns. */
    int fd = trk_fd_pin(TRK_FD_CAPTURE);
    if (!trk_fd_intact(TRK_FD_CAPTURE, fd)) {
        trk_fd_unpin(TRK_FD_CAPTURE);
        atomic_store(&writer_state, WS_FAILED);
        trk_fail("the program closed or replaced the capture's descriptor", 0);
        return -1;
    }
    while (total) {
        ssize_t n = writev(fd, iov, 3);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            trk_fd_unpin(TRK_FD_CAPTURE);
            atomic_store(&writer_state, WS_FAILED);
            trk_fail("cannot write capture: ", err);
            return -1;
        }
        total -= (size_t)n;
        for (int i = 0; i < 3 && n; i++) {
            size_t k = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + k;
            iov[i].iov_len -= k;
            n -= (ssize_t)k;
        }
    }
    trk_fd_unpin(TRK_FD_CAPTURE);
    chunks_written++;
    return 0;
}

static int write_chunk(unsigned type, uint32_t stream, const uint8_t *payload, uint32_t stored,
                       uint32_t raw, unsigned codec, uint64_t arg)
{
    return write_chunk2(type, stream, payload, stored, NULL, 0, raw, codec, arg);
}

/* Compression only where it pays. Heap event records (docs/FORMAT.md §4.1)
 * are already dense: LZ4 saves nothing on them (it gives up after ~3.5
 * instructions per byte), while a Huffman code over their bytes (HUF,
 * common/huf.h) still takes ~13% off, at ~9 instructions per byte. Stacks,
 * names and Python code records are the other way round. So LZ4 is tried
 * first, HUF where LZ4 did not halve the piece, the smaller is kept, and a
 * stream keeps compressing while a piece shrinks by at least 1/LZ_MIN_GAIN;
 * after one that did not, it stores its next LZ_RETRY pieces without
 * trying (struct codec_slot). */
#define LZ_MIN_GAIN 16
#define LZ_RETRY    32
/* HUF is tried on pieces of at least this: its table alone is 128 bytes,
 * and a piece that counts its bytes pays ~60K instructions to build a code
 * (most pieces reuse their slot's: codec_slot). HUF costs the writer ~9
 * instructions per byte (~53 per allocbench event; ~12 before the reused
 * code, ~20 before its 8-byte-store loop), so TRACKER_COMPRESS=0 trades
 * the ~15% for that. */
#define HUF_MIN_LEN 16384
/* LZ4 has no table to send, so it pays on much shorter pieces: a program
 * that allocates a few thousand times a second hands the writer 1-10 KiB
 * per 10 ms flush, and storing those left a Python script's capture 3x
 * larger than LZ4 makes it (json_roundtrip: 741 -> ~230 KB). Below this
 * a piece is stored without trying, and without counting as a failure. */
#define LZ_MIN_LEN 512
/* A stream whose last LZ4 try saved nothing (heap records) and whose piece
 * then went to HUF tries LZ4 again only on every LZ_REPROBE-th piece,
 * taking HUF at once in between: the try cost ~3.5 instructions per byte
 * for nothing. */
#define LZ_REPROBE 8
/* What the writer decided for a thread's stream, by its state's slot
 * modulo the table (as lz_link.c's encoders: threads that share a slot only
 * share the decisions, and a new stream in it starts with none). */
static struct codec_slot {
    uint32_t stream;
    uint8_t lz_skip; /* pieces still to store without trying (LZ_RETRY) */
    uint8_t huf_run; /* pieces since the last LZ4 try (0: try; LZ_REPROBE) */
    /* the slot's HUF code, reused over the next pieces (common/huf.h):
     * heap records skip the encoder's counting pass and table build on
     * most pieces */
    struct trk_huf_enc huf;
} codec_slots[64];

/* The linked encoder's block of the piece into lz_buf (lz_link.h). */
static int link_piece(uint32_t stream, uint64_t off, const uint8_t *src, uint32_t len, int accel)
{
    return zlink ? trk_lzlink_zstd(stream, off, src, len, lz_buf, lz_cap)
                 : trk_lzlink_compress(stream, off, src, len, lz_buf, lz_cap, accel);
}

/* pre: flush_lock held. Writes ring bytes [from, to) as one DATA chunk;
 * both ends lie on record boundaries because only commits publish them. */
static int write_stream(struct trk_thread *t, uint64_t from, uint64_t to, int compress)
{
    uint64_t len = to - from, size = t->ring_mask + 1, off = from & t->ring_mask;
    uint64_t first = size - off < len ? size - off : len;
    /* The live set and the codecs read one contiguous piece: the ring's
     * own bytes unless the piece wraps (then a copy, made once). */
    const uint8_t *src = t->ring + off;
    if (first < len && (leak_scan || trk_cfg.compress)) {
        memcpy(raw_buf, t->ring + off, first);
        memcpy(raw_buf + first, t->ring, len - first);
        src = raw_buf;
    }
    cycle_raw += len;
    if (leak_scan) /* the exit scan's live set, kept from the same bytes (leakscan.h) */
        trk_ltrack_piece(t->slot, from, src, len);
    struct codec_slot *cs = &codec_slots[t->slot % (sizeof(codec_slots) / sizeof(codec_slots[0]))];
    if (cs->stream != t->stream) {
        cs->stream = t->stream;
        cs->lz_skip = cs->huf_run = 0;
        cs->huf.age = 0; /* its code is counted anew */
    }
    uint8_t *skip = &cs->lz_skip;
    /* A short piece is worth a linked LZ4 try (lz_link.c): against the
     * stream's history it shrinks as a long one does. */
    int n_link = -1;
    unsigned link_codec = zlink ? TRK_CODEC_ZSTD_LINK : TRK_CODEC_LZ4_LINK;
    if (!*skip && len < LZ_MIN_LEN && trk_cfg.compress)
        n_link = link_piece(t->stream, from, src, (uint32_t)len, 1);
    if (n_link > 0 && (uint64_t)n_link <= len - len / LZ_MIN_GAIN)
        return write_chunk(TRK_CHUNK_DATA, t->stream, lz_buf, (uint32_t)n_link, (uint32_t)len,
                           link_codec, from);
    if (*skip || len < LZ_MIN_LEN || !trk_cfg.compress) {
        /* Stored straight from the ring: the bytes stay put until consumed
         * moves past them, which happens only after this write. Not tried
         * on the linked encoder: its history stops here. */
        if (n_link < 0)
            trk_lzlink_drop(t->stream);
        *skip -= *skip != 0 && len >= LZ_MIN_LEN;
        return write_chunk2(TRK_CHUNK_DATA, t->stream, t->ring + off, (uint32_t)first, t->ring,
                            (uint32_t)(len - first), (uint32_t)len, TRK_CODEC_STORED, from);
    }
    /* LZ4 first: it gives up fast on data without repeats (~3.5
     * instructions per byte on heap records) and wins big on stacks and
     * names; HUF only where LZ4 did not halve the piece, the smaller kept.
     * A faster LZ4 setting costs a few percent of size and frees the core
     * the program's own threads compete for (TRACKER_LZ4_ACCEL). */
    uint8_t *run = &cs->huf_run;
    int huf_ok = compress && len >= HUF_MIN_LEN;
    uint64_t lz = len;
    unsigned lz_codec = link_codec;
    if (!*run || !huf_ok) {
        /* Linked first (codec 3 or 4): a piece of a loop repeats its
         * predecessor. */
        int n = link_piece(t->stream, from, src, (uint32_t)len, trk_cfg.lz4_accel);
        if (n < 0) {
            lz_codec = TRK_CODEC_LZ4;
            n = LZ4_compress_fast_extState(lz_state, (const char *)src, (char *)lz_buf, (int)len,
                                           lz_cap, trk_cfg.lz4_accel);
        }
        lz = n > 0 && (uint64_t)n <= len - len / LZ_MIN_GAIN ? (uint64_t)n : len;
    } else {
        trk_lzlink_drop(t->stream);
    }
    size_t h =
        huf_ok && lz > len / 2 ? trk_huf_encode_reuse(&cs->huf, src, len, huf_buf, lz - 1) : 0;
    if (h) {
        *run = *run || lz == len ? (uint8_t)((*run + 1) % LZ_REPROBE) : 0;
        return write_chunk(TRK_CHUNK_DATA, t->stream, huf_buf, (uint32_t)h, (uint32_t)len,
                           TRK_CODEC_HUF, from);
    }
    if (huf_ok)
        *run = 0;
    if (lz < len)
        return write_chunk(TRK_CHUNK_DATA, t->stream, lz_buf, (uint32_t)lz, (uint32_t)len, lz_codec,
                           from);
    /* Only a piece both codecs were tried on says the stream does not
     * compress: a short one failing LZ4 alone (a program's start-up, before
     * its loops) says little, and cost little. */
    if (huf_ok)
        *skip = LZ_RETRY;
    return write_chunk(TRK_CHUNK_DATA, t->stream, src, (uint32_t)len, (uint32_t)len,
                       TRK_CODEC_STORED, from);
}

/* A state whose thread has exited and been drained is reused by the next new
 * thread. tgkill(…, 0) tells whether the tid still exists; a reused tid only
 * delays recycling. */
static void maybe_recycle(struct trk_thread *t)
{
    if (syscall(SYS_tgkill, trk_pid, t->tid, 0) == 0 || errno != ESRCH)
        return;
    if (atomic_load_explicit(&t->committed, memory_order_acquire) ==
        atomic_load_explicit(&t->consumed, memory_order_relaxed))
        atomic_store_explicit(&t->state, TRK_TS_FREE, memory_order_release);
}

/* A new thread found no free state. The writer recycles exited threads'
 * states once per flush period, and a program that starts short threads
 * one after another got through hundreds of fresh states (640 KiB of
 * address space each) in between: ~100 MiB over 10,000 threads. So the new
 * thread recycles the states of threads that are gone itself, writing out
 * what they left, as the writer would. It never waits for the lock: if the
 * writer holds it, a fresh state it is. */
void trk_writer_reclaim(void)
{
    if (atomic_load(&writer_state) != WS_RUNNING || pthread_mutex_trylock(&flush_lock))
        return;
    int saved = errno; /* called from a hook: the program's errno is the program's */
    if (!atomic_load(&finished) && trk_output_fd() >= 0) {
        for (struct trk_thread *t = trk_thread_list(); t; t = t->next) {
            if (atomic_load_explicit(&t->state, memory_order_acquire) != TRK_TS_EXITING ||
                (syscall(SYS_tgkill, trk_pid, t->tid, 0) == 0 || errno != ESRCH))
                continue;
            /* Gone: nothing of it is still in flight, so its commits are final. */
            uint64_t c = atomic_load_explicit(&t->committed, memory_order_acquire);
            uint64_t done = atomic_load_explicit(&t->consumed, memory_order_relaxed);
            if (c > done) {
                /* Stored: a program thread (see flush_cycle). */
                if (write_stream(t, done, c, 0))
                    break;
                atomic_store_explicit(&t->consumed, c, memory_order_release);
                atomic_store_explicit(&t->wake_sent, 0, memory_order_relaxed);
            }
            atomic_store_explicit(&t->state, TRK_TS_FREE, memory_order_release);
        }
    }
    pthread_mutex_unlock(&flush_lock);
    errno = saved;
}

/* pre: flush_lock held. compress: on the writer thread only; elsewhere
 * (the program's thread at exit or exec) the stack may be too small for
 * HUF's tables (~10 KiB), and pieces get LZ4 only (its state is mapped, not
 * on the stack): a short program writes nearly all of its capture there. */
static void flush_cycle(int final, int compress)
{
    if (atomic_load(&writer_state) == WS_FAILED || trk_output_fd() < 0 || atomic_load(&ended))
        return;
    uint64_t w = atomic_load_explicit(&trk_seq, memory_order_seq_cst);
    /* The floors first, then the pieces: each floor is still read before
     * its thread's committed offset, so W is the same bound (see the top),
     * and known before the pieces are written: the live set may take the
     * cycle's events below it as final (trk_ltrack_cycle). */
    for (struct trk_thread *t = trk_thread_list(); t; t = t->next) {
        int st = atomic_load_explicit(&t->state, memory_order_acquire);
        if (st != TRK_TS_ACTIVE && st != TRK_TS_EXITING)
            continue;
        uint64_t f = atomic_load_explicit(&t->floor, memory_order_acquire);
        uint64_t nf = atomic_load_explicit(&t->nfloor, memory_order_acquire);
        if (f < w)
            w = f;
        if (nf < w)
            w = nf;
    }
    /* The last thread with bytes to write, its committed offset read after
     * the floors (so it serves the proof above): its piece is the cycle's
     * last for the live set (trk_ltrack_last), and threads after it in the
     * list, whose every event below W was written already, wait for the
     * next cycle. Only the writer thread's own cycles (compress) do this:
     * a final one must write everything (W is then UINT64_MAX), and the
     * flushes before an exec or the exit scan write what they can. */
    struct trk_thread *last = NULL;
    for (struct trk_thread *t = trk_thread_list(); t && !final && compress; t = t->next) {
        int st = atomic_load_explicit(&t->state, memory_order_acquire);
        if ((st == TRK_TS_ACTIVE || st == TRK_TS_EXITING) &&
            atomic_load_explicit(&t->committed, memory_order_acquire) >
                atomic_load_explicit(&t->consumed, memory_order_relaxed))
            last = t;
    }
    trk_ltrack_cycle(w);
    int past_last = 0;
    for (struct trk_thread *t = trk_thread_list(); t; t = t->next) {
        int st = atomic_load_explicit(&t->state, memory_order_acquire);
        if (st != TRK_TS_ACTIVE && st != TRK_TS_EXITING)
            continue;
        uint64_t c = atomic_load_explicit(&t->committed, memory_order_acquire);
        uint64_t done = atomic_load_explicit(&t->consumed, memory_order_relaxed);
        if (c > done && !past_last) {
            if (t == last) {
                trk_ltrack_last();
                past_last = 1;
            }
            if (write_stream(t, done, c, compress)) {
                trk_ltrack_cycle(0);
                return;
            }
            atomic_store_explicit(&t->consumed, c, memory_order_release);
            atomic_store_explicit(&t->wake_sent, 0, memory_order_relaxed);
        }
        if (st == TRK_TS_EXITING && !final)
            maybe_recycle(t);
    }
    trk_ltrack_cycle(0);
    if (final)
        w = UINT64_MAX;
    if (w > last_wm && write_chunk(TRK_CHUNK_WATERMARK, 0, NULL, 0, 0, TRK_CODEC_STORED, w) == 0) {
        last_wm = w;
        trk_ltrack_watermark(w);
    }
}

/* A quiet program (under QUIET_BYTES a cycle) hands the writer pieces of a
 * few KiB, each costing a chunk header, a watermark and LZ4 a fresh
 * block: the writer then waits up to QUIET_MAX flush periods between
 * cycles (iter_pipeline.py: 42 -> 37 KB). A ring past half full still
 * wakes it at once (trk_ring_maybe_wake), so no ring waits longer.
 *
 * The wait goes back to one period only after a cycle of BUSY_BYTES, not
 * at QUIET_BYTES: a program writing ~2.5 MB/s (json_roundtrip.py) then
 * swung between waits of 1, 2 and 4 periods (pieces of 27, 53 and
 * 105 KB), and every short cycle cost a chunk header, a watermark and a
 * sampler piece more: 19 cycles in its 0.4 s where 13 do (42.1 -> 41.3
 * KB). BUSY_BYTES is HC's longest piece (lz_link.h): a longer wait that
 * made pieces past it would lose them HC, which on heap records halves
 * them (py_alloc_churn.py kept 140 KB pieces at 256 KiB here: +14%). */
#define QUIET_BYTES (64u << 10)
#define BUSY_BYTES  TRK_LZLINK_HC_MAX
#define QUIET_MAX   4

long trk_writer_next_wait(long periods, uint64_t raw)
{
    if (raw >= BUSY_BYTES || periods < 1)
        return 1;
    if (raw >= QUIET_BYTES)
        return periods;
    return periods < QUIET_MAX ? periods * 2 : QUIET_MAX;
}

static void *writer_main(void *arg)
{
    (void)arg;
    trk_guard_set(TRK_GUARD_INTERNAL); /* nothing this thread does is the program's */
    long periods = 1;
    while (!atomic_load(&finished)) {
        uint32_t w = atomic_load_explicit(&wake_word, memory_order_acquire);
        pthread_mutex_lock(&flush_lock);
        cycle_raw = 0;
        if (!atomic_load(&finished))
            flush_cycle(0, 1);
        /* read under the lock: a flush by another thread (the exit's, a
         * fork's) adds to it */
        uint64_t raw = cycle_raw;
        pthread_mutex_unlock(&flush_lock);
        if (atomic_load(&writer_state) != WS_RUNNING)
            break;
        periods = trk_writer_next_wait(periods, raw);
        long ms = (long)trk_cfg.flush_ms * periods;
        struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
        syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, w, &ts, NULL, 0);
    }
    finish_thread();
    return NULL;
}

/* /proc/self/statm: size resident shared ... in pages; "shared" is the
 * file-backed plus shmem part, so anonymous = resident - shared. */
static int read_rss(int fd, uint64_t *anon, uint64_t *file)
{
    char buf[128];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    uint64_t f[3] = {0, 0, 0};
    const char *p = buf;
    for (int i = 0; i < 3; i++) {
        while (*p == ' ')
            p++;
        while (*p >= '0' && *p <= '9')
            f[i] = f[i] * 10 + (uint64_t)(*p++ - '0');
    }
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    *file = f[2] * page;
    *anon = f[1] > f[2] ? (f[1] - f[2]) * page : 0;
    return 0;
}

/* A sample equal to the last one written is left out, as long as one is
 * written at least this often: readers hold a sample's values until the
 * next one (docs/FORMAT.md §4), and a steady program wrote 100 equal
 * samples a second (json_roundtrip.py: 17 of its 48, one in three of
 * its sampler's pieces; an idle service, nearly all of its capture). */
#define RSS_SAME_MAX_NS 1000000000ull

static void *sampler_main(void *arg)
{
    (void)arg;
    trk_tl_internal = 1;
    struct trk_thread *t = trk_enter();
    if (!t) {
        finish_thread();
        return NULL;
    }
    trk_guard_set(TRK_GUARD_INTERNAL); /* for good: nothing here is the program's */
    int period = trk_cfg.rss_ms ? trk_cfg.rss_ms : 10;
    unsigned ticks = 0;
    uint64_t last_anon = UINT64_MAX, last_file = UINT64_MAX, last_ns = 0;
    trk_clock_recalibrate();
    struct timespec first = {0, 2000000}; /* a 2 ms baseline for the first fit */
    nanosleep(&first, NULL);
    while (!atomic_load(&finished) && atomic_load(&trk_active)) {
        trk_clock_recalibrate();
        uint64_t anon, file;
        if (trk_cfg.rss_ms) {
            int fd = trk_fd_pin(TRK_FD_STATM);
            uint64_t now = trk_now_ns();
            if (fd >= 0 && read_rss(fd, &anon, &file) == 0 &&
                (anon != last_anon || file != last_file || now - last_ns >= RSS_SAME_MAX_NS)) {
                trk_ev_rss(t, anon, file);
                last_anon = anon;
                last_file = file;
                last_ns = now;
            }
            trk_fd_unpin(TRK_FD_STATM);
        }
        /* Loads through libc-internal dlopen (NSS, iconv, libgcc_s) bypass
         * our hook; the loader's counters reveal them within ~10 ms. */
        if ((ticks++ * (unsigned)period) % 10 == 0 && trk_modules_changed(t))
            trk_modules_snapshot(t);
        trk_layers_sample(t); /* e.g. driver-reported GPU memory (src/gpu) */
        trk_eh_trim_tick(t);  /* the unwind tables' pages we read, back */
        struct timespec ts = {period / 1000, (long)(period % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    finish_thread();
    return NULL;
}

/* Stacks of our own size: the default (RLIMIT_STACK, 8 MiB) for each of
 * ours came out of a program's RLIMIT_AS share. The writer's deepest use is
 * LZ4's 16 KiB state; the sampler's, a module walk or the GPU driver's
 * memory query. */
#define WRITER_STACK  (256u << 10)
#define SAMPLER_STACK (1u << 20)

static int spawn(void *(*fn)(void *), const char *name, size_t stack)
{
    sigset_t all, old;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr))
        return EAGAIN;
    pthread_attr_setstacksize(&attr, stack);
    sigfillset(&all);
    /* Signals meant for the program must never land on our threads. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    int rc = pthread_create(&th, &attr, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc)
        return rc;
    /* pthread_create counted the thread before cloning it; the creator is
     * one of the program's threads and still counted, so this never takes
     * the count to zero. */
    if (nthreads)
        atomic_fetch_sub(nthreads, 1);
    trk_sys_name_thread(th, name);
    pthread_detach(th);
    return 0;
}

int trk_writer_start(void)
{
    if (!raw_buf) {
        lz_cap = LZ4_compressBound((int)trk_cfg.ring_size);
        raw_buf = trk_own_map(TRK_OWN_WRITER, trk_cfg.ring_size);
        lz_buf = trk_own_map(TRK_OWN_WRITER, (size_t)lz_cap);
        huf_buf = trk_own_map(TRK_OWN_WRITER, trk_cfg.ring_size);
        lz_state = trk_own_map(TRK_OWN_WRITER, (size_t)LZ4_sizeofState());
        if (!raw_buf || !lz_buf || !huf_buf || !lz_state)
            return ENOMEM;
    }
    nthreads_resolve();
    leak_scan = (int)trk_env_long(TRK_ENV_LEAK_SCAN);
    zlink = (int)trk_env_long(TRK_ENV_PYTHON_ALLOCATORS);
    if (leak_scan)
        trk_ltrack_start();
    /* Opened here, on the program's thread (constructor, fork child), not
     * by the sampler: a background open or close races with a program that
     * closes a number twice (bash), and would take the number the program
     * expects next. A fork child's own statm: /proc/self meant the parent. */
    if (trk_cfg.rss_ms)
        trk_fd_open_proc(TRK_FD_STATM, "/proc/self/statm");
    trk_fd_open_proc(TRK_FD_PAGEMAP, "/proc/self/pagemap");
    atomic_store(&finished, 0);
    last_wm = 0;
    atomic_store(&writer_state, WS_RUNNING);
    int rc = spawn(writer_main, "trk-writer", WRITER_STACK);
    if (rc) {
        atomic_store(&writer_state, WS_NONE);
        return rc;
    }
    return spawn(sampler_main, "trk-sampler", SAMPLER_STACK);
}

/* Waits (bounded) for events already in flight on other threads to commit,
 * so that the final flush includes them. */
static void wait_in_flight(void)
{
    for (int i = 0; i < 500; i++) {
        int busy = 0;
        for (struct trk_thread *t = trk_thread_list(); t; t = t->next) {
            int st = atomic_load(&t->state);
            if ((st == TRK_TS_ACTIVE || st == TRK_TS_EXITING) && t != trk_tl_thread &&
                (atomic_load_explicit(&t->floor, memory_order_acquire) != UINT64_MAX ||
                 atomic_load_explicit(&t->nfloor, memory_order_acquire) != UINT64_MAX))
                busy = 1;
        }
        if (!busy)
            return;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* pre: flush_lock held. What the leak scan has written so far, out. */
static void drain_locked(void)
{
    flush_cycle(0, 0);
}

/* At the process's end (not at an exec: the image goes on), classify the
 * heap blocks still live (leakscan.h). Everything recorded is flushed
 * first: the live set is what the file holds (kept as it was written, or
 * read back from it). */
static void leak_scan_at_exit(int reason, const void *stack_top)
{
    if (!leak_scan || (reason != TRK_END_EXIT && reason != TRK_END_UEXIT) ||
        atomic_load(&writer_state) != WS_RUNNING)
        return;
    flush_cycle(0, 0);
    struct trk_thread *t = trk_tl_thread ? trk_tl_thread : trk_thread_attach();
    trk_leakscan_run(t, trk_output_fd(), stack_top, drain_locked);
}

void trk_writer_finish(int reason, int stop)
{
    /* The exiting thread's stack is scanned from here up: the program's
     * frames and, just below our frame pointer, the callee-saved registers
     * our prologue pushed (the program's values: its registers are not
     * otherwise scanned for this thread). */
    const void *stack_top = (const char *)__builtin_frame_address(0) - 6 * sizeof(void *);
    int was = trk_guard_enter_internal();
    pthread_mutex_lock(&flush_lock);
    if (atomic_load(&finished) || atomic_load(&ended)) {
        pthread_mutex_unlock(&flush_lock);
        trk_guard_leave(was);
        return;
    }
    int failed = atomic_load(&fail_reported);
    if (stop) {
        atomic_store(&trk_active, 0);
        wait_in_flight();
        if (!failed)
            leak_scan_at_exit(reason, stack_top);
    }
    flush_cycle(stop, 0);
    /* After an internal failure the capture ends without a trailer, so that
     * every reader reports it as truncated instead of silently short. */
    if (!failed && atomic_load(&writer_state) == WS_RUNNING) {
        uint8_t buf[(9 + TRK_OWN_FIELDS) * TRK_VARINT_MAX], *p = buf;
        struct trk_unwind_stats us;
        trk_unwind_stats_get(&us);
        uint64_t lost = 0, streams = 0;
        for (struct trk_thread *t = trk_thread_list(); t; t = t->next) {
            lost += t->lost;
            streams++;
        }
        p = trk_put_varint(p, trk_now_ns());
        p = trk_put_varint(p, (uint64_t)reason);
        p = trk_put_varint(p, chunks_written);
        p = trk_put_varint(p, lost);
        p = trk_put_varint(p, streams);
        p = trk_put_varint(p, us.checked); /* TRACKER_UNWIND_CHECK (docs/FORMAT.md) */
        p = trk_put_varint(p, us.mismatches);
        p = trk_put_varint(p, us.fallbacks);
        /* The tracker's own memory (docs/FORMAT.md §2, END): a count, then
         * the fields, so that later writers can add some. */
        uint64_t own[TRK_OWN_FIELDS];
        trk_own_snapshot(own);
        p = trk_put_varint(p, TRK_OWN_FIELDS);
        for (int i = 0; i < TRK_OWN_FIELDS; i++)
            p = trk_put_varint(p, own[i]);
        end_off = stop ? -1 : lseek(trk_output_fd(), 0, SEEK_CUR);
        end_chunks = chunks_written;
        if (write_chunk(TRK_CHUNK_END, 0, buf, (uint32_t)(p - buf), (uint32_t)(p - buf),
                        TRK_CODEC_STORED, 0) == 0 &&
            !stop)
            atomic_store(&ended, 1);
    }
    if (stop) {
        atomic_store(&finished, 1);
        trk_writer_wake();
    }
    pthread_mutex_unlock(&flush_lock);
    trk_guard_leave(was);
}

/* The exec after trk_writer_finish(…, 0) failed and this image goes on:
 * cut the END off again so the capture continues as if no exec had been
 * tried. If that is impossible the capture stays complete and tracking
 * stops, said once. */
void trk_writer_unfinish(void)
{
    pthread_mutex_lock(&flush_lock);
    if (atomic_load(&ended)) {
        int fd = trk_output_fd();
        if (end_off < 0 || ftruncate(fd, end_off) != 0 || lseek(fd, end_off, SEEK_SET) != end_off) {
            trk_fail("cannot continue the capture after a failed exec: ", errno);
        } else {
            chunks_written = end_chunks;
            atomic_store(&ended, 0);
        }
    }
    pthread_mutex_unlock(&flush_lock);
}

void trk_writer_fork_prepare(void)
{
    pthread_mutex_lock(&flush_lock);
}

void trk_writer_fork_parent(void)
{
    pthread_mutex_unlock(&flush_lock);
}

/* Neither background thread exists in the child; the caller restarts them
 * once the child's own capture is open. */
void trk_writer_fork_child(void)
{
    pthread_mutex_init(&flush_lock, NULL);
    atomic_store(&writer_state, WS_NONE);
    atomic_store(&fail_reported, 0);
    atomic_store(&ended, 0);
    chunks_written = 0;
    last_wm = 0;
    trk_lzlink_fork_child(); /* stream ids restart at 0 */
    trk_lroots_fork_child(); /* the inherited blocks are not in our capture */
    trk_ltrack_fork_child();
}
