/* SPDX-License-Identifier: MIT
 *
 * hooks_proc.c - process-level events: dlopen/dlclose (module snapshots),
 * the exec family and posix_spawn (flush before the image goes, and make
 * sure the child still carries the preload), clone without CLONE_VM (a fork
 * that atfork handlers never see), _exit/_Exit (flush, since
 * atexit will not run), and thread naming (pthread_setname_np, prctl).
 *
 * Nothing here allocates from the program's heap, and nothing puts more
 * than a few hundred bytes on the caller's stack (a thread may have 16 KiB):
 * environment vectors live in raw mmaps sized to need.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/env_options.h"
#include "preload/preload.h"

extern char **environ;

/* ---- dlopen / dlclose --------------------------------------------------- */

static void snapshot_if_changed(void)
{
    struct trk_thread *t = trk_enter();
    if (!t)
        return;
    int saved = errno;
    if (trk_modules_changed(t))
        trk_modules_snapshot(t);
    errno = saved;
    trk_leave();
}

static int has_search_path(struct link_map *lm)
{
    for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_RUNPATH || d->d_tag == DT_RPATH)
            return 1;
    return 0;
}

/* glibc resolves a bare dlopen name with the *caller's* RUNPATH, and the
 * caller it sees is now us. When the real caller has a search path of its
 * own, look the name up along that caller's path list (dlinfo SERINFO) and
 * open the full path; otherwise the plain call searches the same places. */
static void *dlopen_for(const char *file, int mode, const void *caller)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!file || strchr(file, '/') || !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) ||
        !lm || !has_search_path(lm))
        return trk_real.dlopen(file, mode);

    void *self =
        trk_real.dlopen(lm->l_name && *lm->l_name ? lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!self)
        return trk_real.dlopen(file, mode);
    /* The search list and one candidate path, in memory of their own: the
     * caller's stack may be 16 KiB (see the file comment). */
    enum { SI_SIZE = 16384, PATH_SIZE = 4096 };
    char *buf = trk_sys_mmap(SI_SIZE + PATH_SIZE);
    if (!buf) {
        trk_real.dlclose(self);
        return trk_real.dlopen(file, mode);
    }
    char *path = buf + SI_SIZE;
    Dl_serinfo *si = (Dl_serinfo *)buf;
    void *h = NULL;
    if (dlinfo(self, RTLD_DI_SERINFOSIZE, si) == 0 && si->dls_size <= SI_SIZE) {
        size_t fl = strlen(file);
        si->dls_size = SI_SIZE;
        if (dlinfo(self, RTLD_DI_SERINFO, si) == 0) {
            for (unsigned i = 0; i < si->dls_cnt && !h; i++) {
                const char *dir = si->dls_serpath[i].dls_name;
                size_t dl = strlen(dir);
                if (dl + fl + 2 > PATH_SIZE)
                    continue;
                memcpy(path, dir, dl);
                path[dl] = '/';
                memcpy(path + dl + 1, file, fl + 1);
                if (access(path, F_OK) == 0)
                    h = trk_real.dlopen(path, mode);
            }
        }
    }
    trk_real.dlclose(self);
    trk_sys_munmap(buf, SI_SIZE + PATH_SIZE);
    return h ? h : trk_real.dlopen(file, mode);
}

TRK_EXPORT void *dlopen(const char *file, int mode)
{
    if (!trk_real.dlopen)
        trk_resolve();
    void *h = dlopen_for(file, mode, __builtin_return_address(0));
    if (h) {
        snapshot_if_changed();
        if (atomic_load(&trk_active))
            trk_check_allocators(h);
        trk_preload_wire_layers();
        trk_layers_after_dlopen(); /* libpython, the GPU driver: init.c */
    }
    return h;
}

TRK_EXPORT int dlclose(void *h)
{
    if (!trk_real.dlclose)
        trk_resolve();
    int rc = trk_real.dlclose(h);
    if (rc == 0)
        snapshot_if_changed();
    return rc;
}

