/* SPDX-License-Identifier: MIT
 *
 * gpu_puts.c - prints one line with puts, for the RTLD_NEXT regression test
 * of the dlsym interposer (with libpreload_puts.so preloaded).
 */
#include <stdio.h>

int main(void)
{
    puts("hello");
    return 0;
}
