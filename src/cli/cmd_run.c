/* SPDX-License-Identifier: MIT
 *
 * cmd_run.c - `tracker run`: parses options, checks the program, creates the
 * capture file, starts the program with libtracker.so preloaded, waits like a
 * shell and reports. Owns the environment contract with the preload
 * (TRACKER_*). Must not: preload anything into the tracker process itself, or
 * follow a symlink when creating the capture.
 *
 * The default capture name carries the program's pid, so the file is created
 * in the child after fork, before exec; any failure before exec comes back
 * over a close-on-exec pipe, and the parent reports it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/env_options.h"

struct run_opts {
    const char *output;
    bool force, quiet, no_mmap, no_follow_fork;
    bool cuda_no_caching;   /* PYTORCH_NO_CUDA_MEMORY_CACHING=1 for the program */
    int python;             /* TRACKER_PYTHON: 0 off, 1 Python frames only, 2 hybrid */
    bool py_allocators;     /* record pymalloc's allocations */
    int py_flag;            /* 'm' or 'c': -m MODULE / -c CODE ended the options */
    const char *python_exe; /* --python: the interpreter for script.py / -m / -c */
    const char *name;       /* what the default capture name is made from */
    char **py_argv;         /* the interpreter's argv when we build it */
    uint64_t depth;
    uint64_t buffer_kb;    /* 0: the preload's default */
    uint64_t sample_bytes; /* 0: every allocation gets its whole stack */
    char **prog_argv;
    char prog_path[PATH_MAX];
    char lib[PATH_MAX];
    char session_hex[17];
    uint64_t session;
};

/* What the child reports when it fails before exec. */
struct child_error {
    int code;
    char msg[500];
};

/* ---- Options --------------------------------------------------------------- */

#define RUN(field) offsetof(struct run_opts, field)

static const struct trk_cli_opt opts[] = {
    {"--output", 'o', TRK_CLI_STRING, RUN(output), "FILE",
     "capture file (default tracker-PROGRAM.PID.bin, where\nPID is the program's process id)",
     "a file name"},
    {"--force", 'f', TRK_CLI_FLAG, RUN(force), .help = "overwrite an existing capture file"},
    {"--depth", 0, TRK_CLI_UINT, RUN(depth), "N",
     "stack depth cap in frames, 1..1024 (default 128)", .min = TRK_ENV_DEPTH_MIN,
     .max = TRK_ENV_DEPTH_MAX},
    {"--no-mmap", 0, TRK_CLI_FLAG, RUN(no_mmap), .help = "do not record mmap/munmap/mremap"},
    {"--no-follow-fork", 0, TRK_CLI_FLAG, RUN(no_follow_fork),
     .help = "do not record forked child processes"},
    {"--buffer-kb", 0, TRK_CLI_UINT, RUN(buffer_kb), "N",
     "per-thread buffer in KiB, 64..16384 (default 512)", .min = TRK_ENV_BUFFER_KB_MIN,
     .max = TRK_ENV_BUFFER_KB_MAX},
    {"--sample-bytes", 0, TRK_CLI_UINT, RUN(sample_bytes), "N",
     "Poisson sampling: one sample per N allocated bytes on\naverage gets its whole stack, the "
     "other allocations their\ncall site; counts and totals stay exact, per-stack\nfigures are "
     "estimates (0 = off, the default; up to 2^30)",
     .min = TRK_ENV_SAMPLE_BYTES_MIN, .max = TRK_ENV_SAMPLE_BYTES_MAX},
    {"--cuda-no-caching", 0, TRK_CLI_FLAG, RUN(cuda_no_caching),
     .help = "set PYTORCH_NO_CUDA_MEMORY_CACHING=1: GPU events per tensor"},
    {"--python", 0, TRK_CLI_STRING, RUN(python_exe), "PATH",
     "the interpreter for SCRIPT.py, -m and -c", "an interpreter"},
    {"--python-only", 0, TRK_CLI_SET, RUN(python), .val = 1,
     .help = "Python frames only in Python code (no native unwinding)"},
    {"--python-allocators", 0, TRK_CLI_FLAG, RUN(py_allocators),
     .help = "record each Python object (pymalloc), not just its arenas"},
    {"--no-python", 0, TRK_CLI_SET, RUN(python), .val = 0,
     .help = "native stacks only, even in a Python process"},
    {"--quiet", 'q', TRK_CLI_FLAG, RUN(quiet), .help = "print nothing but errors"},
    /* `-m`/`-c` end tracker's options the way they end Python's. */
    {NULL, 'm', TRK_CLI_STOP, RUN(py_flag), "MODULE", .val = 'm'},
    {NULL, 'c', TRK_CLI_STOP, RUN(py_flag), "CODE", .val = 'c'},
    {0},
};

