/* SPDX-License-Identifier: MIT
 *
 * cmd_export.c - `tracker export` (placeholder until the report lands).
 */
#include "cli/cli.h"

int trk_cmd_export(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    trk_cli_error("'export' is not implemented yet");
    return TRK_EXIT_FAIL;
}
