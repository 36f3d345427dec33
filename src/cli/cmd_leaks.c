/* SPDX-License-Identifier: MIT
 *
 * cmd_leaks.c - `tracker leaks` (placeholder until the report lands).
 */
#include "cli/cli.h"

int trk_cmd_leaks(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    trk_cli_error("'leaks' is not implemented yet");
    return TRK_EXIT_FAIL;
}
