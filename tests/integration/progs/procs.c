/* SPDX-License-Identifier: MIT
 *
 * procs.c - awkward process shapes for test_proc.py (issue 14, items 3, 10,
 * 11, 12 and 17): each mode is one way a program may legally start, replace
 * or strip its children, run plain and traced alike.
 *
 *   spawn_small PROG N S   a thread with a 32 KiB stack posix_spawns PROG N S
 *   exec_small PROG N S    a thread with a 32 KiB stack execs PROG N S
 *   clone N S              a raw clone() child without CLONE_VM mallocs N
 *                          blocks of S bytes (leaked) and returns
 *   strip_reexec [K]       while LD_PRELOAD is set: unsetenv it and re-exec
 *                          /proc/self/exe (at most 1000 times); prints execs=K
 *   exec_chain K N         re-execs itself K times; every image mallocs N
 *                          blocks while a second thread allocates busily
 *   exec_fail N S          an execv that fails, then N mallocs of S
 *   many_env K PROG N S    execs PROG N S with a fresh environment of K variables
 *   chdir_fork DIR N S     chdir DIR, then a fork child mallocs N of S
 *   dlopen_small KIB LIB   a thread with a KIB KiB stack dlopens LIB by its
 *                          bare name (procs has a RUNPATH, so the hook
 *                          searches it)
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static void leak(unsigned long long n, unsigned long long s)
{
    for (unsigned long long i = 0; i < n; i++) {
        char *p = malloc(s);
        if (!p)
            die("malloc");
        p[0] = 1;
        sink(p);
    }
}

/* ---- a thread on a small (legal) stack ---- */

static char **small_argv;
static int small_exec;
static pid_t small_pid;

static void *small_main(void *arg)
{
    (void)arg;
    if (small_exec) {
        execv(small_argv[0], small_argv);
        die("execv");
    }
    if (posix_spawn(&small_pid, small_argv[0], NULL, NULL, small_argv, environ) != 0)
        die("posix_spawn");
    return NULL;
}

/* A stack of kib KiB with 64 KiB of PROT_NONE below it: running over it
 * always faults, where glibc's one guard page can be jumped over silently. */
static void small_stack(pthread_attr_t *a, unsigned long long kib)
{
    size_t guard = 64 << 10, size = (size_t)kib << 10;
    char *m = mmap(NULL, guard + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, guard, PROT_NONE) != 0)
        die("mmap stack");
    pthread_attr_init(a);
    if (pthread_attr_setstack(a, m + guard, size) != 0)
        die("setstack");
}

static void *dlopen_main(void *arg)
{
    return dlopen(arg, RTLD_NOW);
}

static int dlopen_small(unsigned long long kib, char *lib)
{
    pthread_attr_t a;
    small_stack(&a, kib);
    pthread_t t;
    void *h = NULL;
    if (pthread_create(&t, &a, dlopen_main, lib) != 0)
        die("pthread_create");
    pthread_join(t, &h);
    if (!h)
        die("dlopen");
    put_kv("loaded", 1);
    return 0;
}

static int on_small_stack(char **argv, int exec)
{
    small_argv = argv;
    small_exec = exec;
    pthread_attr_t a;
    small_stack(&a, 32);
    pthread_t t;
    if (pthread_create(&t, &a, small_main, NULL) != 0)
        die("pthread_create");
    pthread_join(t, NULL);
    int st;
    if (waitpid(small_pid, &st, 0) != small_pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("spawned child failed");
    put_kv("child", (unsigned long long)small_pid);
    return 0;
}

/* ---- raw clone ---- */

static unsigned long long clone_n, clone_s;

static int clone_main(void *arg)
{
    (void)arg;
    leak(clone_n, clone_s);
    return 0;
}

static int raw_clone(void)
{
    size_t sz = 256 << 10;
    char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED)
        die("mmap");
    pid_t pid = clone(clone_main, stack + sz, SIGCHLD, NULL);
    if (pid < 0)
        die("clone");
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("clone child failed");
    put_kv("child", (unsigned long long)pid);
    return 0;
}

/* ---- exec chains ---- */

static void *busy_main(void *arg)
{
    (void)arg;
    for (;;) {
        void *p = malloc(64);
        sink(p);
        free(p);
    }
    return NULL;
}

/* With pad, the new image's environment carries ~1.5 MB more, which the
 * kernel copies before it stops the other threads: a wider window for a
 * writer that would still write after END. */
