/* SPDX-License-Identifier: MIT
 *
 * common.h - helpers shared by the integration test programs: argument
 * parsing and "key=value" output through write(2). The programs avoid stdio
 * on purpose: its buffers come from malloc and would blur the allocation
 * counts the tests assert on.
 */
#ifndef TRK_ITEST_COMMON_H
#define TRK_ITEST_COMMON_H

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline void put_str(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static inline void put_u64(int fd, unsigned long long v)
{
    char buf[24];
    char *p = buf + sizeof buf;
    *--p = '\0';
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put_str(fd, p);
}

/* One "key=value\n" line on stdout, parsed by the harness. */
static inline void put_kv(const char *key, unsigned long long v)
{
    put_str(1, key);
    put_str(1, "=");
    put_u64(1, v);
    put_str(1, "\n");
}

/* Reports a broken expectation about libc itself (not about the tracker) and
 * exits with a code the harness recognises. */
static inline void die(const char *msg)
{
    put_str(2, "itest program error: ");
    put_str(2, msg);
    put_str(2, "\n");
    _exit(99);
}

static inline unsigned long long arg_u64(int argc, char **argv, int i, unsigned long long dflt)
{
    if (i >= argc)
        return dflt;
    char *end;
    unsigned long long v = strtoull(argv[i], &end, 0);
    if (*end)
        die("bad numeric argument");
    return v;
}

/* Sleeps ms milliseconds, through signals (their handlers may run). */
static inline void sleep_ms(unsigned long long ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts))
        ;
}

/* Keeps a pointer observable so that no compiler pass treats an allocation
 * as dead, even beyond what -O0 -fno-builtin already guarantees. */
static inline void sink(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

#endif /* TRK_ITEST_COMMON_H */