const struct trk_cli_cmd trk_run_cmd = {
    .name = "run",
    .operands = "[options] [--] PROGRAM [ARGS...]",
    .brief = "run PROGRAM and record its memory use",
    .about = "   or: tracker run [options] SCRIPT.py [ARGS...] | -m MODULE [ARGS...] | -c CODE "
             "[ARGS...]\n"
             "  runs PROGRAM (or Python code, under python3 on PATH or --python PATH)\n"
             "  with libtracker.so preloaded and records its memory use in a capture file\n",
    .what = "a program to run",
    .min_operands = 1,
    .stop_at_operand = true,
    .show_in_usage = true,
    .tables = {opts},
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* `script.py ARGS`, `-m MODULE ARGS` and `-c CODE ARGS` run under the
 * interpreter: argv becomes PYTHON [-m|-c] REST. */
static int python_argv(struct run_opts *o, char **rest, int nrest, const char *flag)
{
    char **v = calloc((size_t)nrest + 3, sizeof(*v));
    if (!v) {
        trk_cli_error("out of memory");
        return TRK_EXIT_USAGE;
    }
    int k = 0;
    v[k++] = (char *)(o->python_exe ? o->python_exe : "python3");
    if (flag)
        v[k++] = (char *)flag;
    for (int j = 0; j < nrest; j++)
        v[k++] = rest[j];
    o->py_argv = v;
    o->prog_argv = v;
    if (flag && strcmp(flag, "-m") == 0)
        o->name = rest[0];
    else if (flag)
        o->name = "python";
    else
        o->name = rest[0];
    return 0;
}

/* Returns 0, -1 after printing help (exit 0), or an exit code. */
static int parse_options(struct run_opts *o, int argc, char **argv)
{
    struct trk_cli_args args;
    int rc = trk_cli_parse(&trk_run_cmd, (void *[]){o}, argc, argv, &args);
    if (rc >= 0)
        return rc == TRK_EXIT_OK ? -1 : rc;
    int i = args.rest;
    if (o->py_flag) {
        const char *flag = o->py_flag == 'm' ? "-m" : "-c";
        if (i >= argc) {
            trk_cli_error("option '%s' needs a %s", flag, o->py_flag == 'm' ? "module" : "command");
            return TRK_EXIT_USAGE;
        }
        return python_argv(o, argv + i, argc - i, flag);
    }
    if (ends_with(argv[i], ".py") || ends_with(argv[i], ".pyw")) {
        if (access(argv[i], R_OK) < 0) {
            trk_cli_error("cannot read script '%s': %s", argv[i], strerror(errno));
            return TRK_EXIT_NOTFOUND;
        }
        return python_argv(o, argv + i, argc - i, NULL);
    }
    o->prog_argv = argv + i;
    o->name = argv[i];
    return 0;
}

/* ---- The program ------------------------------------------------------------ */

/* 0 when path is an executable regular file; else the errno to report. */
static int check_exec(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return errno;
    if (S_ISDIR(st.st_mode))
        return EISDIR;
    if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
        return EACCES;
    return 0;
}

/* Resolves the program like execvp; prints why not and returns -1. */
static int resolve_program(struct run_opts *o)
{
    const char *name = o->prog_argv[0];
    if (!*name) {
        trk_cli_error("program not found: ''");
        return -1;
    }
    if (strchr(name, '/')) {
        int e = check_exec(name);
        if (e == ENOENT || e == ENOTDIR)
            trk_cli_error("program not found: %s", name);
        else if (e)
            trk_cli_error("cannot run '%s': %s", name, strerror(e));
        if (e)
            return -1;
        snprintf(o->prog_path, sizeof(o->prog_path), "%s", name);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int seen = 0; /* an errno other than "not there" from some candidate */
    for (const char *p = path;;) {
        const char *colon = strchrnul(p, ':');
        size_t dlen = (size_t)(colon - p);
        char cand[PATH_MAX];
        int n = dlen ? snprintf(cand, sizeof(cand), "%.*s/%s", (int)dlen, p, name)
                     : snprintf(cand, sizeof(cand), "%s", name); /* empty entry: cwd */
        if (n > 0 && (size_t)n < sizeof(cand)) {
            int e = check_exec(cand);
            if (e == 0) {
                snprintf(o->prog_path, sizeof(o->prog_path), "%s", cand);
                return 0;
            }
            if (e != ENOENT && e != ENOTDIR && !seen)
                seen = e;
        }
        if (!*colon)
            break;
        p = colon + 1;
    }
    if (seen)
        trk_cli_error("cannot run '%s': %s", name, strerror(seen));
    else
        trk_cli_error("program not found: %s", name);
    return -1;
}

/* ---- The interpreter ----------------------------------------------------------- */

#define PROBE_MARK "tracker-python:"

/* Runs the interpreter candidate untraced once and asks it for
 * sys.executable. pyenv's and asdf's shims, `uv run` and `conda run` are
 * bash or Python programs that run subshells and exec the real interpreter
 * in the same pid: traced, each of those images and subshells would be a
 * capture of its own, and the file -o names would be the shim's. The
 * interpreter's own answer is the program to trace. sys.executable, not its
 * realpath: a venv's python is a symlink whose location selects the venv.
 * Returns 0 with exe filled, or -1 (not a Python, or no answer). */
static int probe_python(const char *path, char *exe, size_t len)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(fds[1], 1);
        char *argv[] = {(char *)path, "-c",
                        "import sys; sys.stdout.write('" PROBE_MARK "' + (sys.executable or ''))",
                        NULL};
        extern char **environ;
        execve(path, argv, environ);
        _exit(127);
    }
    close(fds[1]);
    char buf[PATH_MAX + sizeof(PROBE_MARK) + 1];
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fds[0], buf + got, sizeof(buf) - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (got == sizeof(buf) - 1)
            break;
    }
    close(fds[0]);
    buf[got] = '\0';
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    const char *mark = strstr(buf, PROBE_MARK); /* a sitecustomize may print first */
    if (!mark)
        return -1;
    const char *p = mark + strlen(PROBE_MARK);
    if (p[0] != '/' || strlen(p) >= len || check_exec(p) != 0)
        return -1;
    snprintf(exe, len, "%s", p);
    return 0;
}

