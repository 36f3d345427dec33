/* SPDX-License-Identifier: MIT
 *
 * fds.c - the tracker's own file descriptors, kept out of the program's way
 * (issue 14 items 6-7).
 *
 * A program owns every descriptor number: its first open expects 3, and it
 * may close or dup2 over "everything from 3 up" (close_range, closefrom,
 * bash's `exec 3>file`, a child setting up pass_fds). So each descriptor the
 * tracker keeps (the capture, /proc/self/statm and pagemap, libunwind's pipe)
 * is moved above a floor near the top of the RLIMIT_NOFILE soft limit,
 * close-on-exec, and registered here. The preload's close/close_range/
 * closefrom/dup2/dup3 hooks (hooks_fd.c) then treat a registered number as
 * not open, the way the program would see it without us: close says EBADF,
 * close_range skips it, and dup2 onto it first moves ours elsewhere. Writers
 * pin the number they use so that a move never leaves one writing into the
 * file the program just put there, and the capture's identity (st_dev,
 * st_ino) is checked before every write for what no hook can see (a raw
 * syscall). Everything here uses raw syscalls: our own hooks must not see the
 * tracker's calls, and this runs inside other programs' hooks.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/fds.h"
#include "capture/output.h"
#include "capture/thread.h"

struct fd_slot {
    _Atomic int fd;    /* -1 when none */
    _Atomic int pins;  /* users between trk_fd_pin and trk_fd_unpin */
    int *_Atomic copy; /* another holder of the number (libunwind's array) */
    dev_t dev;
    ino_t ino;
};

static struct fd_slot slots[TRK_FD_ROLES] = {{-1, 0, NULL, 0, 0},
                                             {-1, 0, NULL, 0, 0},
                                             {-1, 0, NULL, 0, 0},
                                             {-1, 0, NULL, 0, 0},
                                             {-1, 0, NULL, 0, 0}};
static int fd_floor;
static __thread int tl_pinned TRK_TLS; /* this thread holds a pin: never wait for itself */

static long sys_fcntl(int fd, int cmd, long arg)
{
    return syscall(SYS_fcntl, fd, cmd, arg);
}

int trk_fd_raw_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}

/* The floor: 24 below the soft limit (capped at 2^16). A program that fills
 * numbers from the bottom meets ours only where it would run out a few
 * numbers later anyway; one that closes or probes every number is answered
 * by the hooks. The cap bounds the kernel's descriptor table (and what each
 * fork copies) where containers allow 2^20. A program that lowers the limit
 * later keeps ours working: the limit only bounds new numbers. */
static int compute_floor(void)
{
    struct rlimit rl;
    long soft = 1024;
    if (syscall(SYS_getrlimit, RLIMIT_NOFILE, &rl) == 0)
        soft = rl.rlim_cur > (1u << 16) ? (1 << 16) : (long)rl.rlim_cur;
    long f = soft >= 64 ? soft - 24 : soft / 2; /* a tiny limit: its upper half */
    return f < 3 ? 3 : (int)f;
}

static void record_identity(struct fd_slot *s, int fd)
{
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) == 0) {
        s->dev = st.st_dev;
        s->ino = st.st_ino;
    } else {
        s->dev = 0;
        s->ino = 0;
    }
}

/* A new number for fd at or above the floor, close-on-exec; -1 if none.
 * When the program holds everything from the floor up (or lowered its
 * limit below it), halfway down, and so on: as far from the numbers a
 * program takes next as there is room. */
static int dup_high(int fd)
{
    if (!fd_floor)
        fd_floor = compute_floor();
    for (long at = fd_floor;; at /= 2) {
        if (at < 3)
            at = 3;
        long n = sys_fcntl(fd, F_DUPFD_CLOEXEC, at);
        if (n >= 0)
            return (int)n;
        if (at == 3)
            return -1;
    }
}

int trk_fd_adopt(enum trk_fd_role role, int fd, int *copy)
{
    struct fd_slot *s = &slots[role];
    int old = atomic_load(&s->fd);
    if (old >= 0 && old != fd)
        trk_fd_raw_close(old);
    int n = dup_high(fd);
    if (n >= 0) {
        trk_fd_raw_close(fd);
        fd = n;
    } else {
        sys_fcntl(fd, F_SETFD, FD_CLOEXEC); /* no room up there: at least not inherited */
    }
    record_identity(s, fd);
    atomic_store(&s->copy, copy);
    if (copy)
        *copy = fd;
    atomic_store(&s->fd, fd);
    return fd;
}

void trk_fd_release(enum trk_fd_role role)
{
    int fd = atomic_exchange(&slots[role].fd, -1);
    atomic_store(&slots[role].copy, NULL);
    if (fd >= 0)
        trk_fd_raw_close(fd);
}

void trk_fd_open_proc(enum trk_fd_role role, const char *path)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
        trk_fd_adopt(role, fd, NULL);
    else
        trk_fd_release(role);
}

int trk_fd_get(enum trk_fd_role role)
{
    return atomic_load_explicit(&slots[role].fd, memory_order_acquire);
}

int trk_fd_role_of(int fd)
{
    if (fd < 0)
        return -1;
    for (int r = 0; r < TRK_FD_ROLES; r++)
        if (atomic_load_explicit(&slots[r].fd, memory_order_acquire) == fd)
            return r;
    return -1;
}

int trk_fd_pin(enum trk_fd_role role)
{
    atomic_fetch_add(&slots[role].pins, 1);
    tl_pinned++;
    return atomic_load(&slots[role].fd);
}

void trk_fd_unpin(enum trk_fd_role role)
{
    tl_pinned--;
    atomic_fetch_sub(&slots[role].pins, 1);
}

int trk_fd_intact(enum trk_fd_role role, int fd)
{
    struct stat st;
    struct fd_slot *s = &slots[role];
    return fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && st.st_dev == s->dev &&
           st.st_ino == s->ino;
}

/* The program is about to dup2/dup3 onto fd, one of ours: give ours another
 * number first (and free this one), so that the program gets the number and
 * we keep the file.
 * libunwind keeps its pipe's numbers in an array of its own: that copy is
 * rewritten while no thread is unwinding. */
int trk_fd_vacate(int fd)
{
    int role = trk_fd_role_of(fd);
    if (role < 0)
        return 0;
    struct fd_slot *s = &slots[role];
    int n = dup_high(fd);
    int *copy = atomic_load(&s->copy);
    if (copy)
        trk_dl_quiesce();
    atomic_store(&s->fd, n);
    if (copy)
        *copy = n;
    if (copy)
        trk_dl_resume();
    /* A writer that read the old number finishes with it before the
     * program's dup2 can put its own file there. */
    if (!tl_pinned)
        while (atomic_load(&s->pins))
            sched_yield();
    /* Free, as it would be without us: should the program's call fail, the
     * number must not be left holding our file. */
    if (n >= 0)
        trk_fd_raw_close(fd);
    if (n < 0) {
        if (role == TRK_FD_CAPTURE)
            trk_fail("the program took the capture's descriptor and no other was free: ", EMFILE);
        return -1;
    }
    return 0;
}
