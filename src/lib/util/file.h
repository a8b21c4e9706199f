/* SPDX-License-Identifier: Apache-2.0 */
/* Replacing a small file whole: readers see the old contents or the new,
 * never a half-written file (write a temporary file beside it, optionally
 * fsync it, rename it over). For tokens, URLs, state notes and configs. */
#ifndef SHOAL_UTIL_FILE_H
#define SHOAL_UTIL_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/util/error.h"

/* Write data (len bytes) to path through "<path>.tmp" with the given mode.
 * sync: fsync before the rename (the contents survive a power loss, not
 * only a crash of the process). On failure the temporary file is removed,
 * path is untouched and err (SH_EUNAVAILABLE) names the file and errno. */
int file_write_atomic(const char *path, const void *data, size_t len, int mode,
                      bool sync, struct sh_error *err);

#endif
