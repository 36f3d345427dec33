/* SPDX-License-Identifier: MIT
 *
 * leak_classes.c - heap blocks of exactly known leak classes at exit
 * (test_leak_classes.py), each scenario allocating through a function of
 * its own name with a size of its own, so that both the tracker's report
 * and valgrind's can be checked per scenario:
 *
 *   reachable: globals (data, bss, a static local), main's live frame,
 *     a blocked thread's stack, a spinning thread's register, static TLS of
 *     main and of a thread, pthread-specific data, an anonymous mmap, a
 *     block reachable from a reachable block;
 *   definitely lost: a dead frame below the stack pointer, a dead thread's
 *     stack, a self-pointing block, the head of a cycle, a graph's leader;
 *   indirectly lost: the rest of the cycle, the graph's children;
 *   possibly lost: a block only pointed to inside.
 *
 * Mode "fork": the child leaks one block (definitely lost) and exits.
 * Mode "dyntls LIB": a dlopened library's thread-local (dynamic TLS) holds
 * the only pointer to a block (still reachable), on main and on a blocked
 * thread.
 * No stdio: its buffer would be one more block.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))
#define KEY   0x5a5a5a5a5a5a5a5aull

/* Reachable from roots. */
void *g_data = (void *)1;
void *g_bss;
static __thread void *tls_main;
static pthread_key_t tsd_key;
static void *volatile *mapped;

/* Pointers kept only in encoded form (XOR): no word in memory equals them. */
static volatile uintptr_t enc_reg, enc_lost;
static volatile int reg_ready, blk_ready;

static NOINL void *r_data(void) { return malloc(1001); }
static NOINL void *r_bss(void) { return malloc(1002); }
static NOINL void *r_static_local(void) { return malloc(1003); }
static NOINL void *r_main_frame(void) { return malloc(1004); }
static NOINL void *r_thread_stack(void) { return malloc(1005); }
static NOINL void *r_register(void) { return malloc(1006); }
static NOINL void *r_tls_main(void) { return malloc(1007); }
static NOINL void *r_tls_thread(void) { return malloc(1008); }
static NOINL void *r_tsd(void) { return malloc(1009); }
static NOINL void *r_mmap(void) { return malloc(1010); }
static NOINL void *r_child(void) { return malloc(1011); }

static NOINL void *d_below_sp(void) { return malloc(2001); }
static NOINL void *d_dead_thread(void) { return malloc(2002); }
static NOINL void *d_self(void) { return malloc(2003); }
static NOINL void *d_cycle_head(void) { return malloc(2004); }
static NOINL void *d_leader(void) { return malloc(2005); }
static NOINL void *i_cycle_tail(void) { return malloc(3001); }
static NOINL void *i_child(void) { return malloc(3002); }
static NOINL void *i_grandchild(void) { return malloc(3003); }
static NOINL void *p_interior(void) { return malloc(4001); }
static NOINL void *d_fork_child(void) { return malloc(2006); }
static NOINL void *r_dyntls_main(void) { return malloc(1012); }
static NOINL void *r_dyntls_thread(void) { return malloc(1013); }

static void scrub(void)
{
    volatile char big[16384];
    memset((void *)big, 0, sizeof(big));
}

static void (*dyn_set)(void *);

static void *dyntls_thread(void *arg)
{
    (void)arg;
    dyn_set(r_dyntls_thread());
    blk_ready = 1;
    for (;;)
        pause();
    return NULL;
}

static int dyntls(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW);
    if (!h)
        return 2;
    *(void **)&dyn_set = dlsym(h, "leak_dyntls_set");
    if (!dyn_set)
        return 2;
    dyn_set(r_dyntls_main());
    pthread_t t;
    pthread_create(&t, NULL, dyntls_thread, NULL);
    while (!blk_ready)
        usleep(1000);
    scrub();
    exit(0);
}

static __thread void *tls_thread;

/* A stack deep below anything the exit path uses: the pointer left in this
 * dead frame must not count. */
static NOINL void deep_store(int depth)
{
    volatile char pad[4096];
    pad[depth] = 0;
    if (pad[0] == 1)
        return;
    if (depth) {
        deep_store(depth - 1);
        return;
    }
    void *volatile p = d_below_sp();
    (void)p;
}

static void *blocked_thread(void *arg)
{
    (void)arg;
    void *volatile here = r_thread_stack();
    tls_thread = r_tls_thread();
    blk_ready = 1;
    for (;;)
        pause();
    return here;
}

static void *register_thread(void *arg)
{
    (void)arg;
    reg_ready = 1;
    /* The block's address exists only in rax while this spins. */
    __asm__ volatile("mov %0, %%rax\n\txor %1, %%rax\n1:\tpause\n\tjmp 1b"
                     :
                     : "m"(enc_reg), "r"(KEY)
                     : "rax");
    return NULL;
}

static void *dying_thread(void *arg)
{
    (void)arg;
    void *volatile p = d_dead_thread();
    (void)p;
    return NULL;
}

NOINL static void make_lost(void)
{
    void **self = d_self();
    self[0] = self;
    void **a = d_cycle_head(), **b = i_cycle_tail();
    a[0] = b;
    b[0] = a;
    void **l = d_leader(), **c1 = i_child(), **c2 = i_child(), **gc = i_grandchild();
    l[0] = c1;
    l[1] = (char *)c2 + 24; /* an interior pointer from a lost block: still indirect */
    c1[0] = gc;
}

NOINL static void make_reachable(void)
{
    static void *static_local;
    g_data = r_data();
    g_bss = r_bss();
    static_local = r_static_local();
    (void)static_local;
    tls_main = r_tls_main();
    pthread_key_create(&tsd_key, NULL);
    pthread_setspecific(tsd_key, r_tsd());
    mapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mapped[0] = r_mmap();
    void **parent = g_bss;
    parent[0] = r_child();
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "dyntls") == 0)
        return dyntls(argv[2]);
    if (argc > 1 && strcmp(argv[1], "fork") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            void *volatile p = d_fork_child();
            p = NULL;
            (void)p;
            scrub();
            exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        return 0;
    }
    make_reachable();
    make_lost();
    deep_store(8);
    enc_lost = (uintptr_t)p_interior() ^ KEY;
    static void *interior;
    interior = (char *)(enc_lost ^ KEY) + 16;
    (void)interior;
    enc_reg = (uintptr_t)r_register() ^ KEY;

    pthread_t t1, t2, t3;
    pthread_create(&t1, NULL, blocked_thread, NULL);
    pthread_create(&t2, NULL, register_thread, NULL);
    pthread_create(&t3, NULL, dying_thread, NULL);
    pthread_join(t3, NULL);
    while (!reg_ready || !blk_ready)
        usleep(1000);
    usleep(20000);
    void *volatile frame = r_main_frame();
    scrub();
    exit(frame ? 0 : 1); /* main's frame stays live under exit's */
}
