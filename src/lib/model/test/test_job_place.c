/* SPDX-License-Identifier: Apache-2.0 */
/* Node lists, exclusions and label constraints: the texts accepted and
 * refused, and which nodes qualify. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_json.h"
#include "lib/model/job_place.h"

static struct node_label lab[] = {
    {"a100", ""},
    {"rack", "r1"},
    {"ib", "hdr"},
};

static bool m(const char *expr)
{
    struct sh_error err = {0};
    cr_assert_eq(job_constraint_check(expr, &err), 0, "%s: %s", expr, err.msg);
    return job_constraint_match(expr, lab, 3);
}

static void bad(const char *expr, const char *part)
{
    struct sh_error err = {0};
    cr_assert_lt(job_constraint_check(expr, &err), 0, "%s accepted", expr);
    cr_assert(strstr(err.msg, part), "%s: '%s' lacks '%s'", expr, err.msg,
              part);
}

Test(job_place, constraint_terms_and_or)
{
    cr_assert(m("a100"));
    cr_assert(m("rack"));        /* a key, any value */
    cr_assert(m("rack=r1"));     /* key and value */
    cr_assert_not(m("rack=r2")); /* another value */
    cr_assert_not(m("h100"));
    cr_assert(m("a100&ib=hdr"));
    cr_assert_not(m("a100&h100"));
    cr_assert(m("h100|a100"));
    cr_assert_not(m("h100|rack=r2"));
    /* '&' binds first: (h100 & x) | a100 holds, h100 & (x | a100) not. */
    cr_assert(m("h100&rack|a100"));
    cr_assert_not(m("h100&rack|h200"));
}

Test(job_place, constraint_refusals_name_the_problem)
{
    bad("", "empty");
    bad("(a100|h100)&ib", "'(' is not supported");
    bad("a100*2", "'*' is not supported");
    bad("a100,ib", "',' is not supported");
    bad("[a100|h100]", "'[' is not supported");
    bad("a100&", "ends without a label");
    bad("&a100", "needs a label on each side");
    bad("a100||h100", "needs a label on each side");
    bad("rack=", "ends without a label");
    bad("a=b=c", "'=' needs a label");
}

Test(job_place, nodelists)
{
    struct sh_error err = {0};
    int n = 0;
    cr_assert_eq(job_nodelist_check("nodelist", "a,b-1,c.x", &n, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(n, 3);
    cr_assert(job_nodelist_has("a,b-1,c.x", "b-1"));
    cr_assert_not(job_nodelist_has("a,b-1,c.x", "b"));
    cr_assert_lt(job_nodelist_check("nodelist", "gpu[01-04]", &n, &err), 0);
    cr_assert(strstr(err.msg, "ranges"), "%s", err.msg);
    cr_assert_lt(job_nodelist_check("exclude", "a,,b", &n, &err), 0);
    cr_assert_lt(job_nodelist_check("exclude", "a,b,a", &n, &err), 0);
    cr_assert(strstr(err.msg, "named twice"), "%s", err.msg);
    cr_assert(job_place_allows("a,b", "c", "a100", "a", lab, 3));
    cr_assert_not(job_place_allows("a,b", NULL, NULL, "c", lab, 3));
    cr_assert_not(job_place_allows(NULL, "a", NULL, "a", lab, 3));
    cr_assert_not(job_place_allows(NULL, NULL, "h100", "a", lab, 3));
    cr_assert(job_place_allows(NULL, NULL, NULL, "z", NULL, 0));
}

static int submit(const char *text, struct job_spec *spec, struct sh_error *err)
{
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    cr_assert_not_null(o, "%s", jerr.text);
    job_spec_init(spec);
    int rc = job_spec_from_json(o, spec, err);
    json_decref(o);
    return rc;
}

Test(job_place, submissions_round_trip_and_checks)
{
    struct job_spec s;
    struct sh_error err = {0};
    cr_assert_eq(submit("{\"command\":[\"x\"],\"gpus\":1,\"nodelist\":\"a,b\","
                        "\"exclude\":\"c\",\"constraint\":\"a100&ib\","
                        "\"exclusive\":true}",
                        &s, &err),
                 0, "%s", err.msg);
    cr_assert_eq(s.nodes, 2, "a node list gives the node count");
    json_t *o = job_spec_to_json(&s);
    cr_assert_str_eq(json_string_value(json_object_get(o, "nodelist")), "a,b");
    cr_assert_str_eq(json_string_value(json_object_get(o, "exclude")), "c");
    cr_assert_str_eq(json_string_value(json_object_get(o, "constraint")),
                     "a100&ib");
    cr_assert(json_is_true(json_object_get(o, "exclusive")));
    struct job_spec copy;
    cr_assert_eq(job_spec_copy(&copy, &s), 0);
    cr_assert_str_eq(copy.constraint, "a100&ib");
    job_spec_fini(&copy);
    json_decref(o);
    job_spec_fini(&s);

    cr_assert_lt(submit("{\"command\":[\"x\"],\"nodes\":1,"
                        "\"nodelist\":\"a,b\"}",
                        &s, &err),
                 0);
    cr_assert(strstr(err.msg, "nodelist names 2 nodes but the job asks for 1"),
              "%s", err.msg);
    cr_assert_lt(submit("{\"command\":[\"x\"],\"nodelist\":\"a\","
                        "\"exclude\":\"a\"}",
                        &s, &err),
                 0);
    cr_assert(strstr(err.msg, "both in nodelist and exclude"), "%s", err.msg);
    cr_assert_lt(
        submit("{\"command\":[\"x\"],\"constraint\":\"(a)\"}", &s, &err), 0);
    cr_assert_lt(submit("{\"command\":[\"x\"],\"exclusive\":true}", &s, &err),
                 0);
    cr_assert(strstr(err.msg, "exclusive needs gpus"), "%s", err.msg);
    cr_assert_lt(submit("{\"command\":[\"x\"],\"gpus\":1,\"slice\":\"1g.10gb\","
                        "\"exclusive\":true}",
                        &s, &err),
                 0);
    cr_assert(strstr(err.msg, "slice job cannot"), "%s", err.msg);
}
