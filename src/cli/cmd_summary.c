/* SPDX-License-Identifier: MIT
 *
 * cmd_summary.c - `tracker summary` (placeholder until the report lands).
 */
#include "cli/cli.h"

int trk_cmd_summary(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    trk_cli_error("'summary' is not implemented yet");
    return TRK_EXIT_FAIL;
}
