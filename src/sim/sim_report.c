/* SPDX-License-Identifier: Apache-2.0 */
/* Reports of a replay: a summary for people, and the JSON object whose
 * top-level fields (jobs, makespan_s, jct_*_s, wait_*_s, utilization,
 * jain_fairness, preemptions, projects{jobs, jct_avg_s, gpu_share}) are a
 * contract for scripts (doc/design/sim.md). Extend, never rename.
 */
#include "sim/sim.h"

#include <jansson.h>
#include <string.h>

#include "lib/util/parse.h"

static const char *dur(double s, char *buf, size_t size)
{
    if (s < 60)
        snprintf(buf, size, "%.0fs", s);
    else
        format_duration((int64_t)(s + 0.5), buf, size);
    return buf;
}

static double total_gpu_s(const struct sim_result *r)
{
    double g = 0;
    for (size_t i = 0; i < r->nprojects; i++)
        g += r->projects[i].gpu_s;
    return g;
}

void sim_report_text(FILE *f, const struct sim_result *r,
                     const struct sim_cluster *c)
{
    char a[32], b[32], d[32], e[32];
    fprintf(f, "shoal sim: %zu jobs on %d nodes, %d GPUs (",
            r->jobs + r->rejected + r->unfinished, r->nodes, r->gpus);
    for (int i = 0; i < c->npools; i++)
        fprintf(f, "%s%dx%dx%s%s%s", i ? " + " : "", c->pools[i].nodes,
                c->pools[i].gpus, c->pools[i].model,
                c->pools[i].preset[0] ? ":" : "", c->pools[i].preset);
    fprintf(f, "), policy %s\n", sched_policy_name(r->policy));
    /* Jobs left waiting or running at the end make every other figure
     * partial: say so first. */
    if (r->unfinished)
        fprintf(f,
                "  never finished    %zu (still waiting or running when "
                "the replay ended)\n",
                r->unfinished);
    fprintf(f, "  completed         %zu", r->jobs);
    if (r->rejected)
        fprintf(f, " (%zu rejected: can never fit)", r->rejected);
    if (r->timeouts)
        fprintf(f, " (%zu hit their time limit)", r->timeouts);
    fprintf(f, "\n  makespan          %s (%.0f s)\n",
            dur(r->makespan_s, a, sizeof(a)), r->makespan_s);
    fprintf(f, "  JCT               avg %s, p50 %s, p95 %s, p99 %s\n",
            dur(r->jct_avg_s, a, sizeof(a)), dur(r->jct_p50_s, b, sizeof(b)),
            dur(r->jct_p95_s, d, sizeof(d)), dur(r->jct_p99_s, e, sizeof(e)));
    fprintf(f, "  queueing delay    avg %s, p99 %s\n",
            dur(r->wait_avg_s, a, sizeof(a)), dur(r->wait_p99_s, b, sizeof(b)));
    if (r->big_jobs > 0)
        fprintf(f, "                    p99 %s for the %zu jobs of %d+ GPUs\n",
                dur(r->wait_big_p99_s, a, sizeof(a)), r->big_jobs,
                SIM_BIG_GPUS);
    fprintf(f, "  GPU utilization   %.1f%%\n", r->utilization * 100);
    fprintf(f, "  Jain's fairness   %.3f over projects (mean duration/JCT)\n",
            r->jain);
    fprintf(f,
            "  preemptions       %zu (%zu attempts resumed from a "
            "checkpoint)\n",
            r->preemptions, r->resumes);
    double g = total_gpu_s(r);
    fprintf(f, "  %-24s %8s %12s %10s\n", "project", "jobs", "JCT avg",
            "GPU share");
    for (size_t i = 0; i < r->nprojects; i++) {
        const struct sim_project *p = &r->projects[i];
        if (p->jobs == 0)
            continue;
        fprintf(f, "  %-24s %8zu %12s %9.1f%%\n", p->name, p->jobs,
                dur(p->jct_sum_s / (double)p->jobs, a, sizeof(a)),
                g > 0 ? 100 * p->gpu_s / g : 0.0);
    }
    fprintf(f, "  replay: %zu events in %.3f s (%.0f events/s)\n", r->events,
            r->wall_s, r->wall_s > 0 ? (double)r->events / r->wall_s : 0.0);
}

static int set(json_t *o, const char *k, json_t *v)
{
    /* json_object_set_new steals v, also on failure. */
    return v ? json_object_set_new(o, k, v) : -1;
}

