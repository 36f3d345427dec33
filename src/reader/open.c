/* SPDX-License-Identifier: MIT
 *
 * open.c - opening a capture: the file header and its TLVs (docs/FORMAT.md
 * §1), the reader's lifetime and its simple accessors. Must not: read past
 * the header (chunks are source.c's), or report a bad header as anything
 * but a one-line error naming the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/varint.h"
#include "reader/reader_internal.h"

/* The public header sizes its structures and decodes Python frames with its
 * own copies of the format's constants, so that a third party needs no
 * internal header: keep the two in step. */
#define TRK_MODULE_FIELD(f) (((struct trk_module *)0)->f)
_Static_assert(TRK_READER_BUILDID_MAX == TRK_BUILDID_MAX, "reader.h build-id size");
_Static_assert(sizeof(TRK_MODULE_FIELD(buildid)) == TRK_BUILDID_MAX, "trk_module.buildid");
_Static_assert(TRK_READER_SEGS_MAX == TRK_MODULE_SEGS_MAX, "reader.h segment count");
_Static_assert(sizeof(TRK_MODULE_FIELD(seg)) / sizeof(TRK_MODULE_FIELD(seg)[0]) ==
                   TRK_MODULE_SEGS_MAX,
               "trk_module.seg");
_Static_assert(TRK_READER_PYFRAME_LINE_BITS == TRK_PYFRAME_LINE_BITS, "Python frame line bits");
_Static_assert(TRK_PYFRAME_BIT == 1ull << 63, "Python frame bit (trk_ip_is_python)");
_Static_assert(TRK_READER_FORMAT_VERSION == TRK_FMT_VERSION, "reader.h format version");
_Static_assert(TRK_ALLOC_KIND_MAX <= UINT8_MAX && TRK_GPU_KIND_MAX <= UINT8_MAX,
               "trk_event.kind is a byte");

