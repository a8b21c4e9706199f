/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: fractions of a GPU and sets of GPU models in traces. gpus below 1
 * (0.25, .5) parse exactly, write back as written (--convert round-trips)
 * and replay on the smallest slice of the cluster that holds them (one
 * shared/4 slice for 0.25, a 1g.10gb MIG slice for 0.125, a whole GPU when
 * no slice does); 0, negatives, 1.5 and a fraction over several nodes are
 * refused naming file, line and column. gpu_type "A|B" lets a job run on
 * either model and on no other.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

static void parse_ok(const char *text, struct sim_trace *t)
{
    struct sh_error err = {0};
    cr_assert(sim_trace_parse(text, "t.csv", SIM_FORMAT_AUTO, t, &err) == 0,
              "%s", err.msg);
}

static void parse_fails(const char *text, const char *want)
{
    struct sim_trace t;
    struct sh_error err = {0};
    int rc = sim_trace_parse(text, "t.csv", SIM_FORMAT_AUTO, &t, &err);
    cr_assert(rc < 0, "accepted: %s", text);
    cr_assert(strstr(err.msg, want), "error '%s' lacks '%s'", err.msg, want);
    sim_trace_fini(&t);
}

Test(sim_fractions, fractions_and_sets_parse)
{
    struct sim_trace t;
    parse_ok("id,submit,duration,gpus,nodes,gpu_type\n"
             "1,0,10,0.25,,\n"
             "2,1,10,.5,1,A100-80GB|H100-80GB\n"
             "3,2,10,0.125,,H100-80GB\n"
             "4,3,10,2.0,,\n"
             "5,4,10,0.000001,,\n",
             &t);
    cr_assert_eq(t.njobs, 5);
    cr_assert_eq(t.jobs[0].frac_ppm, 250000);
    cr_assert_eq(t.jobs[0].gpus, 1);
    cr_assert_eq(t.jobs[1].frac_ppm, 500000);
    cr_assert_eq(t.jobs[1].nodes, 1);
    cr_assert_str_eq(t.names.names[t.jobs[1].gpu_type], "A100-80GB|H100-80GB");
    cr_assert_eq(t.jobs[2].frac_ppm, 125000);
    cr_assert_eq(t.jobs[3].frac_ppm, 0);
    cr_assert_eq(t.jobs[3].gpus, 2);
    cr_assert_eq(t.jobs[4].frac_ppm, 1);
    sim_trace_fini(&t);
}

