/* SPDX-License-Identifier: Apache-2.0 */
/* GET /metrics: Prometheus text exposition (format 0.0.4) of the cluster:
 * jobs by state, nodes by state, GPUs (total, busy), the group commit and the
 * API. Counts only; nothing secret, so it needs no token (as scrapers
 * expect). */
#include <stdio.h>
#include <string.h>

#include "lib/util/strbuf.h"
#include "shoald/api_handlers.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/nodetab.h"

#define METRICS_MAX (1u << 20)

static void family(struct strbuf *sb, const char *name, const char *type,
                   const char *help)
{
    strbuf_appendf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void api_metrics(struct shoald *d, struct api_req *req)
{
    struct strbuf sb;
    strbuf_init(&sb, METRICS_MAX);
    int counts[JOB_STATE_COUNT];
    jobtab_count_states(d->jobs, counts);
    family(&sb, "shoal_jobs", "gauge", "Jobs in memory by state.");
    for (int s = 0; s < JOB_STATE_COUNT; s++)
        strbuf_appendf(&sb, "shoal_jobs{state=\"%s\"} %d\n",
                       job_state_name((enum job_state)s), counts[s]);
    int nodes[NODE_STATE_COUNT] = {0};
    int gpus = 0, slices = 0;
    for (struct node *n = nodetab_next(d->nodes, NULL); n;
         n = nodetab_next(d->nodes, n)) {
        nodes[node_state(n)]++;
        gpus += n->ngpus;
        for (int g = 0; g < n->ngpus; g++)
            slices += n->gpus[g].nslices;
    }
    family(&sb, "shoal_nodes", "gauge", "Nodes by state.");
    for (int s = 0; s < NODE_STATE_COUNT; s++)
        strbuf_appendf(&sb, "shoal_nodes{state=\"%s\"} %d\n",
                       node_state_name((enum node_state)s), nodes[s]);
    family(&sb, "shoal_gpus", "gauge", "GPUs the nodes reported.");
    strbuf_appendf(&sb, "shoal_gpus %d\n", gpus);
    family(&sb, "shoal_gpu_slices", "gauge", "Slices (MIG or time) on them.");
    strbuf_appendf(&sb, "shoal_gpu_slices %d\n", slices);
    double held = 0;
    for (struct job *j = jobtab_next(d->jobs, NULL); j;
         j = jobtab_next(d->jobs, j)) {
        if (j->state == JOB_RUNNING || j->releasing)
            for (int a = 0; a < j->nalloc; a++)
                held += j->alloc[a].done ? 0 : j->alloc[a].share;
    }
    family(&sb, "shoal_gpus_allocated", "gauge",
           "GPUs held by jobs (slices count as their share).");
    strbuf_appendf(&sb, "shoal_gpus_allocated %.4f\n", held);
    struct commit_stats cs;
    commit_get_stats(d->commit, &cs);
    family(&sb, "shoal_commits_total", "counter",
           "Group commits written to the store.");
    strbuf_appendf(&sb, "shoal_commits_total %llu\n",
                   (unsigned long long)cs.commits);
    family(&sb, "shoal_commit_changes_total", "counter",
           "Changes written by those commits.");
    strbuf_appendf(&sb, "shoal_commit_changes_total %llu\n",
                   (unsigned long long)cs.ops);
    family(&sb, "shoal_commit_failures_total", "counter",
           "Commits the store refused.");
    strbuf_appendf(&sb, "shoal_commit_failures_total %llu\n",
                   (unsigned long long)cs.failures);
    family(&sb, "shoal_commit_seconds_total", "counter",
           "Time spent committing (fsync included).");
    strbuf_appendf(&sb, "shoal_commit_seconds_total %.6f\n",
                   (double)cs.total_us / 1e6);
    family(&sb, "shoal_api_requests_total", "counter",
           "API requests answered.");
    strbuf_appendf(&sb, "shoal_api_requests_total %llu\n",
                   (unsigned long long)api_requests(d->api));
    size_t len = sb.len;
    api_reply_text(req, 200, "text/plain; version=0.0.4", strbuf_take(&sb),
                   len);
}