void trk_reader_set_error(struct trk_reader *r, const char *fmt, ...)
{
    int n = snprintf(r->err, sizeof(r->err), "%s: ", r->name);
    if (n < 0 || (size_t)n >= sizeof(r->err))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Copies a TLV value as a NUL-terminated string into the arena at *at. */
static const char *take_string(char **at, const uint8_t *v, size_t len)
{
    char *s = *at;
    memcpy(s, v, len);
    s[len] = '\0';
    *at = s + len + 1;
    return s;
}

/* Splits the NUL-separated command line into argv. A missing final NUL is
 * tolerated: the last argument simply ends with the TLV. */
static int parse_argv(struct trk_reader *r, const char *cmd, size_t len)
{
    int argc = 0;
    for (size_t i = 0; i < len; i++)
        if (cmd[i] == '\0')
            argc++;
    if (len > 0 && cmd[len - 1] != '\0')
        argc++;
    r->info.argv = calloc((size_t)argc + 1, sizeof(char *));
    if (!r->info.argv)
        return -1;
    size_t start = 0;
    for (int k = 0; k < argc; k++) {
        r->info.argv[k] = (char *)cmd + start;
        start += strlen(cmd + start) + 1;
    }
    r->info.argc = argc;
    return 0;
}

static int parse_tlvs(struct trk_reader *r, const uint8_t *h, size_t hlen)
{
    /* Every string fits in one arena: the TLV bytes plus a NUL each. */
    r->info_strings = malloc(hlen + 8);
    if (!r->info_strings) {
        trk_reader_set_error(r, "out of memory");
        return -1;
    }
    char *at = r->info_strings;
    const char *cmd = NULL;
    size_t cmd_len = 0;
    size_t p = TRK_FMT_HEADER_FIXED, end = hlen - 4;
    while (p < end) {
        if (end - p < TRK_FMT_TLV_HEAD) {
            trk_reader_set_error(r, "corrupt header (truncated TLV)");
            return -1;
        }
        uint16_t tag = trk_get_le16(h + p);
        uint16_t reserved = trk_get_le16(h + p + 2);
        uint32_t len = trk_get_le32(h + p + 4);
        p += TRK_FMT_TLV_HEAD;
        if (reserved != 0) {
            /* Reserved fields are zero in every version (FORMAT.md §1). */
            trk_reader_set_error(r, "corrupt header (TLV %u reserved field 0x%04x)", tag, reserved);
            return -1;
        }
        if (len > end - p) {
            trk_reader_set_error(r, "corrupt header (TLV %u longer than the header)", tag);
            return -1;
        }
        const uint8_t *v = h + p;
        p += len;
        switch (tag) {
        case TRK_TLV_CMDLINE:
            cmd_len = len;
            cmd = take_string(&at, v, len);
            break;
        case TRK_TLV_EXE:
            r->info.exe = take_string(&at, v, len);
            break;
        case TRK_TLV_HOST:
            r->info.host = take_string(&at, v, len);
            break;
        case TRK_TLV_CWD:
            r->info.cwd = take_string(&at, v, len);
            break;
        case TRK_TLV_VERSION:
            r->info.writer_version = take_string(&at, v, len);
            break;
        case TRK_TLV_SAMPLE:
            /* Malformed (short): ignored like an unknown tag. */
            if (len >= 16) {
                r->info.sample_bytes = trk_get_le64(v);
                r->info.sample_seed = trk_get_le64(v + 8);
            }
            break;
        case TRK_TLV_FORK:
            /* A malformed one is ignored like an unknown tag: the file is
             * still this process's, only its inheritance is unknown. */
            if (len > 12 && len - 12 < 256 && !memchr(v + 12, '/', len - 12) &&
                !memchr(v + 12, '\0', len - 12) && trk_get_le64(v) > 0) {
                r->info.fork_seq = trk_get_le64(v);
                r->info.fork_parent_pid = trk_get_le32(v + 8);
                r->info.fork_parent = take_string(&at, v + 12, len - 12);
            }
            break;
        default:
            break; /* unknown tags are skipped by design */
        }
    }
    if (parse_argv(r, cmd ? cmd : "", cmd_len) < 0) {
        trk_reader_set_error(r, "out of memory");
        return -1;
    }
    return 0;
}

static int read_header(struct trk_reader *r)
{
    struct trk_src *s = &r->src;
    size_t avail = trk_src_ensure(s, TRK_FMT_HEADER_FIXED);
    if (s->err) {
        trk_reader_set_error(r, "%s", strerror(s->err));
        return -1;
    }
    const uint8_t *h = s->buf + s->pos;
    if (avail == 0) {
        /* A process that never got to write its header: the disk was full,
         * or the program was not tracked after all. */
        trk_reader_set_error(r, "empty capture: nothing was written (disk full?)");
        return -1;
    }
    if (avail < TRK_FMT_MAGIC_LEN || memcmp(h, TRK_FMT_MAGIC, TRK_FMT_MAGIC_LEN) != 0) {
        trk_reader_set_error(r, "not a tracker capture (bad magic)");
        return -1;
    }
    if (avail < 10) {
        trk_reader_set_error(r, "truncated header (%zu bytes)", avail);
        return -1;
    }
    uint16_t version = trk_get_le16(h + 8);
    if (version > TRK_FMT_VERSION) {
        trk_reader_set_error(r, "capture version %u is newer than this reader (%u)", version,
                             TRK_FMT_VERSION);
        return -1;
    }
    if (version == 0) {
        trk_reader_set_error(r, "unsupported capture version 0");
        return -1;
    }
    if (avail < TRK_FMT_HEADER_FIXED) {
        trk_reader_set_error(r, "truncated header (%zu bytes)", avail);
        return -1;
    }
    uint32_t hlen = trk_get_le32(h + 12);
    if (hlen < TRK_FMT_HEADER_FIXED + 4 || hlen > TRK_FMT_HEADER_MAX) {
        trk_reader_set_error(r, "corrupt header (length %u)", hlen);
        return -1;
    }
    avail = trk_src_ensure(s, hlen);
    if (s->err) {
        trk_reader_set_error(r, "%s", strerror(s->err));
        return -1;
    }
    if (avail < hlen) {
        trk_reader_set_error(r, "truncated header (%zu of %u bytes)", avail, hlen);
        return -1;
    }
    h = s->buf + s->pos;
    if (trk_crc32c(0, h, hlen - 4) != trk_get_le32(h + hlen - 4)) {
        trk_reader_set_error(r, "corrupt header (checksum mismatch)");
        return -1;
    }
    uint16_t flags = trk_get_le16(h + 10);
    if (flags != 0) {
        trk_reader_set_error(r, "corrupt header (reserved flags 0x%04x)", flags);
        return -1;
    }
    struct trk_reader_info *in = &r->info;
    in->version = version;
    in->pid = trk_get_le32(h + 16);
    in->ppid = trk_get_le32(h + 20);
    in->root_pid = trk_get_le32(h + 24);
    in->page_size = trk_get_le32(h + 28);
    in->start_realtime = trk_get_le64(h + 32);
    in->clock_base = trk_get_le64(h + 40);
    in->session = trk_get_le64(h + 48);
    in->max_depth = trk_get_le32(h + 56);
    in->options = trk_get_le32(h + 60);
    in->exe = in->host = in->cwd = in->writer_version = in->fork_parent = "";
    if (parse_tlvs(r, h, hlen) < 0)
        return -1;
    if (!in->fork_seq)
        r->inherit_state = INHERIT_DONE;
    s->pos += hlen;
    return 0;
}

int trk_reader_open_fd(int fd, const char *name, struct trk_reader **out, char *err, size_t errlen)
{
    *out = NULL;
    struct trk_reader *r = calloc(1, sizeof(*r));
    char *nm = strdup(name ? name : "capture");
    if (!r || !nm) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", name ? name : "capture");
        free(r);
        free(nm);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    r->name = nm;
    trk_src_init(&r->src, fd);
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        r->file_size = (uint64_t)st.st_size;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        trk_reader_set_error(r, "is a directory");
    } else if (read_header(r) == 0) {
        r->err[0] = '\0';
        *out = r;
        return 0;
    }
    if (err && errlen)
        snprintf(err, errlen, "%s", r->err);
    trk_reader_close(r);
    return -1;
}