int sim_report_json(FILE *f, const struct sim_result *r)
{
    json_t *o = json_object();
    json_t *pj = json_object();
    int rc = 0;
    if (!o || !pj) {
        json_decref(o);
        json_decref(pj);
        return -1;
    }
    double g = total_gpu_s(r);
    rc |= set(o, "jobs", json_integer((json_int_t)r->jobs));
    rc |= set(o, "rejected", json_integer((json_int_t)r->rejected));
    rc |= set(o, "unfinished", json_integer((json_int_t)r->unfinished));
    rc |= set(o, "timeouts", json_integer((json_int_t)r->timeouts));
    rc |= set(o, "nodes", json_integer(r->nodes));
    rc |= set(o, "gpus", json_integer(r->gpus));
    rc |= set(o, "policy", json_string(sched_policy_name(r->policy)));
    rc |= set(o, "makespan_s", json_real(r->makespan_s));
    rc |= set(o, "jct_avg_s", json_real(r->jct_avg_s));
    rc |= set(o, "jct_p50_s", json_real(r->jct_p50_s));
    rc |= set(o, "jct_p95_s", json_real(r->jct_p95_s));
    rc |= set(o, "jct_p99_s", json_real(r->jct_p99_s));
    rc |= set(o, "wait_avg_s", json_real(r->wait_avg_s));
    rc |= set(o, "wait_p99_s", json_real(r->wait_p99_s));
    rc |= set(o, "wait_p99_8gpu_s", json_real(r->wait_big_p99_s));
    rc |= set(o, "resumes", json_integer((json_int_t)r->resumes));
    rc |= set(o, "utilization", json_real(r->utilization));
    rc |= set(o, "jain_fairness", json_real(r->jain));
    rc |= set(o, "preemptions", json_integer((json_int_t)r->preemptions));
    rc |= set(o, "events", json_integer((json_int_t)r->events));
    rc |= set(o, "wall_s", json_real(r->wall_s));
    for (size_t i = 0; i < r->nprojects && rc == 0; i++) {
        const struct sim_project *p = &r->projects[i];
        if (p->jobs == 0)
            continue;
        json_t *x = json_object();
        rc |= set(x, "jobs", json_integer((json_int_t)p->jobs));
        rc |= set(x, "jct_avg_s", json_real(p->jct_sum_s / (double)p->jobs));
        rc |= set(x, "gpu_share", json_real(g > 0 ? p->gpu_s / g : 0.0));
        rc |= set(pj, p->name, x);
    }
    rc |= set(o, "projects", pj);
    if (rc == 0)
        rc = json_dumpf(o, f,
                        JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                            JSON_REAL_PRECISION(10));
    if (rc == 0)
        fputc('\n', f);
    json_decref(o);
    return rc == 0 ? 0 : -1;
}

const char *sim_outcome_state_name(enum sim_outcome_state s)
{
    static const char *const names[] = {"completed", "timeout", "rejected",
                                        "unfinished"};
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* Milliseconds as the trace writes seconds: whole, or with the fraction;
 * nothing for -1 (never happened). */
static void secs(FILE *f, int64_t ms)
{
    if (ms < 0)
        return;
    if (ms % 1000 == 0)
        fprintf(f, "%lld", (long long)(ms / 1000));
    else
        fprintf(f, "%lld.%03lld", (long long)(ms / 1000),
                (long long)(ms % 1000));
}

int sim_report_outcomes(FILE *f, const struct sim_trace *t,
                        const struct sim_result *r)
{
    fputs("id,submit,first_start,start,end,attempts,state,nodes\n", f);
    for (size_t i = 0; i < r->noutcomes && i < t->njobs; i++) {
        const struct sim_outcome *oc = &r->outcomes[i];
        fprintf(f, "%llu,", (unsigned long long)t->jobs[i].id);
        secs(f, t->jobs[i].submit_ms);
        fputc(',', f);
        secs(f, oc->first_start_ms);
        fputc(',', f);
        secs(f, oc->start_ms);
        fputc(',', f);
        secs(f, oc->end_ms);
        fprintf(f, ",%u,%s,", oc->attempts,
                sim_outcome_state_name((enum sim_outcome_state)oc->state));
        for (uint32_t k = 0; k < oc->nnodes; k++)
            fprintf(f, "%sn%05u", k ? ";" : "",
                    r->outcome_nodes[oc->nodes_at + k]);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}
