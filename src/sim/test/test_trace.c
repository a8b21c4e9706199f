/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: reading traces and cluster specs: the CSV contract (columns in
 * any order, optional columns, slices), every parse error naming its line
 * and column, bounded lines, the Philly/Tiresias/Pollux formats, cluster
 * terms, groups, presets and files.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim.h"

static void parse_ok(const char *text, struct sim_trace *t)
{
    struct sh_error err = {0};
    int rc = sim_trace_parse(text, "t.csv", SIM_FORMAT_AUTO, t, &err);
    cr_assert(rc == 0, "%s", err.msg);
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

static const char *name(const struct sim_trace *t, int32_t i)
{
    return i >= 0 ? t->names.names[i] : "-";
}

Test(sim_trace, columns_in_any_order_with_optional_ones)
{
    struct sim_trace t;
    parse_ok("gpus,duration,project,id,submit,priority,time_limit,nodes,"
             "user,gpu_type,slice\n"
             "16,600,nlp,7,10,high,900,2,bob,H100-80GB,\n"
             "1,90.5,vision,3,0.25,,,,,,1g.10gb\n",
             &t);
    cr_assert_eq(t.njobs, 2);
    /* Sorted by submit: job 3 first. */
    const struct sim_job *a = &t.jobs[0], *b = &t.jobs[1];
    cr_assert_eq(a->id, 3);
    cr_assert_eq(a->submit_ms, 250);
    cr_assert_eq(a->duration_ms, 90500);
    cr_assert_str_eq(name(&t, a->slice), "1g.10gb");
    cr_assert_eq(a->gpus, 1);
    cr_assert_str_eq(name(&t, (int32_t)a->project), "vision");
    cr_assert_str_eq(name(&t, (int32_t)a->user), "vision");
    cr_assert_eq(b->id, 7);
    cr_assert_eq(b->submit_ms, 10000);
    cr_assert_eq(b->gpus, 16);
    cr_assert_eq(b->nodes, 2);
    cr_assert_eq(b->limit_ms, 900000);
    cr_assert_eq(b->prio, JOB_PRIO_HIGH);
    cr_assert_str_eq(name(&t, (int32_t)b->user), "bob");
    cr_assert_str_eq(name(&t, b->gpu_type), "H100-80GB");
    cr_assert_eq(t.format, SIM_FORMAT_SHOAL);
    sim_trace_fini(&t);
}

Test(sim_trace, unknown_column_is_named)
{
    parse_fails("id,submit,duration,gpus,colour\n1,0,1,1,red\n",
                "t.csv:1: unknown column 'colour'");
}

Test(sim_trace, missing_and_repeated_columns)
{
    parse_fails("id,submit,gpus\n1,0,1\n", "missing column 'duration'");
    parse_fails("id,submit,duration,gpus,gpus\n1,0,1,1,1\n",
                "column 'gpus' appears twice");
}

Test(sim_trace, bad_values_name_line_and_column)
{
    const char *h = "id,submit,duration,gpus,priority,nodes\n";
    char buf[256];
    snprintf(buf, sizeof(buf), "%s1,0,10,1,,\n2,5,ten,1,,\n", h);
    parse_fails(buf, "t.csv:3: column 'duration': 'ten' is not a number of "
                     "seconds");
    snprintf(buf, sizeof(buf), "%s1,-3,10,1,,\n", h);
    parse_fails(buf, "t.csv:2: column 'submit'");
    snprintf(buf, sizeof(buf), "%s1,0,10,1,urgent,\n", h);
    parse_fails(buf, "column 'priority': 'urgent' is not high, normal or low");
    snprintf(buf, sizeof(buf), "%s1,0,10,12,,5\n", h);
    parse_fails(buf, "12 GPUs do not split evenly over 5 nodes");
    snprintf(buf, sizeof(buf), "%s1,0,10,0,,\n", h);
    parse_fails(buf, "column 'gpus': must be >= 1");
    snprintf(buf, sizeof(buf), "%s1,0,10,1,,\n1,1,10,1,,\n", h);
    parse_fails(buf, "job id 1 appears more than once");
    snprintf(buf, sizeof(buf), "%s1,0,10\n", h);
    parse_fails(buf, "t.csv:2: 3 fields, the header has 6");
}

Test(sim_trace, long_lines_are_refused)
{
    static char buf[SIM_LINE_MAX * 2];
    int n = snprintf(buf, sizeof(buf),
                     "id,submit,duration,gpus,user\n"
                     "1,0,1,1,");
    memset(buf + n, 'a', SIM_LINE_MAX + 10);
    buf[n + SIM_LINE_MAX + 10] = '\0';
    parse_fails(buf, "t.csv:2: line longer than 4096 bytes");
}

Test(sim_trace, empty_trace_has_no_header)
{
    parse_fails("", "empty trace");
    parse_fails("\n\n", "empty trace");
}

Test(sim_trace, philly_rows_are_relative_to_the_earliest)
{
    struct sim_trace t;
    parse_ok("timestamp,duration,num_gpus,gpu_time,cluster\n"
             "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
             "2017-10-09 06:13:03,2951.0,4,11804.0,6214e9\n"
             "2017-10-10 06:13:03,1.0,1,1.0,6214e9\n",
             &t);
    cr_assert_eq(t.format, SIM_FORMAT_PHILLY);
    cr_assert_eq(t.njobs, 3);
    cr_assert_eq(t.jobs[0].submit_ms, 0);
    cr_assert_eq(t.jobs[0].gpus, 4);
    cr_assert_eq(t.jobs[0].id, 2);
    cr_assert_str_eq(name(&t, (int32_t)t.jobs[0].project), "6214e9");
    cr_assert_eq(t.jobs[1].submit_ms, (48 * 60 + 52) * 1000);
    cr_assert_eq(t.jobs[1].duration_ms, 66000);
    cr_assert_eq(t.jobs[2].submit_ms, 86400 * 1000);
    sim_trace_fini(&t);
}

Test(sim_trace, philly_bad_timestamp)
{
    parse_fails("timestamp,duration,num_gpus,gpu_time,cluster\n"
                "2017-13-09 07:01:55,66.0,1,66.0,a\n",
                "t.csv:2: column 'timestamp'");
}

Test(sim_trace, tiresias_and_pollux_files)
{
    struct sim_trace t;
    struct sh_error err = {0};
    char path[512];
    snprintf(path, sizeof(path), "%s/tiresias_60_job.csv", TRACES_DIR);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    cr_assert(sim_trace_read(f, path, SIM_FORMAT_AUTO, &t, &err) == 0, "%s",
              err.msg);
    fclose(f);
    cr_assert_eq(t.format, SIM_FORMAT_TIRESIAS);
    cr_assert_eq(t.njobs, 60);
    cr_assert_eq(t.jobs[1].id, 1);
    cr_assert_eq(t.jobs[1].gpus, 8);
    cr_assert_eq(t.jobs[1].submit_ms, 30000);
    cr_assert_eq(t.jobs[1].duration_ms, 147000);
    sim_trace_fini(&t);

    snprintf(path, sizeof(path), "%s/pollux_workload-6.csv", TRACES_DIR);
    f = fopen(path, "r");
    cr_assert(f);
    cr_assert(sim_trace_read(f, path, SIM_FORMAT_POLLUX, &t, &err) == 0, "%s",
              err.msg);
    fclose(f);
    cr_assert_eq(t.njobs, 160);
    /* cifar10 is a 0.25 GPU-hour job: 6 replicas run 150 s. */
    cr_assert_str_eq(name(&t, (int32_t)t.jobs[0].project), "cifar10");
    cr_assert_eq(t.jobs[0].gpus, 6);
    cr_assert_eq(t.jobs[0].duration_ms, 150000);
    sim_trace_fini(&t);
}

Test(sim_trace, a_format_forced_on_the_wrong_header)
{
    struct sim_trace t;
    struct sh_error err = {0};
    int rc = sim_trace_parse("id,submit,duration,gpus\n1,0,1,1\n", "x",
                             SIM_FORMAT_PHILLY, &t, &err);
    cr_assert(rc < 0);
    cr_assert(strstr(err.msg, "unknown column 'id' (philly traces have: "
                              "timestamp, duration"),
              "%s", err.msg);
    sim_trace_fini(&t);
}

Test(sim_trace, written_traces_read_back)
{
    struct sim_trace t, u;
    char *buf = NULL;
    size_t len = 0;
    parse_ok("id,submit,duration,gpus,nodes,user,project,gpu_type,priority,"
             "time_limit,slice\n"
             "1,0,3600,8,1,alice,vision,H100-80GB,normal,7200,\n"
             "4,30.5,90,1,,dave,speech,,low,120,1g.10gb\n",
             &t);
    FILE *f = open_memstream(&buf, &len);
    cr_assert(sim_trace_write(f, &t) == 0);
    fclose(f);
    parse_ok(buf, &u);
    cr_assert_eq(u.njobs, 2);
    cr_assert_eq(u.jobs[1].submit_ms, 30500);
    cr_assert_eq(u.jobs[1].prio, JOB_PRIO_LOW);
    cr_assert_str_eq(name(&u, u.jobs[1].slice), "1g.10gb");
    cr_assert_eq(u.jobs[0].limit_ms, 7200000);
    free(buf);
    sim_trace_fini(&t);
    sim_trace_fini(&u);
}

Test(sim_cluster, terms_groups_and_presets)
{
    struct sim_cluster c;
    struct sh_error err = {0};
    int rc = sim_cluster_parse("16x8xH100-80GB@4+2x8xH100-80GB:all-1g.10gb", &c,
                               &err);
    cr_assert(rc == 0, "%s", err.msg);
    cr_assert_eq(c.npools, 2);
    cr_assert_eq(c.nodes, 18);
    cr_assert_eq(c.gpus, 144);
    cr_assert_eq(c.pools[0].group_size, 4);
    cr_assert(c.pools[0].mem_bytes > (79ULL << 30));
    cr_assert_eq(c.pools[1].nslices, 7);
    cr_assert_str_eq(c.pools[1].slices[0].profile, "1g.10gb");
    cr_assert_eq(sim_cluster_units(&c, "n00016", 0, 3), 120);
    cr_assert_eq(sim_cluster_units(&c, "n00001", 5, -1), 840);
    sim_cluster_fini(&c);
}

Test(sim_cluster, bad_specs_say_why)
{
    struct sim_cluster c;
    struct sh_error err = {0};
    cr_assert(sim_cluster_parse("16x8", &c, &err) < 0);
    cr_assert(strstr(err.msg, "NODESxGPUSxMODEL"), "%s", err.msg);
    sim_cluster_fini(&c);
    cr_assert(sim_cluster_parse("4x128xH100-80GB", &c, &err) < 0);
    sim_cluster_fini(&c);
    cr_assert(sim_cluster_parse("4x8xH100-80GB@0", &c, &err) < 0);
    cr_assert(strstr(err.msg, "@GROUP"), "%s", err.msg);
    sim_cluster_fini(&c);
    cr_assert(sim_cluster_parse("4x8xH100-80GB:all-9g.99gb", &c, &err) < 0);
    cr_assert(strstr(err.msg, "all-9g.99gb"), "%s", err.msg);
    sim_cluster_fini(&c);
}

Test(sim_cluster, a_file_of_terms)
{
    struct sim_cluster c;
    struct sh_error err = {0};
    char path[512];
    snprintf(path, sizeof(path), "%s/cluster.txt", SIM_TEST_DATA);
    cr_assert(sim_cluster_parse(path, &c, &err) == 0, "%s", err.msg);
    cr_assert_eq(c.npools, 2);
    cr_assert_eq(c.nodes, 10);
    cr_assert_eq(c.pools[0].group_size, 4);
    cr_assert_eq(c.pools[1].nslices, 7);
    sim_cluster_fini(&c);
}

Test(sim_trace, a_header_alone_is_an_empty_trace)
{
    struct sim_trace t;
    parse_ok("id,submit,duration,gpus\n", &t);
    cr_assert_eq(t.njobs, 0);
    sim_trace_fini(&t);
}
