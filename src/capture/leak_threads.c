/* SPDX-License-Identifier: MIT
 *
 * leak_threads.c - stops the process's other threads for the exit-time leak
 * scan (leakscan.h) and gets each one's registers and stack pointer: a
 * real-time signal the program does not use makes each thread copy its
 * interrupted context into a slot and wait until the scan is done. Bounded:
 * a thread that does not answer in time (it blocks the signal) is left
 * running and said so (its stack is then scanned whole). Must not: take a
 * lock, allocate, or leave a handler behind that could kill the program.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "capture/events.h"
#include "capture/leak_threads.h"
#include "capture/leakscan.h"
#include "capture/own_mem.h"
#include "prim/sys.h"

static struct trk_lthread *slots;
static _Atomic int nslots;
static _Atomic int scan_on;
static _Atomic uint32_t release_word;

static void fill_regs(struct trk_lthread *t, const ucontext_t *uc)
{
#if defined(__x86_64__)
    for (int i = 0; i < NGREG && i < TRK_LREGS_MAX; i++)
        t->regs[i] = (uint64_t)uc->uc_mcontext.gregs[i];
    t->nregs = NGREG < TRK_LREGS_MAX ? NGREG : TRK_LREGS_MAX;
    t->sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    for (int i = 0; i < 31 && i < TRK_LREGS_MAX; i++)
        t->regs[i] = uc->uc_mcontext.regs[i];
    t->nregs = 31;
    t->sp = uc->uc_mcontext.sp;
#else
    (void)uc;
    t->nregs = 0;
    t->sp = 0;
#endif
}

static void on_stop(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    int saved = errno;
    if (!atomic_load(&scan_on)) {
        errno = saved;
        return;
    }
    pid_t me = (pid_t)syscall(SYS_gettid);
    int n = atomic_load(&nslots);
    for (int i = 0; i < n; i++) {
        struct trk_lthread *t = &slots[i];
        if (t->tid != me || atomic_load(&t->stopped))
            continue;
        fill_regs(t, ucv);
        t->tp = (uint64_t)pthread_self();
        atomic_store(&t->stopped, 1);
        /* Bounded: never keep a thread of the program forever (a minute
         * covers the scan of a heap of many GiB). */
        for (int k = 0; k < 600 && !atomic_load(&release_word); k++) {
            struct timespec ts = {0, 100000000};
            syscall(SYS_futex, &release_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        }
        break;
    }
    errno = saved;
}

/* The highest real-time signal the program leaves at its default. */
static int pick_signal(struct sigaction *old)
{
    for (int sig = SIGRTMAX; sig > SIGRTMIN + 2; sig--) {
        if (sigaction(sig, NULL, old) == 0 && old->sa_handler == SIG_DFL &&
            !(old->sa_flags & SA_SIGINFO))
            return sig;
    }
    return -1;
}

static int read_small(const char *path, char *buf, size_t cap)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    syscall(SYS_close, fd);
    if (n < 0)
        return -1;
    buf[n] = 0;
    return (int)n;
}

static void task_path(char *buf, pid_t tid, const char *leaf)
{
    strcpy(buf, "/proc/self/task/");
    size_t l = strlen(buf);
    l += trk_u64_to_dec(buf + l, (uint64_t)tid);
    buf[l++] = '/';
    strcpy(buf + l, leaf);
}

/* /proc/self/task/TID/syscall: "nr a1..a6 sp pc" while blocked in a call. */
static uint64_t blocked_sp(pid_t tid)
{
    char path[64], buf[256];
    task_path(path, tid, "syscall");
    if (read_small(path, buf, sizeof(buf)) <= 0 || buf[0] == 'r')
        return 0;
    const char *p = buf;
    for (int field = 0; field < 7 && *p; field++) {
        while (*p && *p != ' ')
            p++;
        while (*p == ' ')
            p++;
    }
    if (p[0] == '0' && p[1] == 'x')
        p += 2;
    uint64_t v = 0;
    for (; *p; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            break;
        v = v * 16 + (uint64_t)d;
    }
    return v;
}

/* Does the thread block sig (/proc/self/task/TID/status, "SigBlk:" in
 * hex), or wait for signals in sigwaitinfo/sigtimedwait (the kernel
 * unblocks the waited set for the wait, so SigBlk does not show it)? Such
 * a thread is not signalled at all: one in sigwaitinfo would take our
 * signal as the program's own (a server's signal thread), any other would
 * only make the scan wait for an answer that cannot come. Its stack is
 * then scanned from the stack pointer /proc gives. */
