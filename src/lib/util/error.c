/* SPDX-License-Identifier: Apache-2.0 */
/* sh_error helpers: formatting, prefixing and the code <-> name table. */
#include "lib/util/error.h"

#include <stdio.h>
#include <string.h>

#include "lib/util/utf8.h"

static const char *const errc_names[] = {
    [SH_OK] = "ok",
    [SH_EINVAL] = "invalid",
    [SH_ENOTFOUND] = "not_found",
    [SH_ECONFLICT] = "conflict",
    [SH_EUNAUTH] = "unauthenticated",
    [SH_EFORBIDDEN] = "forbidden",
    [SH_EQUOTA] = "quota",
    [SH_ETOOLARGE] = "too_large",
    [SH_EUNAVAILABLE] = "unavailable",
    [SH_EINTERNAL] = "internal",
};

/* After a printf into msg[size] that wanted n bytes: when the text did not
 * fit, drop a multi-byte character cut in two at the end. */
static void cut_tail(char *msg, size_t size, int n)
{
    if (n >= (int)size)
        msg[utf8_complete_prefix(msg, strlen(msg), true)] = '\0';
}

int sh_verrorf(struct sh_error *err, enum sh_errc code, const char *fmt,
               va_list ap)
{
    if (err) {
        err->code = code;
        int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        cut_tail(err->msg, sizeof(err->msg), n);
    }
    return -1;
}

int sh_errorf(struct sh_error *err, enum sh_errc code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sh_verrorf(err, code, fmt, ap);
    va_end(ap);
    return -1;
}

int sh_error_prefix(struct sh_error *err, const char *fmt, ...)
{
    if (err) {
        char prefix[128];
        char old[sizeof(err->msg)];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        cut_tail(prefix, sizeof(prefix), n);
        memcpy(old, err->msg, sizeof(old));
        n = snprintf(err->msg, sizeof(err->msg), "%s%s", prefix, old);
        cut_tail(err->msg, sizeof(err->msg), n);
    }
    return -1;
}

void sh_error_clear(struct sh_error *err)
{
    if (err) {
        err->code = SH_OK;
        err->msg[0] = '\0';
    }
}

const char *sh_errc_name(enum sh_errc code)
{
    if ((unsigned)code < sizeof(errc_names) / sizeof(errc_names[0]))
        return errc_names[code];
    return "internal";
}

enum sh_errc sh_errc_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof(errc_names) / sizeof(errc_names[0]); i++) {
        if (name && strcmp(errc_names[i], name) == 0)
            return (enum sh_errc)i;
    }
    return SH_EINTERNAL;
}
