/* SPDX-License-Identifier: Apache-2.0 */
/* bench-sim: the simulator on the largest trace we have (Microsoft Philly,
 * 82,247 jobs, /work/shared/traces/philly/philly_jobs_pollux.csv) and on a
 * synthetic 100,000-job trace. Prints the time to read the trace, the
 * replay's wall time and events per second, per cluster shape and policy.
 * Figures only; nothing here passes or fails on time.
 *
 *   bench-sim [TRACE [CLUSTER...]]
 *   default clusters: 352x8xV100-32GB (the Philly VCs' 352 nodes, as
 *   sized by the Helios authors) and 64x8xV100-32GB (loaded: queues form).
 *
 * On the default clusters the default policy also runs with all_reasons
 * on ("+reasons"), as the controller does: the same decisions (same JCT),
 * plus the reason walk of every full pass. Not on clusters given on the
 * command line: on an overloaded one that walk costs minutes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lib/util/clock.h"
#include "sim/sim.h"

#define PHILLY "/work/shared/traces/philly/philly_jobs_pollux.csv"

static void die(const char *what, const struct sh_error *err)
{
    fprintf(stderr, "bench-sim: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

static void replay(const char *label, const struct sim_trace *t,
                   const char *spec, enum sched_policy policy, bool all_reasons)
{
    struct sim_cluster c;
    struct sim_result r;
    struct sim_options o;
    struct sh_error err;
    sim_options_init(&o);
    o.sched.policy = policy;
    o.sched.all_reasons = all_reasons;
    if (sim_cluster_parse(spec, &c, &err) < 0)
        die(spec, &err);
    int64_t t0 = clock_mono_us();
    if (sim_run(&c, t, &o, &r, &err) < 0)
        die("run", &err);
    double total = (double)(clock_mono_us() - t0) / 1e6;
    printf("  %-10s %-18s %-16s %8zu events in %7.3f s (replay) / %7.3f s "
           "(with setup): %9.0f events/s; util %.1f%%, JCT avg %.0f s\n",
           label, spec,
           policy == SCHED_POLICY_FIFO ? "fifo"
           : all_reasons               ? "default+reasons"
                                       : "default",
           r.events, r.wall_s, total,
           r.wall_s > 0 ? (double)r.events / r.wall_s : 0.0,
           100 * r.utilization, r.jct_avg_s);
    sim_result_fini(&r);
    sim_cluster_fini(&c);
}

/* A Philly-like synthetic trace: 93% one-GPU jobs, the rest 2-32 GPUs,
 * log-uniform durations, Poisson arrivals, 20 projects. */
static char *synthetic(int n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    uint64_t x = 88172645463325252ULL;
    double t = 0;
    fprintf(f, "id,submit,duration,gpus,project\n");
    for (int i = 1; i <= n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0;
        t += 60.0 * u * 2;
        int r = (int)(x % 100);
        int gpus = r < 93 ? 1 : r < 96 ? 2 : r < 98 ? 4 : r < 99 ? 8 : 32;
        double dur = 60 * (1 << (x >> 40) % 12);
        fprintf(f, "%d,%.0f,%.0f,%d,p%d\n", i, t, dur, gpus,
                (int)((x >> 20) % 20));
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : PHILLY;
    const char *defaults[] = {"352x8xV100-32GB", "64x8xV100-32GB"};
    const char **clusters = argc > 2 ? (const char **)argv + 2 : defaults;
    int nclusters = argc > 2 ? argc - 2 : 2;
    struct sim_trace t;
    struct sh_error err;

    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench-sim: cannot open %s\n", path);
        return 1;
    }
    int64_t t0 = clock_mono_us();
    if (sim_trace_read(f, path, SIM_FORMAT_AUTO, &t, &err) < 0)
        die(path, &err);
    fclose(f);
    printf("bench-sim: %s: %zu jobs read in %.3f s\n", path, t.njobs,
           (double)(clock_mono_us() - t0) / 1e6);
    for (int i = 0; i < nclusters; i++) {
        replay("trace", &t, clusters[i], SCHED_POLICY_DEFAULT, false);
        if (clusters == defaults)
            replay("trace", &t, clusters[i], SCHED_POLICY_DEFAULT, true);
        replay("trace", &t, clusters[i], SCHED_POLICY_FIFO, false);
    }
    sim_trace_fini(&t);

    char *text = synthetic(100000);
    t0 = clock_mono_us();
    if (sim_trace_parse(text, "synthetic", SIM_FORMAT_AUTO, &t, &err) < 0)
        die("synthetic", &err);
    printf("bench-sim: synthetic: %zu jobs parsed in %.3f s\n", t.njobs,
           (double)(clock_mono_us() - t0) / 1e6);
    replay("synthetic", &t, "128x8xH100-80GB", SCHED_POLICY_DEFAULT, false);
    replay("synthetic", &t, "128x8xH100-80GB", SCHED_POLICY_FIFO, false);
    sim_trace_fini(&t);
    free(text);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("  peak RSS %ld KiB\n", ru.ru_maxrss);
    return 0;
}
