/* SPDX-License-Identifier: Apache-2.0 */
/* Replacing a small file whole (see file.h). */
#include "lib/util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int file_write_atomic(const char *path, const void *data, size_t len, int mode,
                      bool sync, struct sh_error *err)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return sh_errorf(err, SH_EINVAL, "path too long: %.64s...", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot write %s: %s", tmp,
                         strerror(errno));
    const char *p = data;
    size_t done = 0;
    int e = 0;
    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            e = n < 0 ? errno : EIO;
            break;
        }
        done += (size_t)n;
    }
    if (!e && sync && fsync(fd) < 0)
        e = errno;
    if (close(fd) < 0 && !e)
        e = errno;
    if (e) {
        unlink(tmp);
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot write %s: %s", tmp,
                         strerror(e));
    }
    if (rename(tmp, path) < 0) {
        e = errno;
        unlink(tmp);
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot rename %s: %s", tmp,
                         strerror(e));
    }
    return 0;
}