/* ---- exec and spawn -------------------------------------------------------- */

/* LD_PRELOAD, then every TRACKER_* the table (common/env_options.h) marks as
 * propagating; slots of the others stay empty. */
#define N_ENV (1 + TRK_ENV_COUNT)

static const char *env_names[N_ENV];
static char env_store[16384];
static char *env_vars[N_ENV];
static char self_path[4096];

/* Remembers TRACKER_* and our own path at start: a program that execs with
 * a rebuilt envp (execve with a fresh vector, subprocess with env=...) must
 * still start its child under the tracker, with the same run settings. */
void trk_env_capture(void)
{
    Dl_info info;
    if (dladdr((void *)&trk_env_capture, &info) && info.dli_fname)
        strncpy(self_path, info.dli_fname, sizeof(self_path) - 1);
    size_t used = 0;
    env_names[0] = "LD_PRELOAD";
    for (size_t i = 1; i < N_ENV; i++) {
        const struct trk_env_option *o = trk_env_option((enum trk_env_id)(i - 1));
        if (o->flags & TRK_ENV_PROPAGATE)
            env_names[i] = o->name;
    }
    for (size_t i = 0; i < N_ENV; i++) {
        if (!env_names[i])
            continue;
        const char *v = getenv(env_names[i]);
        if (i == 0)
            v = self_path[0] ? self_path : NULL; /* LD_PRELOAD: just us */
        if (!v)
            continue;
        size_t nl = strlen(env_names[i]), vl = strlen(v);
        if (used + nl + vl + 2 > sizeof(env_store))
            break;
        env_vars[i] = env_store + used;
        memcpy(env_store + used, env_names[i], nl);
        env_store[used + nl] = '=';
        memcpy(env_store + used + nl + 1, v, vl + 1);
        used += nl + vl + 2;
    }
}

static int env_find(char *const envp[], const char *name, size_t nl)
{
    for (int i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, nl) == 0 && envp[i][nl] == '=')
            return i;
    return -1;
}

/* The rule for following exec (README "Exec and the preload"): the exec'd
 * image is traced while the program's own environment (environ) still
 * preloads us. Then a fresh envp without LD_PRELOAD (env -i style, or
 * subprocess's env=) gets us and the run's TRACKER_* added. A program that
 * took us out of its environment (unsetenv("LD_PRELOAD"), then exec) is
 * respected: its envp goes through unchanged. */
static int environ_preloads_us(void)
{
    int at = env_find(environ, "LD_PRELOAD", 10);
    return at >= 0 && self_path[0] && strstr(environ[at] + 11, self_path);
}

/* An exec's or spawn's environment vector and the LD_PRELOAD string, in
 * memory of their own (a raw mmap sized to need): hooks run on whatever
 * stack the caller has, which may be 32 KiB or less, and envp may be long. */
struct env_buf {
    void *mem;
    size_t len;
};

static void env_release(struct env_buf *b)
{
    if (b->mem)
        trk_sys_munmap(b->mem, b->len);
    b->mem = NULL;
}

/* Returns envp plus whatever of ours it lacks (LD_PRELOAD that does not name
 * us gets us prepended), or envp itself when the rule says not to follow or
 * no memory is left (then said once). */
