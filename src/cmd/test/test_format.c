/* SPDX-License-Identifier: Apache-2.0 */
/* shoal queue --format: squeue's -o fields, widths and headers. */
#include <criterion/criterion.h>
#include <string.h>

#include "cmd/cmd_format.h"

static char *line(const char *fmt, const json_t *job)
{
    struct strbuf out;
    strbuf_init(&out, 1 << 16);
    if (job)
        queue_format_row(fmt, job, 0, &out);
    else
        queue_format_header(fmt, &out);
    return strbuf_take(&out);
}

Test(format, squeue_fields_widths_and_header)
{
    json_t *j = json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:[{s:s},{s:s}]}",
        "id", 12, "name", "train", "user", "ann", "project", "vision",
        "partition", "gpu", "state", "running", "priority", "normal", "nodes",
        2, "gpus", 8, "time_limit", 3661, "placement", "node", "n1", "node",
        "n2");
    struct sh_error err;
    const char *fmt = "%.6i %6j|%u %a %P %T %t %l %D %R %b %%";
    cr_assert_eq(queue_format_check(fmt, &err), 0, "%s", err.msg);
    char *s = line(fmt, j);
    cr_assert_str_eq(s, "    12 train |ann vision gpu RUNNING R 1:01:01 2 "
                        "n1,n2 2x8 %");
    free(s);
    s = line("%.6i %8j", NULL);
    cr_assert_str_eq(s, " JOBID NAME    ");
    free(s);
    json_object_set_new(j, "state", json_string("pending"));
    json_object_set_new(j, "reason", json_string("resources"));
    json_object_set_new(j, "placement", json_array());
    json_object_set_new(j, "array_id", json_integer(10));
    json_object_set_new(j, "array_task", json_integer(2));
    s = line("%i %t %R %3j", j);
    cr_assert_str_eq(s, "10_2 PD (resources) tra"); /* cut to the width */
    free(s);
    json_decref(j);
}

Test(format, unknown_fields_are_named)
{
    struct sh_error err;
    cr_assert_lt(queue_format_check("%i %Z", &err), 0);
    cr_assert(strstr(err.msg, "'%Z' is not a field"), "%s", err.msg);
    cr_assert_lt(queue_format_check("%.", &err), 0);
    cr_assert_lt(queue_format_check("", &err), 0);
}

Test(format, sinfo_fields_of_a_node)
{
    json_t *n =
        json_pack("{s:s, s:s, s:i, s:I, s:i, s:i, s:[{s:s},{s:s}], "
                  "s:{s:s, s:s}}",
                  "name", "node1", "state", "up", "cpus", 64, "memory",
                  (json_int_t)(512LL << 30), "gpus_busy", 1, "running_jobs", 1,
                  "gpus", "model", "H100-80GB", "model", "H100-80GB", "labels",
                  "a100", "", "rack", "r1");
    struct sh_error err;
    cr_assert_eq(nodes_format_check("%N %t %G %c %m %f %g", &err), 0, "%s",
                 err.msg);
    struct strbuf out;
    strbuf_init(&out, 4096);
    nodes_format_row("%N %t %G %c %m %f %g", n, &out);
    cr_assert_str_eq(strbuf_str(&out),
                     "node1 mix gpu:H100-80GB:2 64 524288 a100,rack=r1 1/2");
    strbuf_reset(&out);
    nodes_format_header("%.6N|%t", &out);
    cr_assert_str_eq(strbuf_str(&out), "NODELI|STATE"); /* cut too */
    strbuf_fini(&out);
    cr_assert_lt(nodes_format_check("%N %i", &err), 0);
    json_decref(n);
}
