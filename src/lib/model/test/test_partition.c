/* SPDX-License-Identifier: Apache-2.0 */
/* Partition and QOS records: what a request may hold, and the constraint
 * a partition adds to a job's. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib/model/partition.h"

Test(partition, a_request_becomes_a_canonical_record)
{
    json_t *req =
        json_pack("{s:s, s:s, s:i, s:i, s:[s,s], s:b}", "name", "gpu", "nodes",
                  "a100|h100", "default_time", 3600, "max_time", 86400,
                  "projects", "vision", "nlp", "default", 1);
    struct sh_error err = {0};
    json_t *rec = partition_from_request(req, 5, &err);
    cr_assert(rec, "%s", err.msg);
    cr_assert_eq(partition_record_check(rec, &err), 0, "%s", err.msg);
    cr_assert_str_eq(partition_selector(rec), "a100|h100");
    json_decref(rec);
    json_decref(req);
    req = json_pack("{s:s, s:s}", "name", "all", "nodes", "all");
    rec = partition_from_request(req, 5, &err);
    cr_assert(rec, "%s", err.msg);
    cr_assert_null(partition_selector(rec));
    json_decref(rec);
    json_decref(req);
}

static void refused(json_t *req, bool qos, const char *part)
{
    struct sh_error err = {0};
    json_t *rec = qos ? qos_from_request(req, 1, &err)
                      : partition_from_request(req, 1, &err);
    cr_assert_null(rec, "accepted");
    cr_assert(strstr(err.msg, part), "'%s' lacks '%s'", err.msg, part);
    json_decref(req);
}

Test(partition, bad_requests_name_the_field)
{
    refused(json_pack("{s:s}", "name", "gpu"), false, "nodes:");
    refused(json_pack("{s:s, s:s}", "name", "gpu", "nodes", "(a)"), false,
            "nodes: ");
    refused(json_pack("{s:s, s:s}", "name", "g u", "nodes", "all"), false,
            "partition name");
    refused(json_pack("{s:s, s:s, s:i, s:i}", "name", "g", "nodes", "all",
                      "default_time", 60, "max_time", 30),
            false, "default_time is longer");
    refused(json_pack("{s:s, s:s, s:[s]}", "name", "g", "nodes", "all",
                      "projects", "a b"),
            false, "projects: entry 1");
    refused(json_pack("{s:s, s:s, s:i}", "name", "g", "nodes", "all", "x", 1),
            false, "unknown field 'x'");
    refused(json_pack("{s:s, s:s}", "name", "q", "priority", "urgent"), true,
            "priority must be");
    refused(json_pack("{s:s, s:s, s:i}", "name", "q", "priority", "high",
                      "max_time", 0),
            true, "max_time must be");
}

Test(partition, a_partition_ands_its_selector_into_the_constraint)
{
    char buf[256];
    cr_assert_eq(partition_and_constraint("a|b&c", "x|y", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "a&x|a&y|b&c&x|b&c&y");
    cr_assert_eq(partition_and_constraint(NULL, "x", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "x");
    cr_assert_eq(partition_and_constraint("a", NULL, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "a");
    cr_assert_eq(partition_and_constraint("aaaa|bbbb", "cccc", buf, 8), -1);
}
