/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/usage: the usage report of acct.c over HTTP. */
#include <stdint.h>
#include <string.h>

#include "lib/util/clock.h"
#include "shoald/acct.h"
#include "shoald/api_handlers.h"

/* GET /v1/usage?by=user|project|team|gpu-model&since=&until= */
void api_usage(struct shoald *d, struct api_req *req)
{
    struct sh_error err;
    int64_t now = shoald_now_ms(d);
    int64_t from, until = 0;
    const char *by = api_query(req, "by");
    const char *since = api_query(req, "since");
    const char *s_until = api_query(req, "until");
    static const char *const bys[] = {"user", "project", "team", "gpu-model"};
    int found = by ? -1 : ACCT_BY_PROJECT;
    for (int i = 0; by && i < 4; i++) {
        if (strcmp(by, bys[i]) == 0)
            found = i;
    }
    if (found < 0) {
        api_errorf(req, SH_EINVAL,
                   "by must be user, project, team or gpu-model");
        return;
    }
    from = now - INT64_C(30) * 24 * 3600 * 1000;
    if ((since && clock_parse_when("since", since, now, &from, &err) < 0) ||
        (s_until &&
         clock_parse_when("until", s_until, now, &until, &err) < 0)) {
        api_reply_error(req, &err);
        return;
    }
    if (until && until <= from) {
        api_errorf(req, SH_EINVAL, "until must be after since");
        return;
    }
    json_t *rows =
        acct_usage(d->store, d->tenancy, d->jobs, api_caller(req),
                   (enum acct_usage_by)found, from, until, now, &err);
    if (!rows) {
        api_reply_error(req, &err);
        return;
    }
    char s_from[32], s_to[32];
    clock_format_iso(from, s_from, sizeof(s_from));
    clock_format_iso(until ? until : now, s_to, sizeof(s_to));
    /* "o" steals rows */
    api_reply_json(req, 200,
                   json_pack("{s:s, s:s, s:s, s:o}", "by", bys[found], "since",
                             s_from, "until", s_to, "rows", rows));
}
