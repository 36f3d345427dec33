/* SPDX-License-Identifier: MIT
 *
 * hooks_fd.c - close, close_range, closefrom, dup, dup2, dup3, fcntl, fstat
 * and pipe2: the tracker's own descriptors (fds.c) look to the program as if
 * not open.
 *
 * Without us those numbers would not exist, so close of one says EBADF,
 * close_range and closefrom close everything around them, dup2/dup3 from one
 * says EBADF, and dup2/dup3 onto one gets the program its number after ours
 * moved elsewhere. pipe2 is hooked for libunwind alone: its memory-validation
 * pipe is created on its first unwind, and its numbers must go high too.
 *
 * A vfork child (or a raw clone) shares our memory but not our descriptor
 * table: there nothing registered is moved (that would rewrite the parent's
 * registry); the child's dup2 simply replaces its own copy, which exec
 * closes anyway. Never allocates; errno is the real call's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/preload.h"

static inline int from_unwinder(uintptr_t ra)
{
    return ra >= trk_unw_lo && ra < trk_unw_hi;
}

/* Is this the process the registry describes (not a vfork child)? */
static int own_process(void)
{
    return trk_pid && (pid_t)syscall(SYS_getpid) == trk_pid;
}

static int real_close(int fd)
{
    return trk_real.close ? trk_real.close(fd) : (int)syscall(SYS_close, fd);
}

static int real_close_range(unsigned first, unsigned last, int flags)
{
    if (trk_real.close_range)
        return trk_real.close_range(first, last, flags);
    return (int)syscall(SYS_close_range, first, last, flags);
}

TRK_EXPORT int close(int fd)
{
    int role = trk_fd_role_of(fd);
    if (TRK_UNLIKELY(role >= 0)) {
        /* libunwind reopens its pipe when a read from it fails; that close
         * is its own, and the number is ours to give up. */
        if (from_unwinder((uintptr_t)__builtin_return_address(0)) && own_process()) {
            trk_fd_release(role);
            return 0;
        }
        errno = EBADF;
        return -1;
    }
    return real_close(fd);
}

/* Our numbers inside [first, last], ascending. */
static int ours_within(unsigned first, unsigned last, unsigned out[TRK_FD_ROLES])
{
    int n = 0;
    for (int r = 0; r < TRK_FD_ROLES; r++) {
        int fd = trk_fd_get((enum trk_fd_role)r);
        if (fd >= 0 && (unsigned)fd >= first && (unsigned)fd <= last) {
            int i = n++;
            for (; i > 0 && out[i - 1] > (unsigned)fd; i--)
                out[i] = out[i - 1];
            out[i] = (unsigned)fd;
        }
    }
    return n;
}

/* The program's range minus our numbers: one call per gap. Flags go to
 * every gap (CLOSE_RANGE_UNSHARE unshares once; the rest see an unshared
 * table). CLOSE_RANGE_CLOEXEC closes nothing, and ours are close-on-exec
 * already, so such a call passes whole. */
static int close_range_around(unsigned first, unsigned last, int flags)
{
    unsigned ours[TRK_FD_ROLES];
    int n = first <= last ? ours_within(first, last, ours) : 0;
    if (TRK_LIKELY(n == 0) || (flags & CLOSE_RANGE_CLOEXEC))
        return real_close_range(first, last, flags);
    unsigned lo = first;
    for (int i = 0; i < n; i++) {
        if (ours[i] > lo && real_close_range(lo, ours[i] - 1, flags) != 0)
            return -1;
        lo = ours[i] + 1;
    }
    if (lo != 0 && lo <= last)
        return real_close_range(lo, last, flags);
    return 0;
}

TRK_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
    return close_range_around(first, last, flags);
}

TRK_EXPORT void closefrom(int lowfd)
{
    unsigned ours[TRK_FD_ROLES];
    unsigned first = lowfd < 0 ? 0 : (unsigned)lowfd;
    if (trk_real.closefrom && ours_within(first, ~0U, ours) == 0) {
        trk_real.closefrom(lowfd);
        return;
    }
    int saved = errno;
    close_range_around(first, ~0U, 0);
    errno = saved;
}

/* dup2/dup3 onto one of ours: ours moves first, then the program's call runs
 * as it would without us (atomically replacing whatever was there). */
static int before_dup(int oldfd, int newfd)
{
    if (TRK_UNLIKELY(trk_fd_role_of(oldfd) >= 0)) {
        errno = EBADF;
        return -1;
    }
    if (TRK_UNLIKELY(trk_fd_role_of(newfd) >= 0) && own_process())
        trk_fd_vacate(newfd);
    return 0;
}

TRK_EXPORT int dup2(int oldfd, int newfd)
{
    if (before_dup(oldfd, newfd))
        return -1;
    return trk_real.dup2 ? trk_real.dup2(oldfd, newfd) : (int)syscall(SYS_dup2, oldfd, newfd);
}

TRK_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    if (before_dup(oldfd, newfd))
        return -1;
    return trk_real.dup3 ? trk_real.dup3(oldfd, newfd, flags)
                         : (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

/* The usual "is this number open?" probes: fstat (CPython's fd_status.py
 * walks 0..SC_OPEN_MAX with it), fcntl(F_GETFD), dup. A descriptor of ours
 * answers as one that is not open. */
TRK_EXPORT int dup(int fd)
{
    if (TRK_UNLIKELY(trk_fd_role_of(fd) >= 0)) {
        errno = EBADF;
        return -1;
    }
    return trk_real.dup ? trk_real.dup(fd) : (int)syscall(SYS_dup, fd);
}

TRK_EXPORT int fstat(int fd, struct stat *st)
{
    if (TRK_UNLIKELY(trk_fd_role_of(fd) >= 0)) {
        errno = EBADF;
        return -1;
    }
    return trk_real.fstat ? trk_real.fstat(fd, st) : (int)syscall(SYS_fstat, fd, st);
}

TRK_EXPORT int fstat64(int fd, struct stat64 *st)
{
    if (TRK_UNLIKELY(trk_fd_role_of(fd) >= 0)) {
        errno = EBADF;
        return -1;
    }
    return trk_real.fstat64 ? trk_real.fstat64(fd, st) : (int)syscall(SYS_fstat, fd, st);
}

/* Every fcntl command takes at most one argument, an int or a pointer:
 * passing it on as a pointer-sized value is what libc's own fcntl reads. */
static int fcntl_with(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
    if (TRK_UNLIKELY(trk_fd_role_of(fd) >= 0)) {
        errno = EBADF;
        return -1;
    }
    if (!real)
        return (int)syscall(SYS_fcntl, fd, cmd, arg);
    return real(fd, cmd, arg);
}

TRK_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_with(trk_real.fcntl, fd, cmd, arg);
}

TRK_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_with(trk_real.fcntl64 ? trk_real.fcntl64 : trk_real.fcntl, fd, cmd, arg);
}

TRK_EXPORT int pipe2(int fds[2], int flags)
{
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    int rc = trk_real.pipe2 ? trk_real.pipe2(fds, flags) : (int)syscall(SYS_pipe2, fds, flags);
    /* libunwind keeps the numbers in its own array, fds: adopt rewrites it
     * now and again whenever the program makes us move them. */
    if (rc == 0 && from_unwinder(ra) && own_process()) {
        trk_fd_adopt(TRK_FD_UNW_READ, fds[0], &fds[0]);
        trk_fd_adopt(TRK_FD_UNW_WRITE, fds[1], &fds[1]);
    }
    return rc;
}
