/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the `shoal` commands (see cmd.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/util/clock.h"
#include "lib/util/parse.h"

void die(const char *fmt, ...)
{
    va_list ap;
    fputs("shoal: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void warn(const char *fmt, ...)
{
    va_list ap;
    fputs("shoal: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

struct client *cmd_connect(void)
{
    struct client_config cfg;
    struct sh_error err;
    if (client_config_load(&cfg, &err) < 0)
        die("%s", err.msg);
    struct client *c = client_create(cfg.url, cfg.token,
                                     cfg.ca_file[0] ? cfg.ca_file : NULL, &err);
    if (!c)
        die("%s (from %s)", err.msg, cfg.source);
    return c;
}

json_t *cmd_call(struct client *c, const char *method, const char *path,
                 const json_t *body)
{
    json_t *out = NULL;
    struct sh_error err;
    if (client_call(c, method, path, body, &out, NULL, &err) < 0)
        die("%s", err.msg);
    return out;
}

void cmd_print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
    if (s) {
        puts(s);
        free(s);
    }
    json_decref(v);
}

long long cmd_parse_int(const char *opt, const char *s, long long min,
                        long long max)
{
    int64_t v;
    struct sh_error err;
    if (parse_int64(opt, s, min, max, &v, &err) < 0)
        die("%s", err.msg);
    return v;
}

void cmd_format_ago(long long ms, char *buf, size_t size)
{
    if (ms <= 0) {
        snprintf(buf, size, "-");
        return;
    }
    long long now = clock_wall_ms();
    char d[32];
    if (ms <= now) {
        format_duration((now - ms) / 1000, d, sizeof(d));
        snprintf(buf, size, "%s ago", d);
    } else {
        format_duration((ms - now) / 1000, d, sizeof(d));
        snprintf(buf, size, "in %s", d);
    }
}

/* ---- tables ---- */

struct table {
    int ncols;
    char **cells; /* rows * ncols, row 0 = headers */
    int nrows;
    int cap;
};

struct table *table_create(int ncols, const char *const *headers)
{
    struct table *t = calloc(1, sizeof(*t));
    if (!t)
        die("out of memory");
    t->ncols = ncols;
    table_add(t, headers);
    return t;
}

void table_add(struct table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = realloc(t->cells,
                           (size_t)t->cap * (size_t)t->ncols * sizeof(char *));
        if (!t->cells)
            die("out of memory");
    }
    for (int c = 0; c < t->ncols; c++) {
        char *s = strdup(cells[c] ? cells[c] : "-");
        if (!s)
            die("out of memory");
        t->cells[t->nrows * t->ncols + c] = s;
    }
    t->nrows++;
}

void table_print(struct table *t)
{
    int *w = calloc((size_t)t->ncols, sizeof(int));
    if (!w)
        die("out of memory");
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            int n = (int)strlen(t->cells[r * t->ncols + c]);
            if (n > w[c])
                w[c] = n;
        }
    }
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            if (c == t->ncols - 1)
                printf("%s\n", s);
            else
                printf("%-*s  ", w[c], s);
        }
    }
    free(w);
}

void table_destroy(struct table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

const char *cmd_job_ref(const char *s)
{
    const char *us = strchr(s, '_');
    if (!us) {
        cmd_parse_int("job id", s, 1, (long long)INT64_MAX);
        return s;
    }
    char head[24];
    if ((size_t)(us - s) >= sizeof(head))
        die("job id '%s' is not ID or ID_TASK", s);
    snprintf(head, sizeof(head), "%.*s", (int)(us - s), s);
    cmd_parse_int("job id", head, 1, (long long)INT64_MAX);
    cmd_parse_int("array task", us + 1, 0, 9999999);
    return s;
}
