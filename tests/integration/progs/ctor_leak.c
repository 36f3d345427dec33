/* SPDX-License-Identifier: MIT
 *
 * ctor_leak.c - linked with libctor_leak_lib.so, whose constructor leaks
 * 4,242 bytes before libtracker's constructor runs; main itself allocates
 * nothing. Prints ok=1.
 */
#include "common.h"

int ctor_leak_linked(void);

int main(void)
{
    put_kv("ok", (unsigned long long)ctor_leak_linked());
    return 0;
}
