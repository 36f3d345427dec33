/* SPDX-License-Identifier: MIT
 *
 * cmd_diff.c - `tracker diff` (placeholder until the report lands).
 */
#include "cli/cli.h"

int trk_cmd_diff(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    trk_cli_error("'diff' is not implemented yet");
    return TRK_EXIT_FAIL;
}
