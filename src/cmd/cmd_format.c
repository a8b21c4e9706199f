/* SPDX-License-Identifier: Apache-2.0 */
/* squeue -o style job lines (cmd_format.h). */
#include "cmd/cmd_format.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/clock.h"
#include "lib/util/parse.h"

const char *const queue_format_keys[] = {
    "id",         "array_id",   "array_task", "state",
    "reason",     "name",       "user",       "project",
    "partition",  "qos",        "priority",   "slice",
    "nodes",      "gpus",       "gpus_total", "estimated_start",
    "placement",  "start_time", "end_time",   "submit_time",
    "time_limit", NULL};

struct fmt_field {
    char letter;
    const char *header;
};

static const struct fmt_field job_fields[] = {
    {'i', "JOBID"},
    {'j', "NAME"},
    {'u', "USER"},
    {'a', "ACCOUNT"},
    {'P', "PARTITION"},
    {'q', "QOS"},
    {'p', "PRIORITY"},
    {'T', "STATE"},
    {'t', "ST"},
    {'M', "TIME"},
    {'l', "TIME_LIMIT"},
    {'D', "NODES"},
    {'R', "NODELIST(REASON)"},
    {'N', "NODELIST"},
    {'b', "GPUS"},
    {'V', "SUBMIT_TIME"},
    {'S', "START_TIME"},
    {'e', "END_TIME"},
    {0, NULL},
};

/* sinfo's -o fields of a node line. */
static const struct fmt_field node_fields[] = {
    {'N', "NODELIST"},
    {'T', "STATE"},
    {'t', "STATE"},
    {'a', "AVAIL"},
    {'G', "GRES"},
    {'c', "CPUS"},
    {'m', "MEMORY"},
    {'f', "AVAIL_FEATURES"},
    {'g', "GPUS(FREE/TOTAL)"},
    {'j', "JOBS"},
    {0, NULL},
};

static const char *header_of(const struct fmt_field *fields, char c)
{
    for (int i = 0; fields[i].letter; i++)
        if (fields[i].letter == c)
            return fields[i].header;
    return NULL;
}

/* One field spec at p ('%' already read): right, width, letter. Returns
 * the byte after it, or NULL when malformed. */
static const char *spec(const char *p, bool *right, int *width, char *letter)
{
    *right = *p == '.';
    if (*right)
        p++;
    *width = 0;
    while (isdigit((unsigned char)*p) && *width < 1000)
        *width = *width * 10 + (*p++ - '0');
    if (isdigit((unsigned char)*p) || !*p)
        return NULL;
    *letter = *p;
    return p + 1;
}

static int check(const char *fmt, const struct fmt_field *fields,
                 const char *names, struct sh_error *err)
{
    if (!*fmt)
        return sh_errorf(err, SH_EINVAL, "--format must not be empty");
    for (const char *p = fmt; *p;) {
        if (*p++ != '%')
            continue;
        if (*p == '%') {
            p++;
            continue;
        }
        bool right;
        int width;
        char c;
        const char *next = spec(p, &right, &width, &c);
        if (!next || !header_of(fields, c))
            return sh_errorf(err, SH_EINVAL,
                             "--format: '%%%.*s' is not a field (%s, with "
                             "an optional [.]WIDTH)",
                             next ? (int)(next - p) : 1, p, names);
        p = next;
    }
    return 0;
}

int queue_format_check(const char *fmt, struct sh_error *err)
{
    return check(fmt, job_fields,
                 "%i %j %u %a %P %q %p %T %t %M %l %D %R %N %b %V %S %e", err);
}

int nodes_format_check(const char *fmt, struct sh_error *err)
{
    return check(fmt, node_fields, "%N %T %t %a %G %c %m %f %g %j", err);
}

static void put(struct strbuf *out, const char *v, bool right, int width)
{
    int len = (int)strlen(v);
    if (width && len > width)
        len = width; /* squeue cuts to the width */
    int pad = width > len ? width - len : 0;
    if (right)
        strbuf_appendf(out, "%*s", pad, "");
    strbuf_append(out, v, (size_t)len);
    if (!right)
        strbuf_appendf(out, "%*s", pad, "");
}

static const char *str(const json_t *j, const char *k)
{
    const char *v = json_string_value(json_object_get(j, k));
    return v ? v : "";
}

static long long num(const json_t *j, const char *k)
{
    return (long long)json_integer_value(json_object_get(j, k));
}

