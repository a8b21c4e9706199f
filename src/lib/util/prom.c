/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text exposition (see prom.h). */
#include "lib/util/prom.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void prom_init(struct prom *p, size_t max)
{
    strbuf_init(&p->sb, max);
    p->overflow = false;
}

void prom_fini(struct prom *p)
{
    strbuf_fini(&p->sb);
}

static void put(struct prom *p, int rc)
{
    if (rc < 0)
        p->overflow = true;
}

int prom_escape_label(struct strbuf *sb, const char *v)
{
    for (const char *s = v; *s; s++) {
        const char *rep = NULL;
        if (*s == '\\')
            rep = "\\\\";
        else if (*s == '"')
            rep = "\\\"";
        else if (*s == '\n')
            rep = "\\n";
        if (rep ? strbuf_appends(sb, rep) : strbuf_append(sb, s, 1))
            return -1;
    }
    return 0;
}

void prom_family(struct prom *p, const char *name, const char *type,
                 const char *help)
{
    put(p, strbuf_appendf(&p->sb, "# HELP %s ", name));
    for (const char *s = help; *s; s++) {
        if (*s == '\\')
            put(p, strbuf_appends(&p->sb, "\\\\"));
        else if (*s == '\n')
            put(p, strbuf_appends(&p->sb, "\\n"));
        else
            put(p, strbuf_append(&p->sb, s, 1));
    }
    put(p, strbuf_appendf(&p->sb, "\n# TYPE %s %s\n", name, type));
}

static void value(struct prom *p, double v)
{
    if (isnan(v))
        put(p, strbuf_appends(&p->sb, "NaN"));
    else if (isinf(v))
        put(p, strbuf_appends(&p->sb, v > 0 ? "+Inf" : "-Inf"));
    else if (v == floor(v) && fabs(v) < 1e15)
        put(p, strbuf_appendf(&p->sb, "%.0f", v));
    else
        put(p, strbuf_appendf(&p->sb, "%.9g", v));
}

/* name{labels[,extra_key="extra_value"]} */
static void series(struct prom *p, const char *name, const char *suffix,
                   const char *const *labels, const char *extra_key,
                   const char *extra_value)
{
    put(p, strbuf_appendf(&p->sb, "%s%s", name, suffix));
    bool any = (labels && labels[0]) || extra_key;
    if (!any)
        return;
    put(p, strbuf_appends(&p->sb, "{"));
    bool first = true;
    for (int i = 0; labels && labels[i]; i += 2) {
        put(p, strbuf_appendf(&p->sb, "%s%s=\"", first ? "" : ",", labels[i]));
        put(p, prom_escape_label(&p->sb, labels[i + 1] ? labels[i + 1] : ""));
        put(p, strbuf_appends(&p->sb, "\""));
        first = false;
    }
    if (extra_key) {
        put(p, strbuf_appendf(&p->sb, "%s%s=\"", first ? "" : ",", extra_key));
        put(p, prom_escape_label(&p->sb, extra_value));
        put(p, strbuf_appends(&p->sb, "\""));
    }
    put(p, strbuf_appends(&p->sb, "}"));
}

void prom_sample(struct prom *p, const char *name, const char *const *labels,
                 double v)
{
    series(p, name, "", labels, NULL, NULL);
    put(p, strbuf_appends(&p->sb, " "));
    value(p, v);
    put(p, strbuf_appends(&p->sb, "\n"));
}

void prom_histogram(struct prom *p, const char *name, const char *const *labels,
                    const struct histogram *h)
{
    char le[32];
    for (int i = 0; i <= h->nbounds; i++) {
        if (i < h->nbounds)
            snprintf(le, sizeof(le), "%.9g", h->bounds[i]);
        else
            snprintf(le, sizeof(le), "+Inf");
        series(p, name, "_bucket", labels, "le", le);
        put(p, strbuf_appends(&p->sb, " "));
        value(p, (double)histogram_cumulative(h, i));
        put(p, strbuf_appends(&p->sb, "\n"));
    }
    series(p, name, "_sum", labels, NULL, NULL);
    put(p, strbuf_appends(&p->sb, " "));
    value(p, h->sum);
    put(p, strbuf_appends(&p->sb, "\n"));
    series(p, name, "_count", labels, NULL, NULL);
    put(p, strbuf_appends(&p->sb, " "));
    value(p, (double)h->count);
    put(p, strbuf_appends(&p->sb, "\n"));
}
