/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs' node wishes in the engine: --nodelist, --exclude and --constraint
 * as a bitset of the nodes that qualify, recomputed lazily when the nodes
 * change (a version number), so placement tests one bit per node. The
 * texts' meaning is lib/model/job_place.c's, which the controller's
 * placement of jobs without GPUs uses too. Exclusivity is a node's field
 * (snode.excl), tested beside the bitset in sched_node_ok().
 */
#include "sched/sched_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job_place.h"

void filter_free(struct sjob *j)
{
    if (!j->filter)
        return;
    free(j->filter->nodelist);
    free(j->filter->exclude);
    free(j->filter->constraint);
    free(j->filter->allow);
    free(j->filter);
    j->filter = NULL;
}

static int dup_opt(char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && !*dst ? -1 : 0;
}

int filter_set(struct sched *s, struct sjob *j, const struct sched_job_desc *d)
{
    j->excl = d->exclusive;
    if (!d->nodelist && !d->exclude && !d->constraint)
        return 0;
    struct sfilter *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    j->filter = f;
    if (dup_opt(&f->nodelist, d->nodelist) < 0 ||
        dup_opt(&f->exclude, d->exclude) < 0 ||
        dup_opt(&f->constraint, d->constraint) < 0)
        goto error;
    f->version = s->nodes_version - 1; /* stale: computed on first use */
    if (filter_refresh(s, j) < 0)
        goto error;
    return 0;
error:
    filter_free(j);
    return -1;
}

int filter_refresh(struct sched *s, struct sjob *j)
{
    struct sfilter *f = j->filter;
    if (!f || f->version == s->nodes_version)
        return 0;
    uint32_t nn = s->node_names.n;
    uint32_t words = (nn + 63) / 64;
    uint64_t *bits = calloc(words ? words : 1, sizeof(*bits));
    if (!bits)
        return -1;
    uint32_t nallow = 0;
    for (uint32_t n = 0; n < nn; n++) {
        const struct snode *nd = &s->nodes[n];
        if (!nd->present)
            continue;
        if (job_place_allows(f->nodelist, f->exclude, f->constraint,
                             s->node_names.names[n], nd->labels, nd->nlabels)) {
            bits_set(bits, n);
            nallow++;
        }
    }
    free(f->allow);
    f->allow = bits;
    f->nbits = nn;
    f->nallow = nallow;
    f->version = s->nodes_version;
    return 0;
}

int filter_refresh_all(struct sched *s)
{
    for (uint32_t j = 0; j < s->jobs_cap; j++) {
        struct sjob *job = &s->jobs[j];
        if (job->state == SJOB_FREE || !job->filter)
            continue;
        if (filter_refresh(s, job) < 0)
            return -1;
    }
    return 0;
}

int sched_filters_fresh(struct sched *s)
{
    if (s->filters_at == s->nodes_version)
        return 0;
    if (filter_refresh_all(s) < 0)
        return -1;
    s->filters_at = s->nodes_version;
    return 0;
}

void filter_text(const struct sjob *j, char *buf, size_t size)
{
    const struct sfilter *f = j->filter;
    size_t o = 0;
    buf[0] = '\0';
    if (!f)
        return;
    if (f->constraint && o < size)
        o += (size_t)snprintf(buf + o, size - o, "constraint \"%s\"",
                              f->constraint);
    if (f->nodelist && o < size)
        o += (size_t)snprintf(buf + o, size - o, "%snodelist %s", o ? ", " : "",
                              f->nodelist);
    if (f->exclude && o < size)
        snprintf(buf + o, size - o, "%sexclude %s", o ? ", " : "", f->exclude);
}