static char *const *env_inject(char *const envp[], struct env_buf *b)
{
    b->mem = NULL;
    if (!self_path[0] || !environ_preloads_us())
        return envp;
    size_t n = 0;
    while (envp && envp[n])
        n++;
    size_t sl = strlen(self_path), rl = 0;
    int pre = env_find(envp, "LD_PRELOAD", 10);
    if (pre >= 0)
        rl = strlen(envp[pre] + 11);
    size_t vec = (n + N_ENV + 1) * sizeof(char *);
    b->len = vec + 11 + sl + 1 + rl + 1;
    b->mem = trk_sys_mmap(b->len);
    if (!b->mem) {
        static _Atomic int said;
        if (!atomic_exchange(&said, 1))
            trk_log("cannot prepare an exec'd child's environment: it may run untracked", NULL,
                    NULL);
        return envp;
    }
    char **out = b->mem, *preload_buf = (char *)b->mem + vec;
    for (size_t i = 0; i < n; i++)
        out[i] = envp[i];
    for (size_t k = 0; k < N_ENV; k++) {
        if (!env_vars[k])
            continue;
        size_t nl = strlen(env_names[k]);
        int at = env_find(envp, env_names[k], nl);
        if (at < 0) {
            out[n++] = env_vars[k];
        } else if (k == 0 && !strstr(envp[at] + nl + 1, self_path)) {
            memcpy(preload_buf, "LD_PRELOAD=", nl + 1);
            memcpy(preload_buf + nl + 1, self_path, sl);
            preload_buf[nl + 1 + sl] = ' ';
            memcpy(preload_buf + nl + 2 + sl, envp[at] + nl + 1, rl + 1);
            out[at] = preload_buf;
        }
    }
    out[n] = NULL;
    return out;
}

/* The image is about to be replaced: everything recorded so far must reach
 * the file, ending with END(exec). A vfork child shares our memory but not
 * our pid, and must not touch the parent's capture. Returns whether it
 * finished the capture. */
static int before_exec(void)
{
    int saved = errno, done = 0;
    if (atomic_load(&trk_active) && getpid() == trk_pid) {
        trk_writer_finish(TRK_END_EXEC, 0);
        done = 1;
    }
    errno = saved;
    return done;
}

/* The exec failed and this image goes on: so does its capture, without the
 * END written for it (nothing may follow an END). */
static int after_exec(int rc, int ended, struct env_buf *b)
{
    int saved = errno;
    if (ended && getpid() == trk_pid)
        trk_writer_unfinish();
    env_release(b);
    errno = saved;
    return rc;
}

TRK_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    if (!trk_real.execve)
        trk_resolve();
    struct env_buf b;
    char *const *env = env_inject(envp, &b);
    int ended = before_exec();
    return after_exec(trk_real.execve(path, argv, env), ended, &b);
}

TRK_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

TRK_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    if (!trk_real.execvpe)
        trk_resolve();
    struct env_buf b;
    char *const *env = env_inject(envp, &b);
    int ended = before_exec();
    return after_exec(trk_real.execvpe(file, argv, env), ended, &b);
}

TRK_EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

TRK_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    if (!trk_real.fexecve)
        trk_resolve();
    struct env_buf b;
    char *const *env = env_inject(envp, &b);
    int ended = before_exec();
    return after_exec(trk_real.fexecve(fd, argv, env), ended, &b);
}

#define COLLECT_ARGS(first, argv, extra_envp)                                                      \
    va_list ap;                                                                                    \
    size_t argc = 1;                                                                               \
    va_start(ap, first);                                                                           \
    while (va_arg(ap, char *))                                                                     \
        argc++;                                                                                    \
    va_end(ap);                                                                                    \
    char *argv[argc + 1];                                                                          \
    argv[0] = (char *)first;                                                                       \
    va_start(ap, first);                                                                           \
    for (size_t i = 1; i <= argc; i++)                                                             \
        argv[i] = va_arg(ap, char *);                                                              \
    extra_envp;                                                                                    \
    va_end(ap)

TRK_EXPORT int execl(const char *path, const char *arg, ...)
{
    COLLECT_ARGS(arg, argv, (void)0);
    return execve(path, argv, environ);
}

TRK_EXPORT int execlp(const char *file, const char *arg, ...)
{
    COLLECT_ARGS(arg, argv, (void)0);
    return execvpe(file, argv, environ);
}

TRK_EXPORT int execle(const char *path, const char *arg, ...)
{
    char *const *envp;
    COLLECT_ARGS(arg, argv, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}

TRK_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    if (!trk_real.posix_spawn)
        trk_resolve();
    struct env_buf b;
    char *const *env = env_inject(envp, &b);
    return after_exec(trk_real.posix_spawn(pid, path, fa, attr, argv, env), 0, &b);
}