int trk_reader_open(const char *path, struct trk_reader **out, char *err, size_t errlen)
{
    *out = NULL;
    /* Non-blocking: opening a FIFO planted where a capture is expected (a
     * sibling <stem>.<n>.bin in a shared directory) must not wait for a
     * writer. Only a regular file is read: a FIFO or device may block or
     * never end. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = "is a directory";
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    if (why) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, why);
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return trk_reader_open_fd(fd, path, out, err, errlen);
}

const struct trk_reader_info *trk_reader_info(const struct trk_reader *r)
{
    return &r->info;
}

const struct trk_reader_status *trk_reader_status(const struct trk_reader *r)
{
    return &r->status;
}

void trk_reader_progress(const struct trk_reader *r, uint64_t *done, uint64_t *total)
{
    uint64_t pos = r->src.off + r->src.pos;
    *total = r->file_size;
    *done = r->file_size && pos > r->file_size ? r->file_size : pos;
}

const char *trk_reader_error(const struct trk_reader *r)
{
    return r->err;
}

const char *trk_event_type_name(unsigned type)
{
    static const char *const names[] = {
        [TRK_EV_ALLOC] = "alloc",
        [TRK_EV_FREE] = "free",
        [TRK_EV_MMAP] = "mmap",
        [TRK_EV_MUNMAP] = "munmap",
        [TRK_EV_MREMAP_OLD] = "mremap_old",
        [TRK_EV_MREMAP_NEW] = "mremap_new",
        [TRK_EV_THREAD_START] = "thread_start",
        [TRK_EV_THREAD_NAME] = "thread_name",
        [TRK_EV_THREAD_EXIT] = "thread_exit",
        [TRK_EV_RSS] = "rss",
        [TRK_EV_MODULES] = "modules",
        [TRK_EV_LOST] = "lost",
        [TRK_EV_GPU_ALLOC] = "gpu_alloc",
        [TRK_EV_GPU_FREE] = "gpu_free",
        [TRK_EV_GPU_FAIL] = "gpu_fail",
        [TRK_EV_GPU_MAP] = "gpu_map",
        [TRK_EV_GPU_UNMAP] = "gpu_unmap",
        [TRK_EV_GPU_MEMINFO] = "gpu_meminfo",
        [TRK_EV_PY_INFO] = "py_info",
        [TRK_EV_PY_IMPORT] = "py_import",
        [TRK_EV_PY_IMPORT_END] = "py_import_end",
        [TRK_EV_PY_MARK] = "py_mark",
        [TRK_EV_LEAK_SCAN] = "leak_scan",
        [TRK_EV_LEAK] = "leak",
    };
    if (type >= sizeof(names) / sizeof(names[0]) || !names[type])
        return "unknown";
    return names[type];
}

void trk_reader_close(struct trk_reader *r)
{
    if (!r)
        return;
    trk_src_free(&r->src);
    trk_decode_free(r);
    trk_merge_free(r);
    trk_inherit_free(r);
    free(r->info.argv);
    free(r->info_strings);
    free(r->name);
    free(r);
}
