/* SPDX-License-Identifier: MIT
 *
 * sys.c - the few system services the in-process layers need, reached
 * through raw syscalls so that they can never land back in our own mmap hook
 * or in an allocator; and the re-entry guard's storage (guard.h). Never
 * allocates, never uses stdio.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prim/guard.h"
#include "prim/real.h"
#include "prim/sys.h"

__thread int trk_tl_guard TRK_TLS;
pid_t trk_pid;

void *trk_sys_mmap(size_t len)
{
    long r = syscall(SYS_mmap, 0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r < 0 && r > -4096)
        return NULL;
    if ((void *)r == MAP_FAILED)
        return NULL;
    return (void *)r;
}

void trk_sys_munmap(void *p, size_t len)
{
    syscall(SYS_munmap, p, len);
}

pid_t trk_gettid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

size_t trk_u64_to_dec(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = 0;
    return n;
}

/* Writes "tracker: a b c\n" to stderr in one write(2) so that concurrent
 * messages from several processes of one run do not interleave mid-line. */
void trk_log(const char *a, const char *b, const char *c)
{
    char buf[512];
    size_t n = 0;
    const char *parts[4] = {"tracker: ", a, b, c};
    for (int i = 0; i < 4; i++) {
        if (!parts[i])
            continue;
        size_t l = strlen(parts[i]);
        if (l > sizeof(buf) - 2 - n)
            l = sizeof(buf) - 2 - n;
        memcpy(buf + n, parts[i], l);
        n += l;
    }
    buf[n++] = '\n';
    int saved = errno;
    ssize_t r = write(2, buf, n);
    (void)r;
    errno = saved;
}

/* Our own threads' names go straight to the next pthread_setname_np: the
 * preload's hook of it is the program's, and a lower layer must not call
 * up into it. */
void trk_sys_name_thread(pthread_t th, const char *name)
{
    if (!trk_real.pthread_setname_np)
        trk_resolve();
    if (trk_real.pthread_setname_np)
        trk_real.pthread_setname_np(th, name);
}
