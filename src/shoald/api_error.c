/* SPDX-License-Identifier: Apache-2.0 */
/* What an error looks like on the wire: its HTTP status and its JSON body,
 * and the handlers' error answers (api_reply_error, api_errorf) built on
 * api_reply_json. Apart from api.c so that the handlers' request stand-in
 * for tests and fuzz targets (test/api_harness.c) answers errors exactly as
 * the server does without linking the HTTP server. */
#include <stdarg.h>
#include <string.h>

#include "lib/util/utf8.h"
#include "shoald/api.h"

int api_status_for(enum sh_errc code)
{
    switch (code) {
    case SH_OK:
        return 200;
    case SH_EINVAL:
        return 400;
    case SH_EUNAUTH:
        return 401;
    case SH_EFORBIDDEN:
    case SH_EQUOTA:
        return 403;
    case SH_ENOTFOUND:
        return 404;
    case SH_ECONFLICT:
        return 409;
    case SH_ETOOLARGE:
        return 413;
    case SH_EUNAVAILABLE:
        return 503;
    default:
        return 500;
    }
}

json_t *api_error_body(const struct sh_error *err, int *status)
{
    enum sh_errc code = err->code == SH_OK ? SH_EINTERNAL : err->code;
    /* Messages quote what the client sent (a path, a query argument, a
     * name), which need not be UTF-8, and JSON strings must be: every
     * invalid byte becomes U+FFFD, so a bad request gets its 4xx instead
     * of a failed encoding. */
    char *msg = utf8_sanitize(err->msg, strnlen(err->msg, sizeof(err->msg)));
    json_t *body = msg ? json_pack("{s:{s:s, s:s}}", "error", "code",
                                   sh_errc_name(code), "message", msg)
                       : NULL;
    free(msg);
    *status = api_status_for(code);
    return body;
}

void api_reply_error(struct api_req *req, const struct sh_error *err)
{
    int status;
    json_t *body = api_error_body(err, &status);
    api_reply_json(req, status, body);
}

int api_errorf(struct api_req *req, enum sh_errc code, const char *fmt, ...)
{
    struct sh_error err;
    va_list ap;
    va_start(ap, fmt);
    sh_verrorf(&err, code, fmt, ap);
    va_end(ap);
    api_reply_error(req, &err);
    return -1;
}
