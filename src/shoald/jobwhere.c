/* SPDX-License-Identifier: Apache-2.0 */
/* Submission checks of a job's node list and constraint (jobwhere.h). */
#include "shoald/jobwhere.h"

#include <stdio.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_place.h"
#include "lib/model/node.h"
#include "lib/util/strbuf.h"
#include "shoald/nodetab.h"

/* The names of the known nodes, comma-separated (cut past a few). */
static void known_nodes(const struct nodetab *nodes, struct strbuf *out)
{
    int n = 0;
    for (const struct node *o = nodetab_next(nodes, NULL); o;
         o = nodetab_next(nodes, o)) {
        if (n++ == 32) {
            strbuf_appends(out, ",...");
            break;
        }
        strbuf_appendf(out, "%s%s", n > 1 ? "," : "", o->name);
    }
}

/* Every label the nodes carry, "key" or "key=value", each once, as
 * ",a,b=c," (so that ",x," finds one). */
static void known_labels(const struct nodetab *nodes, struct strbuf *out)
{
    int n = 0;
    strbuf_appends(out, ",");
    for (const struct node *o = nodetab_next(nodes, NULL); o;
         o = nodetab_next(nodes, o)) {
        for (int i = 0; i < o->nlabels; i++) {
            char probe[300];
            const struct node_label *l = &o->labels[i];
            if (l->value && *l->value)
                snprintf(probe, sizeof(probe), ",%s=%s,", l->key, l->value);
            else
                snprintf(probe, sizeof(probe), ",%s,", l->key);
            if (strstr(strbuf_str(out), probe))
                continue;
            if (n++ == 48)
                return;
            strbuf_appends(out, probe + 1);
        }
    }
}

int jobwhere_check(const struct nodetab *nodes, const struct job_spec *spec,
                   struct sh_error *err)
{
    if (nodetab_count(nodes) == 0)
        return 0;
    if (spec->nodelist) {
        struct strbuf unknown;
        strbuf_init(&unknown, 1024);
        const char *p = spec->nodelist;
        int missing = 0;
        while (*p) {
            size_t len = strcspn(p, ",");
            char name[JOB_IDENT_MAX + 1];
            snprintf(name, sizeof(name), "%.*s", (int)len, p);
            if (!nodetab_get(nodes, name))
                strbuf_appendf(&unknown, "%s%s", missing++ ? "," : "", name);
            p += len + (p[len] == ',');
        }
        if (missing) {
            struct strbuf known;
            strbuf_init(&known, 2048);
            known_nodes(nodes, &known);
            sh_errorf(err, SH_EINVAL,
                      "--nodelist: no node named %s (the nodes: %s)",
                      strbuf_str(&unknown), strbuf_str(&known));
            strbuf_fini(&known);
            strbuf_fini(&unknown);
            return -1;
        }
        strbuf_fini(&unknown);
    }
    if (spec->constraint) {
        for (const struct node *o = nodetab_next(nodes, NULL); o;
             o = nodetab_next(nodes, o))
            if (job_constraint_match(spec->constraint, o->labels, o->nlabels))
                return 0;
        struct strbuf labels;
        strbuf_init(&labels, 4096);
        known_labels(nodes, &labels);
        const char *l = strbuf_str(&labels);
        int len = (int)strlen(l);
        sh_errorf(err, SH_EINVAL,
                  "--constraint: no node satisfies '%s' (the nodes' "
                  "labels: %.*s)",
                  spec->constraint, len > 1 ? len - 2 : 4,
                  len > 1 ? l + 1 : "none");
        strbuf_fini(&labels);
        return -1;
    }
    return 0;
}
