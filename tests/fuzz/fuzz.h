/* SPDX-License-Identifier: MIT
 *
 * fuzz.h - what the fuzz targets, their libFuzzer mutator and the corpus
 * replayer share: the libFuzzer entry points (names fixed by libFuzzer, hence
 * not trk_-prefixed) and the helpers that turn bytes into a readable file.
 */
#ifndef TRK_FUZZ_H
#define TRK_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Runs one input; returns 0 (libFuzzer reserves other values). A property
 * violation aborts, so that both libFuzzer and the replay test report it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer hooks, only in the libFuzzer build (fuzz_mutator.c). */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* An anonymous in-memory file holding data[0, size), positioned at 0; -1 if
 * the kernel refused. The reader wants a descriptor it can read() and fstat(). */
int trk_fuzz_memfd(const uint8_t *data, size_t size);

/* Aborts with a message naming the violated property. */
_Noreturn void trk_fuzz_fail(const char *what);

#endif /* TRK_FUZZ_H */
