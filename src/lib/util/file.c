/* SPDX-License-Identifier: Apache-2.0 */
/* Replacing a small file whole, opening files in folders others may write
 * to, and removing a tree (see file.h). */
#include "lib/util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util/utf8.h"

/* Create the temporary file exclusively: whatever sits under its name (a
 * leftover of a crash, or a link planted there) is removed first, never
 * opened. */
static int open_tmp(int dirfd, const char *tmp, int mode)
{
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(dirfd, tmp, flags, mode);
    if (fd < 0 && errno == EEXIST && unlinkat(dirfd, tmp, 0) == 0)
        fd = openat(dirfd, tmp, flags, mode);
    /* The umask must not loosen or tighten the asked mode. */
    if (fd >= 0 && fchmod(fd, (mode_t)mode) < 0) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, tmp, 0);
        errno = e;
        return -1;
    }
    return fd;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        done += (size_t)n;
    }
    return 0;
}

int file_write_atomic_at(int dirfd, const char *name, const void *data,
                         size_t len, int mode, bool sync, struct sh_error *err)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
        return sh_errorf(err, SH_EINVAL, "path too long: %.*s...",
                         UTF8_CUT(name, 64));
    int fd = open_tmp(dirfd, tmp, mode);
    if (fd < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot write %s: %s", tmp,
                         strerror(errno));
    int e = write_all(fd, data, len);
    if (!e && sync && fsync(fd) < 0)
        e = errno;
    if (close(fd) < 0 && !e)
        e = errno;
    if (e) {
        unlinkat(dirfd, tmp, 0);
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot write %s: %s", tmp,
                         strerror(e));
    }
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        e = errno;
        unlinkat(dirfd, tmp, 0);
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot rename %s: %s", tmp,
                         strerror(e));
    }
    return 0;
}

int file_write_atomic(const char *path, const void *data, size_t len, int mode,
                      bool sync, struct sh_error *err)
{
    return file_write_atomic_at(AT_FDCWD, path, data, len, mode, sync, err);
}

int file_open_regular_at(int dirfd, const char *name)
{
    struct stat st;
    return file_open_regular_stat_at(dirfd, name, &st);
}

int file_open_regular_stat_at(int dirfd, const char *name, struct stat *st)
{
    int fd = openat(dirfd, name,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    /* Regular files never block; clear the flag for the reader's sake. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

uint64_t file_size_at(int dirfd, const char *name)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(st.st_mode))
        return 0;
    return (uint64_t)st.st_size;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void file_remove_tree(const char *path)
{
    nftw(path, remove_entry, 32, FTW_DEPTH | FTW_PHYS);
}
