/* SPDX-License-Identifier: MIT
 *
 * sampling.h - how every report says that a capture's stacks were sampled
 * (`tracker run --sample-bytes N`) and at what rate: one phrase for text,
 * one member for JSON, so that the wording is the same everywhere
 * (sampling.c). Must not: compute figures (analysis/sample_weight.h does).
 */
#ifndef TRK_REPORT_SAMPLING_H
#define TRK_REPORT_SAMPLING_H

#include <stdint.h>
#include <stdio.h>

#include "report/report.h"
#include "report/report_json.h"

/* N of the sampled captures of the set (they share one run's setting; the
 * largest if they differ), 0 when none was sampled. */
uint64_t trk_report_set_sample_bytes(const struct trk_report_set *s);

/* "sampled at 8,192 bytes: ..." on a line of its own; nothing when n is 0. */
void trk_rsample_line(FILE *f, uint64_t n);

/* A table row ("Sampling  stacks sampled at ..."), for `tracker stats`. */
void trk_rsample_row(FILE *f, const char *row_fmt, uint64_t n);

/* "sample_bytes": n and "sampling": the phrase, when n is not 0. */
void trk_rsample_json(struct trk_rjson *j, uint64_t n);

#endif /* TRK_REPORT_SAMPLING_H */