static long long iso_ms(const char *iso)
{
    int64_t ms = 0;
    if (iso && *iso)
        clock_parse_date("time", iso, &ms, NULL);
    return ms;
}

/* squeue's compact state codes. */
static const char *compact(const char *state)
{
    static const char *const map[][2] = {
        {"pending", "PD"}, {"running", "R"},    {"completed", "CD"},
        {"failed", "F"},   {"cancelled", "CA"}, {"preempted", "PR"},
        {"timeout", "TO"}, {"node_fail", "NF"}, {NULL, NULL}};
    for (int i = 0; map[i][0]; i++)
        if (strcmp(map[i][0], state) == 0)
            return map[i][1];
    return state;
}

/* Slurm's elapsed form: M:SS, H:MM:SS, D-HH:MM:SS. */
static void slurm_elapsed(long long s, char *buf, size_t size)
{
    if (s < 0)
        s = 0;
    long long d = s / 86400, h = (s % 86400) / 3600, m = (s % 3600) / 60;
    if (d)
        snprintf(buf, size, "%lld-%02lld:%02lld:%02lld", d, h, m, s % 60);
    else if (h)
        snprintf(buf, size, "%lld:%02lld:%02lld", h, m, s % 60);
    else
        snprintf(buf, size, "%lld:%02lld", m, s % 60);
}

static void nodelist(const json_t *j, char *buf, size_t size)
{
    size_t o = 0, i;
    json_t *a;
    buf[0] = '\0';
    json_array_foreach (json_object_get(j, "placement"), i, a) {
        int n =
            snprintf(buf + o, size - o, "%s%s", i ? "," : "", str(a, "node"));
        if (n < 0 || (size_t)n >= size - o)
            break;
        o += (size_t)n;
    }
}

static void field(char c, const json_t *j, int64_t now_ms, char *buf,
                  size_t size)
{
    size_t placed = json_array_size(json_object_get(j, "placement"));
    buf[0] = '\0';
    switch (c) {
    case 'i':
        if (json_object_get(j, "array_id"))
            snprintf(buf, size, "%lld_%lld", num(j, "array_id"),
                     num(j, "array_task"));
        else
            snprintf(buf, size, "%lld", num(j, "id"));
        break;
    case 'j':
        snprintf(buf, size, "%s", str(j, "name"));
        break;
    case 'u':
        snprintf(buf, size, "%s", str(j, "user"));
        break;
    case 'a':
        snprintf(buf, size, "%s", str(j, "project"));
        break;
    case 'P':
        snprintf(buf, size, "%s", str(j, "partition"));
        break;
    case 'q':
        snprintf(buf, size, "%s", str(j, "qos"));
        break;
    case 'p':
        snprintf(buf, size, "%s", str(j, "priority"));
        break;
    case 'T':
        for (size_t k = 0; str(j, "state")[k] && k + 1 < size; k++) {
            buf[k] = (char)toupper((unsigned char)str(j, "state")[k]);
            buf[k + 1] = '\0';
        }
        break;
    case 't':
        snprintf(buf, size, "%s", compact(str(j, "state")));
        break;
    case 'M': {
        long long start = iso_ms(str(j, "start_time"));
        long long end = iso_ms(str(j, "end_time"));
        if (strcmp(str(j, "state"), "pending") == 0 || !start)
            snprintf(buf, size, "0:00");
        else
            slurm_elapsed(((end ? end : now_ms) - start) / 1000, buf, size);
        break;
    }
    case 'l':
        if (num(j, "time_limit"))
            slurm_elapsed(num(j, "time_limit"), buf, size);
        else
            snprintf(buf, size, "UNLIMITED");
        break;
    case 'D':
        snprintf(buf, size, "%lld",
                 placed ? (long long)placed
                        : (num(j, "nodes") ? num(j, "nodes") : 1));
        break;
    case 'R':
        if (placed && strcmp(str(j, "state"), "pending") != 0)
            nodelist(j, buf, size);
        else
            snprintf(buf, size, "(%s)",
                     *str(j, "reason") ? str(j, "reason") : "None");
        break;
    case 'N':
        nodelist(j, buf, size);
        break;
    case 'b':
        if (*str(j, "slice"))
            snprintf(buf, size, "%s", str(j, "slice"));
        else if (num(j, "gpus_total") && !placed)
            snprintf(buf, size, "%lld", num(j, "gpus_total"));
        else if (num(j, "nodes") > 1)
            snprintf(buf, size, "%lldx%lld", num(j, "nodes"), num(j, "gpus"));
        else
            snprintf(buf, size, "%lld", num(j, "gpus"));
        break;
    case 'V':
        snprintf(buf, size, "%s", str(j, "submit_time"));
        break;
    case 'S':
        snprintf(buf, size, "%s",
                 *str(j, "start_time")        ? str(j, "start_time")
                 : *str(j, "estimated_start") ? str(j, "estimated_start")
                                              : "N/A");
        break;
    case 'e':
        snprintf(buf, size, "%s",
                 *str(j, "end_time") ? str(j, "end_time") : "N/A");
        break;
    }
}

