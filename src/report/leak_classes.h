/* SPDX-License-Identifier: MIT
 *
 * leak_classes.h - leak kinds in the leaks report (leak_classes.c).
 */
#ifndef TRK_REPORT_LEAK_CLASSES_H
#define TRK_REPORT_LEAK_CLASSES_H

#include <stdio.h>

#include "report/report.h"

/* "definitely lost", ...; index 0 "not classified". */
const char *trk_leak_class_phrase(unsigned cls);
void trk_leak_print_summary(FILE *out, const struct trk_leak_totals *tot, unsigned show);

#endif /* TRK_REPORT_LEAK_CLASSES_H */
