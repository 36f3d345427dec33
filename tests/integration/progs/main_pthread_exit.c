/* SPDX-License-Identifier: MIT
 *
 * main_pthread_exit.c - main starts a worker and ends with pthread_exit; the
 * worker waits until main is gone, makes N allocations of S bytes, frees all
 * but one, says so and returns. glibc then ends the process with exit(0)
 * from the worker, the last thread (unless ST is given: the worker then
 * calls exit(ST) itself), and exit runs main's atexit handler, which leaks
 * A bytes (when A > 0). A tracker thread that counts as one of the
 * program's keeps the process alive forever instead.
 *
 * usage: main_pthread_exit N S [A [ST]]
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static unsigned long long n_allocs, size, atexit_bytes;
static long status = -1;
static pid_t main_tid;

/* main's tid stays valid (a zombie group leader) until the process ends,
 * so wait for its state in /proc to read 'Z' instead. */
static int main_gone(void)
{
    char path[64] = "/proc/self/task/";
    char num[24];
    char *p = path + strlen(path);
    pid_t t = main_tid;
    int n = 0;
    do {
        num[n++] = (char)('0' + t % 10);
        t /= 10;
    } while (t);
    while (n)
        *p++ = num[--n];
    strcpy(p, "/stat");
    int fd = open(path, 0);
    if (fd < 0)
        return 1;
    char buf[512];
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0)
        return 1;
    buf[r] = 0;
    char *q = strrchr(buf, ')');
    return q && (q[2] == 'Z' || q[2] == 'X');
}

static void at_exit(void)
{
    if (atexit_bytes) {
        char *p = malloc(atexit_bytes);
        if (!p)
            die("malloc");
        p[0] = 1;
        sink(p);
    }
    put_kv("atexit_ran", 1);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5000 && !main_gone(); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    char *keep = NULL;
    for (unsigned long long i = 0; i < n_allocs; i++) {
        char *p = malloc(size);
        if (!p)
            die("malloc");
        p[0] = 1;
        if (!keep)
            keep = p;
        else
            free(p);
    }
    sink(keep);
    put_kv("worker_done", 1);
    if (status >= 0)
        exit((int)status);
    return NULL;
}

int main(int argc, char **argv)
{
    n_allocs = arg_u64(argc, argv, 1, 100);
    size = arg_u64(argc, argv, 2, 64);
    atexit_bytes = arg_u64(argc, argv, 3, 0);
    if (argc > 4)
        status = (long)arg_u64(argc, argv, 4, 0);
    if (atexit(at_exit))
        die("atexit");
    main_tid = (pid_t)syscall(SYS_gettid);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL))
        die("pthread_create");
    pthread_exit(NULL);
}