Test(sim_fractions, bad_fractions_and_sets_name_file_line_and_column)
{
    const char *h = "id,submit,duration,gpus,nodes,gpu_type,slice\n";
    char buf[256];
    static const struct {
        const char *row;
        const char *want;
    } bad[] = {
        {"1,0,10,0,,,", "t.csv:2: column 'gpus': must be >= 1"},
        {"1,0,10,0.0,,,", "t.csv:2: column 'gpus': must be >= 1"},
        {"1,0,10,-0.5,,,", "t.csv:2: column 'gpus': '-0.5' is not a GPU"},
        {"1,0,10,1.5,,,",
         "t.csv:2: column 'gpus': '1.5': fractions above 1 are not GPUs"},
        {"1,0,10,0.1234567,,,", "column 'gpus': '0.1234567': a fraction has "
                                "at most 6 decimals"},
        {"1,0,10,0.5,2,,",
         "t.csv:2: column 'gpus': a fraction of a GPU (0.5) runs on 1 node, "
         "not 2"},
        {"1,0,10,0.5,,,1g.10gb", "t.csv:2: column 'gpus': a fraction of a GPU "
                                 "(0.5) and a slice exclude each other"},
        {"1,0,10,0.,,,", "column 'gpus': must be >= 1"},
        {"1,0,10,.,,,", "column 'gpus': '.' is not a GPU count"},
        {"1,0,10,1,,A100-80GB|,", "t.csv:2: column 'gpu_type': 'A100-80GB|' "
                                  "is not a GPU model or models"},
        {"1,0,10,1,,|H100-80GB,", "column 'gpu_type': '|H100-80GB' is not"},
        {"1,0,10,1,,A100 80GB|H100-80GB,",
         "column 'gpu_type': 'A100 80GB' is not a valid name"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(buf, sizeof(buf), "%s%s\n", h, bad[i].row);
        parse_fails(buf, bad[i].want);
    }
}

/* Alibaba's traces give a GPU share as gpu_milli beside gpus. */
Test(sim_fractions, gpu_milli_is_a_share_of_one_gpu)
{
    struct sim_trace t;
    parse_ok("id,submit,duration,gpus,gpu_milli\n"
             "1,0,10,1,250\n"
             "2,1,10,1,1000\n"
             "3,2,10,2,\n",
             &t);
    cr_assert_eq(t.jobs[0].frac_ppm, 250000);
    cr_assert_eq(t.jobs[0].gpus, 1);
    cr_assert_eq(t.jobs[1].frac_ppm, 0, "1000 thousandths: the whole GPU");
    cr_assert_eq(t.jobs[2].frac_ppm, 0);
    cr_assert_eq(t.jobs[2].gpus, 2);
    sim_trace_fini(&t);
    parse_fails("id,submit,duration,gpus,gpu_milli\n1,0,10,2,500\n",
                "t.csv:2: column 'gpu_milli': 500 thousandths is a share of "
                "one GPU: gpus must be 1");
    parse_fails("id,submit,duration,gpus,gpu_milli\n1,0,10,0.5,500\n",
                "gpus must be 1");
    parse_fails("id,submit,duration,gpus,gpu_milli\n1,0,10,1,0\n",
                "is not a share of a GPU in thousandths (1..1000)");
    parse_fails("id,submit,duration,gpus,gpu_milli\n1,0,10,1,1001\n",
                "(1..1000)");
}

Test(sim_fractions, convert_round_trips)
{
    const char *text =
        "id,submit,duration,gpus,nodes,user,project,gpu_type,priority,"
        "time_limit,slice\n"
        "1,0,10,0.25,,default,default,,normal,,\n"
        "2,1,10,0.5,1,default,default,A100-80GB|H100-80GB,normal,,\n"
        "3,2,10,0.125,,default,default,,normal,,\n"
        "4,3,10,0.333333,,default,default,,normal,,\n"
        "5,4,10,0.000001,,default,default,,normal,,\n"
        "6,5,10,8,,default,default,H100-80GB,normal,,\n";
    struct sim_trace t, t2;
    parse_ok(text, &t);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    cr_assert(f);
    cr_assert(sim_trace_write(f, &t) == 0);
    fclose(f);
    cr_assert_str_eq(out, text);
    parse_ok(out, &t2);
    cr_assert_eq(t2.njobs, t.njobs);
    for (size_t i = 0; i < t.njobs; i++) {
        cr_assert_eq(t2.jobs[i].frac_ppm, t.jobs[i].frac_ppm);
        cr_assert_eq(t2.jobs[i].gpus, t.jobs[i].gpus);
    }
    free(out);
    sim_trace_fini(&t);
    sim_trace_fini(&t2);
}

struct fixture {
    struct sim_trace t;
    struct sim_cluster c;
    struct sim_result r;
};

static void replay(struct fixture *f, const char *cluster, const char *trace)
{
    struct sh_error err = {0};
    struct sim_options o;
    sim_options_init(&o);
    parse_ok(trace, &f->t);
    cr_assert(sim_cluster_parse(cluster, &f->c, &err) == 0, "%s", err.msg);
    cr_assert(sim_run(&f->c, &f->t, &o, &f->r, &err) == 0, "%s", err.msg);
}

static void done(struct fixture *f)
{
    sim_result_fini(&f->r);
    sim_cluster_fini(&f->c);
    sim_trace_fini(&f->t);
}

/* n jobs of gpus g (text), 100 s each, all submitted at 0. */
static char *same_jobs(int n, const char *g, const char *type)
{
    static char buf[4096];
    size_t off = (size_t)snprintf(buf, sizeof(buf),
                                  "id,submit,duration,gpus,gpu_type\n");
    for (int i = 1; i <= n; i++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off,
                                "%d,0,100,%s,%s\n", i, g, type);
    return buf;
}

/* How many jobs started at s seconds. */
static int started_at(const struct fixture *f, int64_t s)
{
    int n = 0;
    for (size_t i = 0; i < f->r.noutcomes; i++)
        n += f->r.outcomes[i].first_start_ms == s * 1000;
    return n;
}

Test(sim_fractions, quarters_run_on_shared_4_slices)
{
    struct fixture f;
    /* 2 GPUs in 4 time-slices each: eight quarters at once, the ninth
     * after 100 s; each counts as a quarter of a GPU. */
    replay(&f, "1x2xV100-32GB:shared-4", same_jobs(9, "0.25", ""));
    cr_assert_eq(f.r.jobs, 9);
    cr_assert_eq(f.r.rejected, 0);
    cr_assert_eq(started_at(&f, 0), 8);
    cr_assert_eq(started_at(&f, 100), 1);
    /* 9 x 100 s x 1/4 GPU over 2 GPUs x 200 s. */
    cr_assert_float_eq(f.r.utilization, 900.0 / 4 / 400, 1e-9);
    done(&f);
}

Test(sim_fractions, an_eighth_takes_the_smallest_mig_slice)
{
    struct fixture f;
    /* 1/8 fits a 1g.10gb slice (1/7), the smallest profile that holds it,
     * not the quarter time-slices: seven run on the A100, the eighth
     * waits for one of them. */
    replay(&f, "1x1xA100-80GB:all-1g.10gb+1x1xV100-32GB:shared-4",
           same_jobs(8, "0.125", ""));
    cr_assert_eq(f.r.jobs, 8);
    cr_assert_eq(started_at(&f, 0), 7);
    cr_assert_eq(started_at(&f, 100), 1);
    done(&f);
    /* A quarter is more than 1/7: it takes the quarter time-slices. */
    replay(&f, "1x1xA100-80GB:all-1g.10gb+1x1xV100-32GB:shared-4",
           same_jobs(5, "0.25", ""));
    cr_assert_eq(started_at(&f, 0), 4);
    cr_assert_eq(started_at(&f, 100), 1);
    done(&f);
}

Test(sim_fractions, without_slices_a_fraction_takes_a_whole_gpu)
{
    struct fixture f;
    replay(&f, "1x2xV100-32GB", same_jobs(3, "0.5", ""));
    cr_assert_eq(started_at(&f, 0), 2);
    cr_assert_eq(started_at(&f, 100), 1);
    done(&f);
    /* Nothing on a cluster of only MIG 1/7 slices holds a half: it asks
     * for a whole GPU, and all of them are sliced. */
    replay(&f, "1x1xA100-80GB:all-1g.10gb", same_jobs(1, "0.5", ""));
    cr_assert_eq(f.r.jobs, 0);
    cr_assert_eq(f.r.rejected + f.r.unfinished, 1);
    done(&f);
}

Test(sim_fractions, a_model_set_keeps_jobs_to_its_models)
{
    struct fixture f;
    /* Quarters that may run on L4s or H100s: the cluster's L4 holds four
     * at once, never the A100's slices. */
    replay(&f, "1x1xA100-80GB:shared-4+1x1xL4-24GB:shared-4",
           same_jobs(8, "0.25", "L4-24GB|H100-80GB"));
    cr_assert_eq(f.r.jobs, 8);
    cr_assert_eq(started_at(&f, 0), 4);
    cr_assert_eq(started_at(&f, 100), 4);
    done(&f);
    /* The slice is chosen among the set's models: an eighth limited to
     * L4s takes their quarters, not the A100's smaller 1g.10gb. */
    replay(&f, "1x1xA100-80GB:all-1g.10gb+1x1xL4-24GB:shared-4",
           same_jobs(5, "0.125", "L4-24GB"));
    cr_assert_eq(f.r.jobs, 5);
    cr_assert_eq(started_at(&f, 0), 4);
    cr_assert_eq(started_at(&f, 100), 1);
    done(&f);
    /* Whole GPUs of a set: either model, and nothing waits. */
    replay(&f, "1x4xA100-80GB+1x4xH100-80GB+1x4xL4-24GB",
           same_jobs(2, "4", "A100-80GB|H100-80GB"));
    cr_assert_eq(started_at(&f, 0), 2);
    done(&f);
    replay(&f, "1x4xA100-80GB+1x4xH100-80GB+1x4xL4-24GB",
           same_jobs(3, "4", "A100-80GB|H100-80GB"));
    cr_assert_eq(started_at(&f, 0), 2);
    cr_assert_eq(started_at(&f, 100), 1);
    done(&f);
}
