/* SPDX-License-Identifier: MIT
 *
 * main.c - the `tracker` entry point: dispatches subcommands and owns the
 * global usage (generated from the commands' option tables), version and
 * the shared error helper. Must not: implement a subcommand
 * (each lives in its cmd_*.c).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "trk_config.h"

static const struct {
    const struct trk_cli_cmd *spec;
    int (*fn)(int argc, char **argv);
} commands[] = {
    {&trk_run_cmd, trk_cmd_run},
    {&trk_stats_cmd, trk_cmd_stats},
    {&trk_summary_cmd, trk_cmd_summary},
    {&trk_tree_cmd, trk_cmd_tree},
    {&trk_leaks_cmd, trk_cmd_leaks},
    {&trk_export_cmd, trk_cmd_export},
    {&trk_flamegraph_cmd, trk_cmd_flamegraph},
    {&trk_diff_cmd, trk_cmd_diff},
    {&trk_imports_cmd, trk_cmd_imports},
};

/* Generated from the commands' tables: a line each, run's options in full. */
void trk_cli_usage(FILE *f)
{
    fputs("usage: tracker <command> [options]\n"
          "\n"
          "commands:\n",
          f);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        trk_cli_usage_entry(commands[i].spec, f);
    fputs("  help [COMMAND]         this text, or COMMAND's options\n"
          "  --version              print the version\n"
          "\n"
          "'tracker COMMAND --help' lists the options of COMMAND.\n",
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
    bool help = strcmp(cmd, "help") == 0;
    if (help && argc > 2) /* `tracker help COMMAND`: that command's help */
        cmd = argv[2];
    else if (help || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        trk_cli_usage(stdout);
        return TRK_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(cmd, commands[i].spec->name) == 0) {
            if (help) {
                trk_cli_help(commands[i].spec, stdout);
                return TRK_EXIT_OK;
            }
            return commands[i].fn(argc - 1, argv + 1);
        }
    if (cmd[0] == '-') {
        trk_cli_error("unknown option '%s' (see 'tracker help')", cmd);
        return TRK_EXIT_USAGE;
    }
    trk_cli_error("unknown command '%s' (see 'tracker help')", cmd);
    return TRK_EXIT_USAGE;
}
