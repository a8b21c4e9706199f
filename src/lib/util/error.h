/* SPDX-License-Identifier: Apache-2.0 */
/* The one error convention of Shoal: functions return 0/-1 (or a pointer/NULL)
 * and fill an optional struct sh_error with a code and a message a person can
 * read. The codes are few on purpose; the API maps each to one HTTP status.
 */
#ifndef SHOAL_UTIL_ERROR_H
#define SHOAL_UTIL_ERROR_H

#include <stdarg.h>

enum sh_errc {
    SH_OK = 0,
    SH_EINVAL,       /* the request or input is malformed or out of range */
    SH_ENOTFOUND,    /* the named object does not exist */
    SH_ECONFLICT,    /* the object's state does not allow this */
    SH_EUNAUTH,      /* no credentials, or credentials not recognised */
    SH_EFORBIDDEN,   /* recognised, but not allowed */
    SH_EQUOTA,       /* a quota or limit forbids it */
    SH_ETOOLARGE,    /* a size limit was exceeded */
    SH_EUNAVAILABLE, /* temporarily impossible: retry later */
    SH_EINTERNAL,    /* a bug or an I/O failure on our side */
};

struct sh_error {
    enum sh_errc code;
    char msg[256];
};

/* Fill err (which may be NULL) with code and a printf-style message.
 * Always returns -1, so it can be the expression of a return statement.
 * A message longer than msg is cut before the character that does not fit
 * whole, so valid UTF-8 stays valid (see lib/util/utf8.h). */
int sh_errorf(struct sh_error *err, enum sh_errc code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with a va_list (for wrappers such as api_errorf). */
int sh_verrorf(struct sh_error *err, enum sh_errc code, const char *fmt,
               va_list ap) __attribute__((format(printf, 3, 0)));

/* Prefix an existing message in err with more context ("store: ...").
 * Cut like sh_errorf when the result does not fit. */
int sh_error_prefix(struct sh_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reset err to SH_OK with an empty message. NULL-safe. */
void sh_error_clear(struct sh_error *err);

/* The stable wire name of a code ("invalid", "not_found", ...). */
const char *sh_errc_name(enum sh_errc code);

/* Parse a wire name back to a code; SH_EINTERNAL when unknown. */
enum sh_errc sh_errc_from_name(const char *name);

#endif
