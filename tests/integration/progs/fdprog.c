/* SPDX-License-Identifier: MIT
 *
 * fdprog.c - a program that treats every descriptor from 3 up as its own, the
 * way programs may: it opens a data file (and expects the lowest free number,
 * 3), or first closes or replaces everything above stderr, then allocates N
 * blocks of 1000 bytes while writing one line per block into its file and
 * pausing now and then so the tracker's writer flushes meanwhile. Prints the
 * data file's descriptor as fd=.
 *
 * usage: fdprog MODE PATH N
 *   open         open PATH
 *   close_range  close_range(3, ~0U, 0), then open PATH
 *   closefrom    closefrom(3), then open PATH
 *   dup2         /dev/null dup2'd over 3..63, then open PATH (lands at 64)
 *   dup3         the same with dup3(..., O_CLOEXEC)
 *   dup2_top     /dev/null dup2'd over the top 64 numbers below the soft
 *                RLIMIT_NOFILE, then closed again; open PATH (gets 3)
 *   dup2_all     the same over every number from 3 to the soft limit
 *   probe        asks fstat, fcntl(F_GETFD) and dup about every number from 3
 *                up to the soft RLIMIT_NOFILE (fd_status.py of CPython's
 *                tests does this): prints how many answered "open" (open=);
 *                none do plain when nothing was inherited
 *   churn        for N ms, open and close /dev/null as fast as it can, closing
 *                each twice as bash does; prints how often open returned
 *                another number than the lowest free one (foreign=) and how
 *                often the second close succeeded (stolen=): both 0 plain, as
 *                they must be when no other thread opens or closes anything;
 *                first runs 4 threads that only allocate
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/* /dev/null dup2'd (dup3'd) over [lo, hi]; with `release`, all of them
 * closed again afterwards, so the data file gets 3 as plain. */
static void cover(int lo, int hi, int cloexec, int release)
{
    int null = open("/dev/null", O_WRONLY);
    if (null < 0)
        die("open /dev/null");
    for (int fd = lo; fd <= hi; fd++) {
        if (fd == null)
            continue;
        int rc = cloexec ? dup3(null, fd, O_CLOEXEC) : dup2(null, fd);
        if (rc != fd)
            die("dup2/dup3");
    }
    if (release) {
        for (int fd = lo; fd <= hi; fd++)
            if (fd != null && close(fd) != 0)
                die("close of a covered number");
        close(null);
    }
}

static int soft_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("getrlimit");
    return rl.rlim_cur > 1u << 20 ? 1 << 20 : (int)rl.rlim_cur;
}

static void probe(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        die("getrlimit");
    unsigned long long open_fds = 0;
    for (rlim_t fd = 3; fd < rl.rlim_cur && fd < 1u << 20; fd++) {
        struct stat st;
        int a = fstat((int)fd, &st) == 0;
        int b = fcntl((int)fd, F_GETFD) != -1;
        int c = dup((int)fd);
        if (c >= 0)
            close(c);
        if (a || b || c >= 0) {
            open_fds++;
            put_kv("open_fd", (unsigned long long)fd);
        }
    }
    put_kv("open", open_fds);
}

static void *short_thread(void *arg)
{
    sink(arg);
    void *p = malloc(100); /* its first allocation: the tracker meets it here */
    sink(p);
    free(p);
    return NULL;
}

static void churn(unsigned long long ms)
{
    /* A few threads of the program's that only allocate: they make no
     * descriptor call of their own. */
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&th[i], NULL, short_thread, NULL) != 0)
            die("pthread_create");
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    int base = open("/dev/null", O_RDONLY);
    if (base < 0)
        die("open /dev/null");
    close(base);
    unsigned long long foreign = 0, stolen = 0, rounds = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 1000; i++, rounds++) {
            int fd = open("/dev/null", O_RDONLY);
            if (fd < 0)
                die("open /dev/null");
            if (fd != base)
                foreign++;
            close(fd);
            if (close(fd) == 0)
                stolen++;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((unsigned long long)(now.tv_sec - t0.tv_sec) * 1000 +
                 (unsigned long long)(now.tv_nsec - t0.tv_nsec) / 1000000 <
             ms);
    put_kv("rounds", rounds);
    put_kv("foreign", foreign);
    put_kv("stolen", stolen);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        die("usage: fdprog MODE PATH N");
    const char *mode = argv[1];
    unsigned long long n = arg_u64(argc, argv, 3, 0);
    if (strcmp(mode, "probe") == 0) {
        probe();
        return 0;
    }
    if (strcmp(mode, "churn") == 0) {
        churn(n);
        return 0;
    }
    if (strcmp(mode, "close_range") == 0) {
        if (close_range(3, ~0U, 0) != 0)
            die("close_range");
    } else if (strcmp(mode, "closefrom") == 0) {
        closefrom(3);
    } else if (strcmp(mode, "dup2") == 0 || strcmp(mode, "dup3") == 0) {
        cover(3, 63, mode[3] == '3', 0);
    } else if (strcmp(mode, "dup2_top") == 0) {
        cover(soft_limit() - 64, soft_limit() - 1, 0, 1);
    } else if (strcmp(mode, "dup2_all") == 0) {
        cover(3, soft_limit() - 1, 0, 1);
    } else if (strcmp(mode, "open") != 0) {
        die("unknown mode");
    }
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("open data file");
    put_kv("fd", (unsigned long long)fd);
    for (unsigned long long i = 0; i < n; i++) {
        char *p = malloc(1000);
        if (!p)
            die("malloc");
        memcpy(p, "line ", 5);
        char num[24], *q = num + sizeof(num);
        *--q = 0;
        unsigned long long v = i;
        do {
            *--q = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        strcpy(p + 5, q);
        strcat(p, "\n");
        put_str(fd, p);
        free(p);
        if (i % (n / 4 + 1) == 0) {
            struct timespec ts = {0, 30000000};
            nanosleep(&ts, NULL);
        }
    }
    if (close(fd) != 0)
        die("close data file");
    return 0;
}
