/* SPDX-License-Identifier: MIT
 *
 * main.c - the `tracker` entry point: dispatches subcommands and owns usage,
 * version and the shared error helpers. Must not: implement a subcommand
 * (each lives in its cmd_*.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "trk_config.h"

static int cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    trk_cli_usage(stdout);
    return TRK_EXIT_OK;
}

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} commands[] = {
    {"run", trk_cmd_run},
    {"stats", trk_cmd_stats},
    {"summary", trk_cmd_summary},
    {"tree", trk_cmd_tree},
    {"leaks", trk_cmd_leaks},
    {"export", trk_cmd_export},
    {"flamegraph", trk_cmd_flamegraph},
    {"diff", trk_cmd_diff},
    {"imports", trk_cmd_imports},
    {"help", cmd_help},
};

void trk_cli_usage(FILE *f)
{
    fputs(
        "usage: tracker <command> [options]\n"
        "\n"
        "commands:\n"
        "  run [options] [--] PROGRAM [ARGS...]   run PROGRAM and record its memory use\n"
        "  run [options] SCRIPT.py [ARGS...] | -m MODULE [ARGS...] | -c CODE [ARGS...]\n"
        "                          run Python code (python3 on PATH, or --python PATH)\n"
        "      -o, --output FILE   capture file (default tracker-PROGRAM.PID.bin, where\n"
        "                          PID is the program's process id)\n"
        "      -f, --force         overwrite an existing capture file\n"
        "      --depth N           stack depth cap in frames, 1..1024 (default 128)\n"
        "      --no-mmap           do not record mmap/munmap/mremap\n"
        "      --no-follow-fork    do not record forked child processes\n"
        "      --buffer-kb N       per-thread buffer in KiB, 64..16384 (default 512)\n"
        "      --cuda-no-caching   set PYTORCH_NO_CUDA_MEMORY_CACHING=1: GPU events per tensor\n"
        "      --python PATH       the interpreter for SCRIPT.py, -m and -c\n"
        "      --python-only       Python frames only in Python code (no native unwinding)\n"
        "      --python-allocators record each Python object (pymalloc), not just its arenas\n"
        "      --no-python         native stacks only, even in a Python process\n"
        "      -q, --quiet         print nothing but errors\n"
        "  stats [--json] [--gpu|--device N] FILE\n"
        "                         totals of a capture: heap, mmap, RSS, threads, GPUs\n"
        "  summary [options] FILE        top locations by bytes live at the peak (-n N, 0 = all)\n"
        "  tree [options] FILE           call tree at the peak: --threshold PCT (default 1),\n"
        "                                --inverted, --peak|--leaks|--temporary|--allocated\n"
        "  leaks [options] FILE          unfreed blocks by stack: --fail-on-leak[=BYTES],\n"
        "                                --suppressions FILE\n"
        "  export --format F [options] FILE  F = pprof, speedscope, chrome-trace or folded;\n"
        "                                -o OUT|-, --peak|--leaks|--temporary|--allocated\n"
        "  diff [options] BEFORE AFTER   per-stack change of peak and leaked bytes (-n N)\n"
        "  flamegraph [options] FILE     HTML page: flamegraph and memory timeline (-o OUT);\n"
        "                                --by-import: each allocation under its Python imports\n"
        "      report options: --json --all (every capture of the run) --debug-dir DIR\n"
        "                      --mmap --keep-allocator-frames --temp-allocs N --temp-ms T\n"
        "                      --python-internals --hide-imports --no-progress\n"
        "  imports [--json] [--all] [--min-bytes N] FILE\n"
        "                                memory by Python import (python -X importtime-like)\n"
        "  help                   this text\n"
        "  --version              print the version\n",
        f);
}

void trk_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tracker: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int trk_cli_bad_option(const char *opt)
{
    trk_cli_error("unknown option '%s' (see 'tracker help')", opt);
    return TRK_EXIT_USAGE;
}

int trk_cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        trk_cli_usage(stderr);
        return TRK_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("tracker %s\n", TRK_VERSION);
        return TRK_EXIT_OK;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return cmd_help(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    if (cmd[0] == '-')
        return trk_cli_bad_option(cmd);
    trk_cli_error("unknown command '%s' (see 'tracker help')", cmd);
    return TRK_EXIT_USAGE;
}