typedef void (*value_fn)(char c, const json_t *o, int64_t now_ms, char *buf,
                         size_t size);

static void walk(const char *fmt, const struct fmt_field *fields,
                 value_fn value, const json_t *o, int64_t now_ms,
                 struct strbuf *out)
{
    for (const char *p = fmt; *p;) {
        if (*p != '%') {
            strbuf_append(out, p++, 1);
            continue;
        }
        p++;
        if (*p == '%') {
            strbuf_append(out, "%", 1);
            p++;
            continue;
        }
        bool right;
        int width;
        char c, buf[4096];
        const char *next = spec(p, &right, &width, &c);
        if (!next)
            return; /* checked before */
        if (o)
            value(c, o, now_ms, buf, sizeof(buf));
        else
            snprintf(buf, sizeof(buf), "%s", header_of(fields, c));
        put(out, buf, right, width);
        p = next;
    }
}

void queue_format_header(const char *fmt, struct strbuf *out)
{
    walk(fmt, job_fields, field, NULL, 0, out);
}

void queue_format_row(const char *fmt, const json_t *job, int64_t now_ms,
                      struct strbuf *out)
{
    walk(fmt, job_fields, field, job, now_ms, out);
}

/* One node field (sinfo's letters). */
static void node_field(char c, const json_t *n, int64_t now_ms, char *buf,
                       size_t size)
{
    (void)now_ms;
    const json_t *gpus = json_object_get(n, "gpus");
    long long total = (long long)json_array_size(gpus);
    long long busy = num(n, "gpus_busy");
    const char *state = str(n, "state");
    buf[0] = '\0';
    switch (c) {
    case 'N':
        snprintf(buf, size, "%s", str(n, "name"));
        break;
    case 'T':
        snprintf(buf, size, "%s", state);
        break;
    case 't': /* sinfo's words: idle, mix, alloc, drng, drain, down */
        if (strcmp(state, "up") == 0)
            snprintf(buf, size, "%s",
                     busy == 0 && num(n, "running_jobs") == 0 ? "idle"
                     : total && busy >= total                 ? "alloc"
                                                              : "mix");
        else
            snprintf(buf, size, "%s",
                     strcmp(state, "draining") == 0  ? "drng"
                     : strcmp(state, "drained") == 0 ? "drain"
                                                     : state);
        break;
    case 'a':
        snprintf(buf, size, "%s", strcmp(state, "down") == 0 ? "down" : "up");
        break;
    case 'G':
        if (total)
            snprintf(buf, size, "gpu:%s:%lld",
                     str(json_array_get(gpus, 0), "model"), total);
        else
            snprintf(buf, size, "(null)");
        break;
    case 'c':
        snprintf(buf, size, "%lld", num(n, "cpus"));
        break;
    case 'm': /* megabytes, as sinfo */
        snprintf(buf, size, "%lld", num(n, "memory") >> 20);
        break;
    case 'f': {
        size_t o = 0;
        const char *key;
        json_t *v;
        json_object_foreach ((json_t *)json_object_get(n, "labels"), key, v) {
            const char *val = json_string_value(v);
            int k = snprintf(buf + o, size - o, "%s%s%s%s", o ? "," : "", key,
                             val && *val ? "=" : "", val ? val : "");
            if (k < 0 || (size_t)k >= size - o)
                break;
            o += (size_t)k;
        }
        if (!o)
            snprintf(buf, size, "(null)");
        break;
    }
    case 'g':
        snprintf(buf, size, "%lld/%lld", total - busy, total);
        break;
    case 'j':
        snprintf(buf, size, "%lld", num(n, "running_jobs"));
        break;
    }
}

void nodes_format_header(const char *fmt, struct strbuf *out)
{
    walk(fmt, node_fields, node_field, NULL, 0, out);
}

void nodes_format_row(const char *fmt, const json_t *node, struct strbuf *out)
{
    walk(fmt, node_fields, node_field, node, 0, out);
}