/* Traces the real interpreter, not a wrapper of it (probe_python). For
 * SCRIPT.py / -m / -c a candidate that does not answer is an error (it is
 * not a Python: `--python /usr/bin/true`); a program the user named
 * `python3` that does not answer runs as given. argv[0] becomes the real
 * path: CPython derives sys.executable (and a venv) from it. */
static int resolve_python(struct run_opts *o)
{
    bool ours = o->py_argv != NULL;
    if (!ours && !trk_cli_python_name(o->prog_argv[0]))
        return 0;
    char exe[PATH_MAX];
    if (probe_python(o->prog_path, exe, sizeof(exe)) < 0) {
        if (!ours)
            return 0;
        trk_cli_error("'%s' is not a Python interpreter (it did not run `-c` and print "
                      "sys.executable)",
                      o->prog_path);
        return -1;
    }
    snprintf(o->prog_path, sizeof(o->prog_path), "%s", exe);
    o->prog_argv[0] = o->prog_path;
    return 0;
}

/* ---- Capture file and environment -------------------------------------------- */

static void output_path(const struct run_opts *o, pid_t pid, char *buf, size_t len)
{
    if (o->output) {
        snprintf(buf, len, "%s", o->output);
        return;
    }
    const char *base = strrchr(o->name, '/');
    base = base ? base + 1 : o->name;
    /* A file name holds NAME_MAX (255) bytes, and the run's other captures
     * add ".<pid>.<n>" to this one's: a longer program name is cut at 200
     * bytes (at a UTF-8 character boundary), as the preload's default is. */
    int bl = (int)strnlen(base, 200);
    while (bl > 0 && base[bl] && ((unsigned char)base[bl] & 0xc0) == 0x80)
        bl--;
    snprintf(buf, len, "tracker-%.*s.%ld.bin", bl, base, (long)pid);
}

static void make_session(struct run_opts *o)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
        /* Only uniqueness among nearby runs matters, not secrecy. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 40);
    }
    v |= 1; /* the preload treats session 0 as "none given" */
    o->session = v;
    snprintf(o->session_hex, sizeof(o->session_hex), "%016" PRIx64, v);
}

