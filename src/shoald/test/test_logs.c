/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: job output on the controller (shoald/logs.c) on its own, over a
 * job table and a temporary state folder: appends at the agent's offset
 * (a resent chunk skipped, a hole refused), reads of one stream and of
 * the attempt's merged stream, tails, attempts kept apart, a bad stream
 * or attempt refused, and a held read answered when output arrives. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/loop/loop.h"
#include "lib/model/job.h"
#include "shoald/jobtab.h"
#include "shoald/logs.h"

#define T0 1767312000000LL

static struct jobtab *jobs;
static struct loop *loop;
static struct logs *logs;
static char dir[64];

static void setup(void)
{
    struct sh_error err = {0};
    snprintf(dir, sizeof(dir), "/tmp/shoal-logs-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    jobs = jobtab_create();
    loop = loop_create(&err);
    cr_assert(jobs && loop);
    logs = logs_create(dir, loop, &jobs, &err);
    cr_assert_not_null(logs, "%s", err.msg);
}

static void teardown(void)
{
    char cmd[128];
    logs_destroy(logs);
    loop_destroy(loop);
    jobtab_destroy(jobs);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(logs, .init = setup, .fini = teardown);

static struct job *running_job(uint64_t id)
{
    struct job_spec spec;
    job_spec_init(&spec);
    spec.user = strdup("ann");
    spec.project = strdup("default");
    struct job *j = job_create(id, &spec, T0);
    cr_assert_not_null(j);
    j->state = JOB_RUNNING;
    j->start_ms = T0;
    cr_assert_eq(jobtab_add(jobs, j), 0);
    return j;
}

static void append(struct job *j, const char *node, const char *stream,
                   uint64_t offset, const char *data, uint64_t want_stored)
{
    struct sh_error err = {0};
    uint64_t stored = 0;
    cr_assert_eq(logs_append(logs, j, node, stream, offset, data, strlen(data),
                             &stored, &err),
                 0, "%s", err.msg);
    cr_assert_eq(stored, want_stored);
}

/* The data of a read (a copy the caller frees), and its next offset. */
static char *read_data(struct job *j, int attempt, const char *stream,
                       uint64_t offset, uint64_t tail, uint64_t *next)
{
    struct sh_error err = {0};
    uint64_t start = 0;
    json_t *r = logs_read(logs, j, attempt, stream, offset, tail, &start, &err);
    cr_assert_not_null(r, "%s", err.msg);
    char *s = strdup(json_string_value(json_object_get(r, "data")));
    if (next)
        *next = (uint64_t)json_integer_value(json_object_get(r, "offset"));
    json_decref(r);
    return s;
}

Test(logs, appends_at_the_agents_offset_and_reads_back)
{
    struct job *j = running_job(1);
    append(j, "n1", "out", 0, "hello ", 6);
    append(j, "n1", "out", 6, "world\n", 12);
    uint64_t next;
    char *s = read_data(j, -1, "out", 0, 0, &next);
    cr_assert_str_eq(s, "hello world\n");
    cr_assert_eq(next, 12);
    free(s);
    s = read_data(j, -1, "out", 6, 0, NULL);
    cr_assert_str_eq(s, "world\n");
    free(s);
}

Test(logs, a_resent_chunk_is_skipped_and_a_hole_refused)
{
    struct job *j = running_job(1);
    append(j, "n1", "out", 0, "abc", 3);
    append(j, "n1", "out", 0, "abcdef", 6); /* the first 3 again */
    struct sh_error err = {0};
    uint64_t stored = 0;
    cr_assert_eq(logs_append(logs, j, "n1", "out", 10, "x", 1, &stored, &err),
                 -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    cr_assert_eq(stored, 6, "the agent learns where to resume");
    char *s = read_data(j, -1, "out", 0, 0, NULL);
    cr_assert_str_eq(s, "abcdef");
    free(s);
}

Test(logs, all_merges_the_nodes_and_streams_in_arrival_order)
{
    struct job *j = running_job(1);
    append(j, "n1", "out", 0, "one\n", 4);
    append(j, "n2", "err", 0, "two\n", 4);
    append(j, "n1", "out", 4, "three\n", 10);
    char *s = read_data(j, -1, "all", 0, 0, NULL);
    cr_assert(strstr(s, "one\n") && strstr(s, "two\n") && strstr(s, "three\n"),
              "%s", s);
    cr_assert(strstr(s, "one\n") < strstr(s, "two\n"));
    cr_assert(strstr(s, "two\n") < strstr(s, "three\n"));
    free(s);
    s = read_data(j, -1, "err", 0, 0, NULL);
    cr_assert_str_eq(s, "two\n", "err holds only what went to stderr");
    free(s);
}

Test(logs, a_tail_reads_the_last_bytes)
{
    struct job *j = running_job(1);
    append(j, "n1", "out", 0, "0123456789", 10);
    char *s = read_data(j, -1, "out", 0, 4, NULL);
    cr_assert_str_eq(s, "6789");
    free(s);
}

Test(logs, bad_streams_and_attempts_are_refused)
{
    struct job *j = running_job(1);
    append(j, "n1", "out", 0, "x", 1);
    struct sh_error err = {0};
    uint64_t start;
    cr_assert_null(logs_read(logs, j, -1, "bogus", 0, 0, &start, &err));
    cr_assert_null(logs_read(logs, j, 5, "out", 0, 0, &start, &err));
    cr_assert_eq(err.code, SH_ENOTFOUND);
    uint64_t stored;
    cr_assert_eq(logs_append(logs, j, "n1", "bogus", 0, "x", 1, &stored, &err),
                 -1);
}

static int woken;
static char woken_data[64];

static void on_news(uint64_t job_id, json_t *answer, void *arg)
{
    (void)arg;
    (void)job_id;
    woken++;
    if (answer)
        snprintf(woken_data, sizeof(woken_data), "%s",
                 json_string_value(json_object_get(answer, "data")));
    json_decref(answer);
}

Test(logs, a_held_read_is_answered_when_output_arrives)
{
    struct job *j = running_job(1);
    struct sh_error err = {0};
    woken = 0;
    cr_assert_eq(
        logs_wait(logs, j, -1, "out", 0, T0 + 60000, on_news, NULL, &err), 0,
        "%s", err.msg);
    cr_assert_eq(woken, 0, "nothing yet");
    append(j, "n1", "out", 0, "news", 4);
    cr_assert_eq(woken, 1);
    cr_assert_str_eq(woken_data, "news");
}
