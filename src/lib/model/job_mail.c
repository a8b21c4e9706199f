/* SPDX-License-Identifier: Apache-2.0 */
/* --mail-type events and --mail-user addresses (job_mail.h). */
#include "lib/model/job_mail.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/util/utf8.h"

static const struct {
    const char *name;
    int bits;
} names[] = {
    {"BEGIN", JOB_MAIL_BEGIN},
    {"END", JOB_MAIL_END},
    {"FAIL", JOB_MAIL_FAIL},
    {"REQUEUE", JOB_MAIL_REQUEUE},
    {"INVALID_DEPEND", JOB_MAIL_INVALID_DEPEND},
    {NULL, 0},
};

int job_mail_parse(const char *text, int *events, struct sh_error *err)
{
    int bits = 0;
    if (!text || !*text)
        return sh_errorf(err, SH_EINVAL, "mail_type must not be empty");
    for (const char *p = text;;) {
        size_t n = strcspn(p, ",");
        bool known = false;
        for (int i = 0; names[i].name && !known; i++) {
            if (strlen(names[i].name) == n &&
                strncasecmp(p, names[i].name, n) == 0) {
                bits |= names[i].bits;
                known = true;
            }
        }
        if (!known && n == 3 && strncasecmp(p, "ALL", 3) == 0) {
            bits |= JOB_MAIL_ALL;
            known = true;
        }
        if (!known && ((n == 4 && strncasecmp(p, "NONE", 4) == 0) ||
                       (n == 11 && strncasecmp(p, "ARRAY_TASKS", 11) == 0)))
            known = true; /* NONE; ARRAY_TASKS is Shoal's way already */
        if (!known && n >= 10 && strncasecmp(p, "TIME_LIMIT", 10) == 0)
            return sh_errorf(err, SH_EINVAL,
                             "mail_type: %.*s is not supported: Shoal "
                             "notifies at BEGIN, END, FAIL, REQUEUE and "
                             "INVALID_DEPEND",
                             UTF8_CUT(p, n < 32 ? (int)n : 32));
        if (!known)
            return sh_errorf(err, SH_EINVAL,
                             "mail_type: '%.*s' is not one of NONE, BEGIN, "
                             "END, FAIL, REQUEUE, INVALID_DEPEND, ALL, "
                             "ARRAY_TASKS",
                             UTF8_CUT(p, n < 32 ? (int)n : 32));
        if (!p[n])
            break;
        p += n + 1;
    }
    *events = bits;
    return 0;
}

const char *job_mail_format(int events, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; names[i].name; i++) {
        if (!(events & names[i].bits))
            continue;
        int n =
            snprintf(buf + o, size - o, "%s%s", o ? "," : "", names[i].name);
        if (n < 0 || (size_t)n >= size - o)
            break;
        o += (size_t)n;
    }
    if (!o)
        snprintf(buf, size, "NONE");
    return buf;
}

const char *job_mail_event_name(enum job_mail_event e)
{
    for (int i = 0; names[i].name; i++)
        if (names[i].bits == (int)e)
            return names[i].name;
    return "?";
}

bool job_mail_user_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > JOB_MAIL_USER_MAX || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._%+-@", s[i]))
            return false;
    return true;
}