static void reexec(const char *mode, unsigned long long k, const char *extra, int pad)
{
    char num[24], *p = num + sizeof(num);
    *--p = 0;
    do {
        *--p = (char)('0' + k % 10);
        k /= 10;
    } while (k);
    char *args[] = {"procs", (char *)mode, p, (char *)extra, NULL};
    enum { PADS = 12, PAD_LEN = 120 << 10 };
    size_t n = 0, have = 0;
    while (environ[have])
        have++;
    char **envp = mmap(NULL, (have + PADS + 1) * sizeof(char *), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (envp == MAP_FAILED)
        die("mmap");
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "PROCS_PAD", 9) != 0)
            envp[n++] = *e;
    for (int i = 0; pad && i < PADS; i++) {
        char *v = mmap(NULL, PAD_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (v == MAP_FAILED)
            die("mmap");
        memset(v, 'x', PAD_LEN - 1);
        memcpy(v, "PROCS_PAD", 9);
        v[9] = (char)('a' + i);
        v[10] = '=';
        v[PAD_LEN - 1] = 0;
        envp[n++] = v;
    }
    envp[n] = NULL;
    execve("/proc/self/exe", args, pad ? envp : environ);
    die("execv /proc/self/exe");
}

static int strip_reexec(unsigned long long k)
{
    const char *pre = getenv("LD_PRELOAD");
    if (pre && *pre && k < 1000) {
        unsetenv("LD_PRELOAD");
        reexec("strip_reexec", k + 1, NULL, 0);
    }
    put_kv("execs", k);
    return 0;
}

static int exec_chain(unsigned long long k, char *n)
{
    leak(strtoull(n, NULL, 10), 32);
    if (k == 0) {
        put_kv("pid", (unsigned long long)getpid());
        return 0;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, busy_main, NULL) != 0)
        die("pthread_create");
    reexec("exec_chain", k - 1, n, 1);
    return 1;
}

static int exec_fail(unsigned long long n, unsigned long long s)
{
    char *args[] = {"/nonexistent/procs-no-such-program", NULL};
    if (execv(args[0], args) == 0 || errno != ENOENT)
        die("execv of a missing file did not fail with ENOENT");
    leak(n, s);
    put_kv("pid", (unsigned long long)getpid());
    return 0;
}

/* A rebuilt environment of K variables, none of them the tracker's. */
static int many_env(unsigned long long k, char **prog)
{
    char **envp = malloc((k + 1) * sizeof(char *));
    if (!envp)
        die("malloc");
    for (unsigned long long i = 0; i < k; i++) {
        char *e = malloc(32), *p = e + 10, tmp[24];
        if (!e)
            die("malloc");
        memcpy(e, "PROCS_VAR_", 10);
        unsigned long long v = i;
        int l = 0;
        do {
            tmp[l++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        while (l)
            *p++ = tmp[--l];
        memcpy(p, "=x", 3);
        envp[i] = e;
    }
    envp[k] = NULL;
    execve(prog[0], prog, envp);
    die("execve");
    return 1;
}

static int chdir_fork(const char *dir, unsigned long long n, unsigned long long s)
{
    if (chdir(dir) != 0)
        die("chdir");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        leak(n, s);
        exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("fork child failed");
    put_kv("child", (unsigned long long)pid);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: procs MODE ...");
    const char *m = argv[1];
    if (strcmp(m, "spawn_small") == 0 && argc == 5)
        return on_small_stack(argv + 2, 0);
    if (strcmp(m, "exec_small") == 0 && argc == 5)
        return on_small_stack(argv + 2, 1);
    if (strcmp(m, "clone") == 0 && argc == 4) {
        clone_n = arg_u64(argc, argv, 2, 0);
        clone_s = arg_u64(argc, argv, 3, 1);
        return raw_clone();
    }
    if (strcmp(m, "strip_reexec") == 0)
        return strip_reexec(arg_u64(argc, argv, 2, 0));
    if (strcmp(m, "exec_chain") == 0 && argc == 4)
        return exec_chain(arg_u64(argc, argv, 2, 0), argv[3]);
    if (strcmp(m, "exec_fail") == 0 && argc == 4)
        return exec_fail(arg_u64(argc, argv, 2, 0), arg_u64(argc, argv, 3, 1));
    if (strcmp(m, "many_env") == 0 && argc == 6)
        return many_env(arg_u64(argc, argv, 2, 0), argv + 3);
    if (strcmp(m, "chdir_fork") == 0 && argc == 5)
        return chdir_fork(argv[2], arg_u64(argc, argv, 3, 0), arg_u64(argc, argv, 4, 1));
    if (strcmp(m, "dlopen_small") == 0 && argc == 4)
        return dlopen_small(arg_u64(argc, argv, 2, 0), argv[3]);
    die("bad mode or arguments");
    return 1;
}
