/* SPDX-License-Identifier: MIT
 *
 * output.c - choosing, creating and heading the capture file of this
 * process (docs/FORMAT.md §1 and §5).
 *
 * The first process of a run writes the file `tracker run` created (handed
 * over as TRACKER_OUTPUT_FD) or TRACKER_OUTPUT; every other process of the
 * run writes <stem>.<pid>.bin beside it. Files are created O_EXCL|O_NOFOLLOW,
 * mode 0600, so that a capture never clobbers or follows anything. Runs in
 * the constructor and the fork-child handler only; uses static buffers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "capture/events.h"
#include "capture/fds.h"
#include "capture/output.h"
#include "prim/sys.h"
#include "common/crc32c.h"
#include "common/env_options.h"
#include "trk_config.h"

static char out_path[4096];
static uint64_t session;
static uint8_t header[64 << 10];

int trk_output_fd(void)
{
    return trk_fd_get(TRK_FD_CAPTURE);
}

/* Only from the constructor and the fork-child handler: no other thread of
 * ours runs yet, so the number cannot move underneath. */
int trk_write_all(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    int fd = trk_output_fd();
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static uint64_t parse_hex(const char *s)
{
    uint64_t v = 0;
    for (; s && *s; s++) {
        int d = (*s >= '0' && *s <= '9')   ? *s - '0'
                : (*s >= 'a' && *s <= 'f') ? *s - 'a' + 10
                : (*s >= 'A' && *s <= 'F') ? *s - 'A' + 10
                                           : -1;
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    return v;
}

static long parse_dec(const char *s)
{
    long v = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000)
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* Reads the session id from an existing capture, 0 if it is not one. */
static uint64_t file_session(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint8_t h[TRK_FMT_HEADER_FIXED];
    ssize_t n = read(fd, h, sizeof(h));
    close(fd);
    if (n != (ssize_t)sizeof(h) || memcmp(h, TRK_FMT_MAGIC, TRK_FMT_MAGIC_LEN) != 0)
        return 0;
    return trk_get_le64(h + 48);
}

/* Only a regular file (or a symlink, which is itself removed, never
 * followed) may be replaced under TRACKER_FORCE. */
static int replaceable(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
}

static int create_excl(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* <stem>.<pid>.bin, then <stem>.<pid>.<n>.bin while taken by an earlier image
 * of this pid (an exec in the same process) or by another run. */
static int open_sibling(const char *root)
{
    size_t stem = strlen(root);
    if (stem >= 4 && strcmp(root + stem - 4, ".bin") == 0)
        stem -= 4;
    if (stem + 48 >= sizeof(out_path))
        return -ENAMETOOLONG;
    char num[24];
    for (unsigned n = 0; n < 1000; n++) {
        memcpy(out_path, root, stem);
        size_t l = stem;
        out_path[l++] = '.';
        l += trk_u64_to_dec(out_path + l, (uint64_t)getpid());
        if (n) {
            out_path[l++] = '.';
            size_t k = trk_u64_to_dec(num, n);
            memcpy(out_path + l, num, k);
            l += k;
        }
        memcpy(out_path + l, ".bin", 5);
        int fd = create_excl(out_path);
        if (fd >= 0 || errno != EEXIST)
            return fd >= 0 ? fd : -errno;
        if (trk_cfg.force && file_session(out_path) != session && replaceable(out_path) &&
            unlink(out_path) == 0) {
            fd = create_excl(out_path);
            if (fd >= 0)
                return fd;
        }
    }
    return -EEXIST;
}

/* The fd `tracker run` created is only trusted if it still is that file:
 * an exec'd image may inherit a stale number from a saved environment. */
static int inherited_fd(const char *path)
{
    long fd = parse_dec(getenv(TRK_ENV_NAME(OUTPUT_FD)));
    if (fd < 0)
        return -1;
    unsetenv(TRK_ENV_NAME(OUTPUT_FD));
    struct stat a, b;
    if (fstat((int)fd, &a) || stat(path, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino ||
        !S_ISREG(a.st_mode) || a.st_size != 0)
        return -1;
    fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    return (int)fd;
}

static void default_name(char *buf, size_t size)
{
    extern char *program_invocation_short_name;
    const char *prog = program_invocation_short_name ? program_invocation_short_name : "prog";
    size_t l = 0;
    if (!getcwd(buf, size - 300))
        buf[0] = 0;
    l = strlen(buf);
    const char *parts[] = {"/tracker-", prog, "."};
    for (int i = 0; i < 3; i++) {
        size_t k = strnlen(parts[i], 200);
        memcpy(buf + l, parts[i], k);
        l += k;
    }
    l += trk_u64_to_dec(buf + l, (uint64_t)getpid());
    memcpy(buf + l, ".bin", 5);
}

static uint8_t *put_tlv(uint8_t *p, uint8_t *end, unsigned tag, const void *data, size_t len)
{
    if ((size_t)(end - p) < TRK_FMT_TLV_HEAD + len + 4)
        return p;
    trk_put_le16(p, (uint16_t)tag);
    trk_put_le16(p + 2, 0);
    trk_put_le32(p + 4, (uint32_t)len);
    memcpy(p + 8, data, len);
    return p + 8 + len;
}

/* A fork child's capture names the capture of the image it was forked from
 * and the seq counter at the fork (docs/FORMAT.md §1, FORK TLV): the parent's
 * events below that seq are the heap the child inherited. Costs nothing at
 * run time; the reader replays them. */
static struct {
    int set;
    uint32_t parent_pid;
    uint64_t seq;
    size_t name_len;
    char name[256];
} fork_ref;

static void note_fork_parent(void)
{
    fork_ref.set = 0;
    const char *slash = strrchr(out_path, '/');
    const char *base = slash ? slash + 1 : out_path;
    size_t n = strlen(base);
    if (n == 0 || n > sizeof(fork_ref.name))
        return;
    memcpy(fork_ref.name, base, n);
    fork_ref.name_len = n;
    fork_ref.parent_pid = trk_get_le32(header + 16); /* the parent's header, still in memory */
    fork_ref.seq = atomic_load(&trk_seq);            /* no event of the child has taken one yet */
    fork_ref.set = 1;
}

int trk_output_inherits(void)
{
    return fork_ref.set;
}

static int write_header(long root_pid)
{
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint8_t *h = header, *end = header + sizeof(header);
    memset(h, 0, TRK_FMT_HEADER_FIXED);
    memcpy(h, TRK_FMT_MAGIC, TRK_FMT_MAGIC_LEN);
    trk_put_le16(h + 8, TRK_FMT_VERSION);
    trk_put_le32(h + 16, (uint32_t)getpid());
    trk_put_le32(h + 20, (uint32_t)getppid());
    trk_put_le32(h + 24, (uint32_t)root_pid);
    trk_put_le32(h + 28, (uint32_t)sysconf(_SC_PAGESIZE));
    trk_put_le64(h + 32, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    trk_put_le64(h + 40, (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec);
    trk_put_le64(h + 48, session);
    trk_put_le32(h + 56, (uint32_t)trk_cfg.depth);
    trk_put_le32(h + 60, (trk_cfg.track_mmap ? TRK_OPT_MMAP : 0) |
                             (trk_cfg.follow_fork ? TRK_OPT_FOLLOW_FORK : 0) |
                             (trk_cfg.rss_ms ? TRK_OPT_RSS : 0) |
                             (trk_cfg.cuda_no_caching ? TRK_OPT_CUDA_NO_CACHING : 0) |
                             (trk_cfg.heap_unseen ? TRK_OPT_HEAP_UNSEEN : 0));
    uint8_t *p = h + TRK_FMT_HEADER_FIXED;
    if (trk_cfg.sample_bytes) {
        /* First, so that no long command line can crowd it out: a reader
         * must know the stacks are sampled (docs/FORMAT.md §1). */
        uint8_t smp[16];
        trk_put_le64(smp, trk_cfg.sample_bytes);
        trk_put_le64(smp + 8, trk_cfg.sample_seed);
        p = put_tlv(p, end, TRK_TLV_SAMPLE, smp, sizeof(smp));
    }

    static char buf[32 << 10];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        if (n > 0)
            p = put_tlv(p, end, TRK_TLV_CMDLINE, buf, (size_t)n);
    }
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf));
    if (n > 0)
        p = put_tlv(p, end, TRK_TLV_EXE, buf, (size_t)n);
    struct utsname u;
    if (uname(&u) == 0)
        p = put_tlv(p, end, TRK_TLV_HOST, u.nodename, strnlen(u.nodename, sizeof(u.nodename)));
    if (getcwd(buf, sizeof(buf)))
        p = put_tlv(p, end, TRK_TLV_CWD, buf, strlen(buf));
    p = put_tlv(p, end, TRK_TLV_VERSION, TRK_VERSION, strlen(TRK_VERSION));
    if (fork_ref.set) {
        uint8_t fk[12 + sizeof(fork_ref.name)];
        trk_put_le64(fk, fork_ref.seq);
        trk_put_le32(fk + 8, fork_ref.parent_pid);
        memcpy(fk + 12, fork_ref.name, fork_ref.name_len);
        p = put_tlv(p, end, TRK_TLV_FORK, fk, 12 + fork_ref.name_len);
    }

    uint32_t len = (uint32_t)(p - h) + 4;
    trk_put_le32(h + 12, len);
    trk_put_le32(p, trk_crc32c(0, h, (size_t)(p - h)));
    return trk_write_all(h, len);
}

static void set_env_u64(const char *name, uint64_t v, int hex)
{
    char buf[24];
    if (hex) {
        for (int i = 0; i < 16; i++)
            buf[i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
        buf[16] = 0;
    } else {
        trk_u64_to_dec(buf, v);
    }
    setenv(name, buf, 1);
}

/* Opens this process's capture and writes its header. In the constructor
 * (is_fork_child == 0) it may also publish TRACKER_* for children; a fork
 * child only reads them. Returns 0, or -1 after saying why on stderr. */
int trk_output_open(int is_fork_child)
{
    static char root[4096];
    const char *out = getenv(TRK_ENV_NAME(OUTPUT));
    long root_pid = parse_dec(getenv(TRK_ENV_NAME(ROOT_PID)));
    session = parse_hex(getenv(TRK_ENV_NAME(SESSION)));
    if (!session && !is_fork_child) {
        if (getrandom(&session, sizeof(session), GRND_NONBLOCK) != sizeof(session))
            session = (uint64_t)trk_now_ns() ^ ((uint64_t)getpid() << 32);
        session |= 1;
        set_env_u64(TRK_ENV_NAME(SESSION), session, 1);
    }
    if (out && *out) {
        /* Made absolute once, by the first process, and handed on: a child
         * started after a chdir must still write beside the root capture. */
        size_t ol = strlen(out), l = 0;
        if (out[0] != '/' && getcwd(root, sizeof(root))) {
            l = strlen(root);
            root[l++] = '/';
        }
        if (ol >= sizeof(root) - l) {
            trk_log("not tracking: TRACKER_OUTPUT is too long (the limit is 4095 bytes as an "
                    "absolute path)",
                    NULL, NULL);
            return -1;
        }
        memcpy(root + l, out, ol + 1);
        if (l && !is_fork_child)
            setenv(TRK_ENV_NAME(OUTPUT), root, 1);
    } else if (!is_fork_child) {
        default_name(root, sizeof(root));
        setenv(TRK_ENV_NAME(OUTPUT), root, 1);
        root_pid = -1;
    } else {
        return -1;
    }
    if (root_pid < 0 && !is_fork_child) {
        root_pid = getpid();
        set_env_u64(TRK_ENV_NAME(ROOT_PID), (uint64_t)root_pid, 0);
    }

    int fd = -1;
    if (!is_fork_child && root_pid == getpid()) {
        fd = inherited_fd(root);
        if (fd < 0) {
            fd = create_excl(root);
            if (fd < 0 && errno == EEXIST) {
                if (file_session(root) == session) {
                    fd = open_sibling(root); /* an earlier image of this pid */
                } else if (trk_cfg.force && replaceable(root) && unlink(root) == 0) {
                    fd = create_excl(root);
                    if (fd < 0)
                        fd = -errno;
                } else {
                    trk_log("not tracking: '", root, "' exists (set TRACKER_FORCE=1)");
                    return -1;
                }
            } else if (fd < 0) {
                fd = -errno;
            }
        }
        if (fd >= 0)
            memcpy(out_path, root, strlen(root) + 1);
    } else {
        if (is_fork_child)
            note_fork_parent(); /* before out_path becomes the child's */
        fd = open_sibling(root);
    }
    if (fd < 0) {
        trk_log("not tracking: cannot create capture: ", strerrordesc_np(-fd), NULL);
        return -1;
    }
    /* High and close-on-exec: the program's descriptors start at 3, and
     * the number `tracker run` handed over is one of those. */
    trk_fd_adopt(TRK_FD_CAPTURE, fd, NULL);
    int err = write_header(root_pid);
    if (err) {
        trk_log("not tracking: cannot write capture: ", strerrordesc_np(err), NULL);
        return -1;
    }
    return 0;
}