TRK_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    if (!trk_real.posix_spawnp)
        trk_resolve();
    struct env_buf b;
    char *const *env = env_inject(envp, &b);
    return after_exec(trk_real.posix_spawnp(pid, file, fa, attr, argv, env), 0, &b);
}

/* ---- clone ------------------------------------------------------------------ */

/* A clone() without CLONE_VM is a new process like a fork child, but glibc
 * runs no atfork handlers for it: the hook runs ours around it, so the child
 * records into a capture of its own. With CLONE_VM (a thread, or a process
 * sharing our memory) or CLONE_SETTLS (our TLS would not be ours), the call
 * goes through untouched. */
struct clone_call {
    int (*fn)(void *);
    void *arg;
};

static int clone_child(void *p)
{
    struct clone_call c = *(struct clone_call *)p; /* our copy of the parent's frame */
    trk_clone_child();
    int rc = c.fn(c.arg);
    /* glibc ends a clone child whose fn returns with SYS_exit, which runs no
     * atexit handler and would leave our writer thread running: finish the
     * capture and end the process as a one-thread child would end. */
    if (atomic_load(&trk_active) && getpid() == trk_pid)
        trk_writer_finish(TRK_END_EXIT, 1);
    syscall(SYS_exit_group, rc);
    return rc;
}

TRK_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    /* Passed on whether or not the caller gave them, as glibc's own wrapper
     * reads them: registers, not memory, on every ABI we build for. */
    pid_t *ptid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *ctid = va_arg(ap, pid_t *);
    va_end(ap);
    if (!trk_real.clone)
        trk_resolve();
    if ((flags & (CLONE_VM | CLONE_SETTLS)) || !fn || !stack || !trk_clone_prepare())
        return trk_real.clone(fn, stack, flags, arg, ptid, tls, ctid);
    struct clone_call c = {fn, arg};
    int pid = trk_real.clone(clone_child, stack, flags, &c, ptid, tls, ctid);
    int saved = errno;
    trk_clone_parent();
    errno = saved;
    return pid;
}

/* ---- _exit ------------------------------------------------------------------ */

static __attribute__((noreturn)) void exit_now(void (*real)(int), int status)
{
    if (atomic_load(&trk_active) && getpid() == trk_pid)
        trk_writer_finish(TRK_END_UEXIT, 1);
    if (real)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

TRK_EXPORT void _exit(int status)
{
    if (!trk_real.exit_now)
        trk_resolve();
    exit_now(trk_real.exit_now, status);
}

TRK_EXPORT void _Exit(int status)
{
    if (!trk_real.exit_now2)
        trk_resolve();
    exit_now(trk_real.exit_now2, status);
}

/* ---- thread names --------------------------------------------------------- */

TRK_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
    if (!trk_real.pthread_setname_np)
        trk_resolve();
    int rc = trk_real.pthread_setname_np(th, name);
    if (rc == 0) {
        struct trk_thread *t = trk_enter();
        if (t) {
            pid_t tid = pthread_equal(th, pthread_self()) ? t->tid : trk_thread_tid_of(th);
            if (tid)
                trk_ev_thread_name(t, tid, name);
            trk_leave();
        }
    }
    return rc;
}

TRK_EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    if (!trk_real.prctl)
        trk_resolve();
    int rc = trk_real.prctl ? trk_real.prctl(option, a2, a3, a4, a5)
                            : (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    if (rc == 0 && option == PR_SET_NAME) {
        int saved = errno;
        struct trk_thread *t = trk_enter();
        if (t) {
            char name[17];
            strncpy(name, (const char *)a2, 16);
            name[16] = 0;
            trk_ev_thread_name(t, t->tid, name);
            trk_leave();
        }
        errno = saved;
    }
    return rc;
}
