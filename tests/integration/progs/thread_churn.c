/* SPDX-License-Identifier: MIT
 *
 * thread_churn.c - N short threads, one after another (create, join), each
 * making one allocation of 64 bytes and freeing it. Prints the process's
 * VmSize, VmRSS and VmPeak (KiB, /proc/self/status) and its minor page
 * faults (getrusage) before and after, and the wall time in microseconds;
 * the tests assert on memory and page faults, never on time.
 *
 * usage: thread_churn N
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "common.h"

static void *worker(void *arg)
{
    (void)arg;
    char *p = malloc(64);
    if (!p)
        die("malloc");
    p[0] = 1;
    sink(p);
    free(p);
    return NULL;
}

static unsigned long long status_kb(const char *key)
{
    static char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    if (fd < 0)
        die("open /proc/self/status");
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        die("read /proc/self/status");
    buf[n] = 0;
    size_t kl = strlen(key);
    for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, key, kl) && p[kl] == ':')
            return strtoull(p + kl + 1, NULL, 10);
    die("key not in /proc/self/status");
    return 0;
}

static unsigned long long minflt(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        die("getrusage");
    return (unsigned long long)ru.ru_minflt;
}

static unsigned long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
    unsigned long long n = arg_u64(argc, argv, 1, 1000);
    /* One thread first, so that what every process pays once (the
     * tracker's and glibc's first thread) is in the "before" figures. */
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
        die("pthread_create");
    put_kv("vmsize_before", status_kb("VmSize"));
    put_kv("vmrss_before", status_kb("VmRSS"));
    unsigned long long f0 = minflt();
    unsigned long long t0 = now_us();
    for (unsigned long long i = 0; i < n; i++)
        if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
            die("pthread_create");
    unsigned long long t1 = now_us();
    put_kv("minflt", minflt() - f0);
    put_kv("wall_us", t1 - t0);
    put_kv("vmsize_after", status_kb("VmSize"));
    put_kv("vmrss_after", status_kb("VmRSS"));
    put_kv("vmpeak", status_kb("VmPeak"));
    put_kv("vmhwm", status_kb("VmHWM"));
    return 0;
}