__attribute__((format(printf, 3, 4), noreturn)) static void child_fail(int pipe_fd, int code,
                                                                       const char *fmt, ...)
{
    struct child_error ce = {.code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ce.msg, sizeof(ce.msg), fmt, ap);
    va_end(ap);
    ssize_t w = write(pipe_fd, &ce, sizeof(ce));
    (void)w;
    _exit(code);
}

static void set_env_num(const char *name, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%" PRIu64, v);
    setenv(name, buf, 1);
}

/* A run option for the program, through the table (common/env_options.h):
 * set when it differs from the preload's default, removed otherwise. Only
 * what differs: every variable is memory the program copies (perl's %ENV,
 * say), an oracle comparison against valgrind should see the same
 * environment, and a stale value in the caller's environment must not
 * override the run's options. */
static void set_run_opt(enum trk_env_id id, long v)
{
    const struct trk_env_option *e = trk_env_option(id);
    if (v == e->def)
        unsetenv(e->name);
    else
        set_env_num(e->name, (uint64_t)v);
}

/* Runs in the child: never returns. */
static void child_main(const struct run_opts *o, int pipe_fd)
{
    char path[PATH_MAX];
    output_path(o, getpid(), path, sizeof(path));
    struct stat st;
    /* -f replaces an earlier capture, never a device, fifo or socket: as
     * root, `-o /dev/null -f` must not delete /dev/null. */
    if (o->force && lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
        child_fail(pipe_fd, TRK_EXIT_USAGE, "'%s' is not a regular file; refusing to replace it",
                   path);
    if (o->force && unlink(path) < 0 && errno != ENOENT)
        child_fail(pipe_fd, TRK_EXIT_USAGE, "cannot overwrite '%s': %s", path, strerror(errno));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST)
        child_fail(pipe_fd, TRK_EXIT_USAGE, "'%s' exists (use -f to overwrite)", path);
    if (fd < 0)
        child_fail(pipe_fd, TRK_EXIT_USAGE, "cannot create '%s': %s", path, strerror(errno));
    if (fd < 3) {
        /* Keep the capture off stdin/stdout/stderr even if they were closed. */
        int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (hi >= 0) {
            close(fd);
            fd = hi;
        }
    }
    fcntl(fd, F_SETFD, 0); /* the program inherits it; the tracker's copy is gone */

    char abs[2 * PATH_MAX + 2];
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
        snprintf(abs, sizeof(abs), "%s", path);
    else
        snprintf(abs, sizeof(abs), "%s/%s", cwd, path);

    const char *old = getenv("LD_PRELOAD");
    size_t plen = strlen(o->lib) + (old ? strlen(old) : 0) + 2;
    char *preload = malloc(plen);
    if (!preload)
        child_fail(pipe_fd, TRK_EXIT_FAIL, "out of memory");
    if (old && *old)
        snprintf(preload, plen, "%s:%s", o->lib, old);
    else
        snprintf(preload, plen, "%s", o->lib);
    setenv("LD_PRELOAD", preload, 1);
    setenv(TRK_ENV_NAME(OUTPUT), abs, 1);
    set_env_num(TRK_ENV_NAME(OUTPUT_FD), (uint64_t)fd);
    set_env_num(TRK_ENV_NAME(ROOT_PID), (uint64_t)getpid());
    setenv(TRK_ENV_NAME(SESSION), o->session_hex, 1);
    set_run_opt(TRK_ENV_DEPTH, (long)o->depth);
    set_run_opt(TRK_ENV_MMAP, !o->no_mmap);
    set_run_opt(TRK_ENV_FOLLOW_FORK, !o->no_follow_fork);
    set_run_opt(TRK_ENV_PYTHON, o->python);
    set_run_opt(TRK_ENV_PYTHON_ALLOCATORS, o->py_allocators);
    set_run_opt(TRK_ENV_BUFFER_KB, o->buffer_kb ? (long)o->buffer_kb : TRK_ENV_BUFFER_KB_DEF);
    set_run_opt(TRK_ENV_FORCE, o->force);
    set_run_opt(TRK_ENV_SAMPLE_BYTES, (long)o->sample_bytes);
    set_run_opt(TRK_ENV_QUIET, o->quiet);
    /* PyTorch's caching allocator asks the driver for segments, not tensors;
     * without it every tensor is its own cudaMalloc/cudaFree, so GPU events
     * and their stacks are per tensor (slower; docs/GPU_INTERNALS.md §8). */
    if (o->cuda_no_caching)
        setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", 1);

    extern char **environ;
    execve(o->prog_path, o->prog_argv, environ);
    int e = errno;
    if (e == ENOEXEC) {
        /* Like execvp: a script without #! runs under /bin/sh. */
        int n = 0;
        while (o->prog_argv[n])
            n++;
        char **sh = calloc((size_t)n + 2, sizeof(char *));
        if (sh) {
            sh[0] = "sh";
            sh[1] = (char *)o->prog_path;
            for (int k = 1; k < n; k++)
                sh[k + 1] = o->prog_argv[k];
            execve("/bin/sh", sh, environ);
        }
    }
    unlink(path); /* nothing will ever write it */
    child_fail(pipe_fd, TRK_EXIT_NOTFOUND, "cannot run '%s': %s", o->prog_argv[0], strerror(e));
}

