/* SPDX-License-Identifier: Apache-2.0 */
/* Replacing a small file whole: readers see the old contents or the new,
 * never a half-written file (write a temporary file beside it, optionally
 * fsync it, rename it over). For tokens, URLs, state notes and configs.
 *
 * And opening files in a folder someone else may write to (a job's run
 * folder, for a root agent): the last component is never followed when it
 * is a symbolic link, temporary files are created exclusively (a planted
 * file or link is removed, never written through), and readers accept
 * regular files only (a FIFO would block, a device would be read).
 *
 * And removing a folder with everything in it (the agent's caches and
 * staging folders). */
#ifndef SHOAL_UTIL_FILE_H
#define SHOAL_UTIL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "lib/util/error.h"

/* Write data (len bytes) to path through "<path>.tmp" with the given mode.
 * sync: fsync before the rename (the contents survive a power loss, not
 * only a crash of the process). Neither the temporary file nor path is
 * followed when it is a symbolic link: a link is replaced, never written
 * through. On failure the temporary file is removed, path is untouched and
 * err (SH_EUNAVAILABLE) names the file and errno. */
int file_write_atomic(const char *path, const void *data, size_t len, int mode,
                      bool sync, struct sh_error *err);

/* The same for the file `name` (one component, no '/') of the folder open
 * as dirfd (or AT_FDCWD). */
int file_write_atomic_at(int dirfd, const char *name, const void *data,
                         size_t len, int mode, bool sync, struct sh_error *err);

/* Open the regular file `name` of dirfd for reading, without following a
 * symbolic link and without blocking on a FIFO. Returns a close-on-exec fd,
 * or -1 with errno (ELOOP for a link, EINVAL for what is not a regular
 * file). */
int file_open_regular_at(int dirfd, const char *name);

/* The same, and *st is the open file's (its size, owner and mode as
 * opened: a reader needs no fstat of its own). */
int file_open_regular_stat_at(int dirfd, const char *name, struct stat *st);

/* The size of the regular file `name` of dirfd (links not followed); 0 when
 * it is absent or not a regular file. */
uint64_t file_size_at(int dirfd, const char *name);

/* Remove path and everything under it, deepest first, best effort (what
 * cannot be removed stays; nothing is reported). Symbolic links are
 * removed, never followed, and the walk stays on path's side of them. */
void file_remove_tree(const char *path);

#endif
