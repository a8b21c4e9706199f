/* SPDX-License-Identifier: Apache-2.0 */
/* What every libFuzzer target of src/fuzz shares: the entry point libFuzzer
 * calls with one input, and fuzz_cstr() for the parsers that take a C
 * string. A target returns 0; it reports a broken property (a round trip
 * that does not, an invariant that fails) with fuzz_fail(), which aborts so
 * libFuzzer keeps the input as a crash. Built only with -Dfuzz=true.
 */
#ifndef SHOAL_FUZZ_FUZZ_H
#define SHOAL_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Called by libFuzzer once per input; data is borrowed for the call. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (it stops at the first NUL byte of
 * data, as a C parser would). The caller frees it. NULL on out of memory. */
char *fuzz_cstr(const uint8_t *data, size_t size);

/* Print "fuzz: <what>" on stderr and abort. */
void fuzz_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