/* ---- Parent ------------------------------------------------------------------ */

static const char *signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
        {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
        {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
        {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
        {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].sig == sig)
            return names[i].name;
    return "unknown signal";
}

static int wait_child(pid_t pid, int *status)
{
    for (;;) {
        if (waitpid(pid, status, 0) == pid)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* The next command to try, copy-pasteable: a path with characters the
 * shell would split or expand is single-quoted. */
static void print_next(const char *path)
{
    bool plain = *path != '\0';
    for (const char *s = path; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/+-,:@%", *s))
            plain = false;
    fputs("tracker: next: tracker flamegraph ", stderr);
    if (*path == '-') /* not an option */
        fputs("./", stderr);
    if (plain) {
        fputs(path, stderr);
    } else {
        fputc('\'', stderr);
        for (const char *s = path; *s; s++)
            if (*s == '\'')
                fputs("'\\''", stderr);
            else
                fputc(*s, stderr);
        fputc('\'', stderr);
    }
    fputs("  (then open the .html it writes; `tracker summary` for text)\n", stderr);
}

static int run_with(struct run_opts *o, int argc, char **argv)
{
    int rc = parse_options(o, argc, argv);
    if (rc != 0)
        return rc < 0 ? TRK_EXIT_OK : rc;
    if (resolve_program(o) < 0)
        return TRK_EXIT_NOTFOUND;
    if (resolve_python(o) < 0)
        return TRK_EXIT_USAGE;
    if (trk_find_lib(o->lib, sizeof(o->lib)) < 0) {
        trk_cli_error("%s", o->lib);
        return TRK_EXIT_FAIL;
    }
    make_session(o);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        trk_cli_error("pipe: %s", strerror(errno));
        return TRK_EXIT_FAIL;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        trk_cli_error("fork: %s", strerror(errno));
        return TRK_EXIT_FAIL;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(o, fds[1]);
    }
    close(fds[1]);
    /* Like a shell: the terminal's ^C and ^\ go to the program; we outlive
     * it to report. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);

    struct child_error ce;
    ssize_t n;
    do
        n = read(fds[0], &ce, sizeof(ce));
    while (n < 0 && errno == EINTR);
    close(fds[0]);
    int status = 0;
    if (wait_child(pid, &status) < 0) {
        trk_cli_error("waitpid: %s", strerror(errno));
        return TRK_EXIT_FAIL;
    }
    if (n == (ssize_t)sizeof(ce)) {
        ce.msg[sizeof(ce.msg) - 1] = '\0';
        trk_cli_error("%s", ce.msg);
        return ce.code;
    }

    int code;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (!o->quiet)
            trk_cli_error("program killed by signal %d (%s)", sig, signal_name(sig));
        code = 128 + sig;
    } else {
        code = WEXITSTATUS(status);
    }
    if (!o->quiet) {
        char path[PATH_MAX];
        output_path(o, pid, path, sizeof(path));
        trk_list_captures(path, o->session, stderr);
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size > 0) /* an empty one was explained */
            print_next(path);
    }
    return code;
}

int trk_cmd_run(int argc, char **argv)
{
    struct run_opts o = {.depth = TRK_ENV_DEPTH_DEF, .python = TRK_ENV_PYTHON_DEF};
    int rc = run_with(&o, argc, argv);
    free(o.py_argv);
    return rc;
}
