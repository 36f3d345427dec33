/* SPDX-License-Identifier: MIT
 *
 * cmd_tree.c - `tracker tree` (placeholder until the report lands).
 */
#include "cli/cli.h"

int trk_cmd_tree(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    trk_cli_error("'tree' is not implemented yet");
    return TRK_EXIT_FAIL;
}