static int blocks_signal(pid_t tid, int sig)
{
    char path[64], buf[2048];
    task_path(path, tid, "syscall");
    if (read_small(path, buf, sizeof(buf)) > 0) {
        long nr = 0;
        for (const char *c = buf; *c >= '0' && *c <= '9'; c++)
            nr = nr * 10 + (*c - '0');
        if (buf[0] >= '0' && buf[0] <= '9' && nr == SYS_rt_sigtimedwait)
            return 1;
    }
    task_path(path, tid, "status");
    if (read_small(path, buf, sizeof(buf)) <= 0)
        return 0;
    const char *p = strstr(buf, "SigBlk:");
    if (!p)
        return 0;
    p += 7;
    while (*p == ' ' || *p == '\t')
        p++;
    uint64_t mask = 0;
    for (;; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            break;
        mask = mask << 4 | (uint64_t)d;
    }
    return sig >= 1 && sig <= 64 && ((mask >> (sig - 1)) & 1);
}

static int list_tids(pid_t *out, int cap)
{
    int fd =
        (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    int n = 0;
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (got <= 0)
            break;
        for (long off = 0; off < got;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            off += d->d_reclen;
            if (d->d_name[0] < '0' || d->d_name[0] > '9')
                continue;
            long v = 0;
            for (const char *c = d->d_name; *c >= '0' && *c <= '9'; c++)
                v = v * 10 + (*c - '0');
            if (n < cap)
                out[n] = (pid_t)v;
            n++;
        }
    }
    syscall(SYS_close, fd);
    return n;
}

static int is_ours(pid_t tid)
{
    char path[64], buf[32];
    task_path(path, tid, "comm");
    return read_small(path, buf, sizeof(buf)) > 0 && strncmp(buf, "trk-", 4) == 0;
}

static struct sigaction old_act;
static int stop_sig = -1;

int trk_lthreads_stop(struct trk_lthread **out)
{
    pid_t me = (pid_t)syscall(SYS_gettid);
    pid_t tids[4096];
    int n = list_tids(tids, 4096);
    if (n < 0)
        return -1;
    if (n > 4096)
        n = 4096;
    size_t len = (size_t)n * sizeof(*slots);
    slots = trk_lmem(len ? len : sizeof(*slots)); /* never freed: a handler may still read it */
    if (!slots)
        return -1;
    /* Not a root as memory: the stopped threads' registers in it are
     * marked as such (leak_roots.c), our threads' never. */
    trk_own_note(slots, len ? len : sizeof(*slots));
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (tids[i] == me)
            continue;
        struct trk_lthread *t = &slots[k++];
        t->tid = tids[i];
        t->ours = is_ours(tids[i]);
    }
    atomic_store(&nslots, k);
    *out = slots;
    stop_sig = pick_signal(&old_act);
    if (stop_sig > 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_stop;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigfillset(&sa.sa_mask);
        if (sigaction(stop_sig, &sa, NULL) != 0)
            stop_sig = -1;
    }
    atomic_store(&release_word, 0);
    atomic_store(&scan_on, 1);
    int masked = 0;
    for (int i = 0; stop_sig > 0 && i < k; i++) {
        if (slots[i].ours)
            continue;
        if (blocks_signal(slots[i].tid, stop_sig)) {
            slots[i].masked = 1;
            masked++;
        } else if (syscall(SYS_tgkill, trk_pid, slots[i].tid, stop_sig) != 0) {
            slots[i].gone = 1;
        }
    }
    /* A mask that blocks the signal for a moment only (libunwind's
     * sections, a program's critical section) is waited out: up to 10 ms
     * of looks, then the thread is signalled like the others. */
    for (int tries = 0; masked && tries < 10; tries++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        for (int i = 0; i < k; i++) {
            if (!slots[i].masked || blocks_signal(slots[i].tid, stop_sig))
                continue;
            slots[i].masked = 0;
            masked--;
            if (syscall(SYS_tgkill, trk_pid, slots[i].tid, stop_sig) != 0)
                slots[i].gone = 1;
        }
    }
    /* Up to half a second for every thread to answer. */
    uint64_t deadline = trk_now_ns() + 500000000ull;
    for (;;) {
        int waiting = 0;
        for (int i = 0; i < k; i++)
            waiting += !slots[i].ours && !slots[i].gone && !slots[i].masked &&
                       !atomic_load(&slots[i].stopped);
        if (!waiting || trk_now_ns() > deadline)
            break;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < k; i++)
        if (!atomic_load(&slots[i].stopped) && !slots[i].gone)
            slots[i].sp = blocked_sp(slots[i].tid);
    return k;
}

void trk_lthreads_resume(struct trk_lthread *v, int n)
{
    atomic_store(&scan_on, 0);
    atomic_store(&release_word, 1);
    syscall(SYS_futex, &release_word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
    int all = 1;
    for (int i = 0; i < n; i++)
        all &= v[i].ours || v[i].gone || v[i].masked || atomic_load(&v[i].stopped);
    /* A thread that blocked the signal after it was sent would take it
     * later at its default (terminate): then our handler stays, returning
     * at once. (One seen blocking it was never sent it.) */
    if (stop_sig > 0 && all)
        sigaction(stop_sig, &old_act, NULL);
}
