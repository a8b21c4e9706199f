/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the submission parser refuses malformed, unknown, mistyped and
 * out-of-range fields with a message naming the field, and what it accepts
 * round-trips through the view and the store record. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job_json.h"
#include "lib/util/clock.h"

static int parse(const char *text, struct job_spec *spec, struct sh_error *err)
{
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    cr_assert_not_null(o, "bad test JSON: %s", jerr.text);
    job_spec_init(spec);
    int rc = job_spec_from_json(o, spec, err);
    json_decref(o);
    return rc;
}

Test(job_json, accepts_a_full_submission)
{
    struct job_spec s;
    struct sh_error err;
    cr_assert_eq(parse("{\"command\":[\"python\",\"train.py\"],\"gpus\":2,"
                       "\"nodes\":2,\"name\":\"t\",\"project\":\"vision\","
                       "\"priority\":\"high\",\"mem\":\"16G\",\"time_limit\":"
                       "\"2h\",\"cpus\":8,\"env\":{\"A\":\"1\"},\"requeue\":"
                       "true,\"volumes\":[\"data:/data\"],\"workdir\":\"/tmp\","
                       "\"gpu_type\":\"H100-80GB\",\"tasks_per_node\":2}",
                       &s, &err),
                 0, "%s", err.msg);
    cr_assert_eq(s.gpus_per_node, 2);
    cr_assert_eq(s.nodes, 2);
    cr_assert_eq(s.mem, 16ULL << 30);
    cr_assert_eq(s.time_limit, 7200);
    cr_assert_eq(s.priority, JOB_PRIO_HIGH);
    cr_assert_str_eq(s.volumes[0].name, "data");
    cr_assert_str_eq(s.volumes[0].path, "/data");
    cr_assert_str_eq(s.env[0].key, "A");
    cr_assert(s.requeue);
    job_spec_fini(&s);
}

Test(job_json, refuses_bad_fields_naming_them)
{
    static const struct {
        const char *json;
        const char *word;
    } cases[] = {
        {"[]", "object"},
        {"{}", "command"},
        {"{\"command\":[]}", "command"},
        {"{\"command\":\"ls\"}", "command"},
        {"{\"command\":[\"\"]}", "command"},
        {"{\"command\":[1]}", "command"},
        {"{\"command\":[\"ls\"],\"gpus\":-1}", "gpus"},
        {"{\"command\":[\"ls\"],\"gpus\":100000}", "gpus"},
        {"{\"command\":[\"ls\"],\"gpus\":\"2\"}", "gpus"},
        {"{\"command\":[\"ls\"],\"gpus\":1.5}", "gpus"},
        {"{\"command\":[\"ls\"],\"nodes\":0}", "nodes"},
        {"{\"command\":[\"ls\"],\"gpu\":1}", "unknown field 'gpu'"},
        {"{\"command\":[\"ls\"],\"priority\":\"urgent\"}", "priority"},
        {"{\"command\":[\"ls\"],\"mem\":\"lots\"}", "mem"},
        {"{\"command\":[\"ls\"],\"mem\":-5}", "mem"},
        {"{\"command\":[\"ls\"],\"time_limit\":\"90\"}", "time_limit"},
        {"{\"command\":[\"ls\"],\"env\":{\"1A\":\"x\"}}", "env"},
        {"{\"command\":[\"ls\"],\"env\":{\"A\":1}}", "env"},
        {"{\"command\":[\"ls\"],\"workdir\":\"rel\"}", "workdir"},
        {"{\"command\":[\"ls\"],\"volumes\":[\"nocolon\"]}", "volume"},
        {"{\"command\":[\"ls\"],\"volumes\":[\"d:/x/../y\"]}", "volume"},
        {"{\"command\":[\"ls\"],\"requeue\":1}", "requeue"},
        {"{\"command\":[\"ls\"],\"project\":\"a b\"}", "project"},
        {"{\"command\":[\"ls\"],\"slice\":\"1g.10gb\",\"gpus\":0}", "slice"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct job_spec s;
        struct sh_error err = {0};
        cr_assert_eq(parse(cases[i].json, &s, &err), -1, "%s", cases[i].json);
        cr_assert(strstr(err.msg, cases[i].word) != NULL,
                  "%s: message '%s' lacks '%s'", cases[i].json, err.msg,
                  cases[i].word);
        cr_assert(err.code == SH_EINVAL || err.code == SH_ETOOLARGE);
    }
}

Test(job_json, refuses_too_long_strings)
{
    char buf[400];
    char name[200];
    memset(name, 'x', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    snprintf(buf, sizeof(buf), "{\"command\":[\"ls\"],\"name\":\"%s\"}", name);
    struct job_spec s;
    struct sh_error err;
    cr_assert_eq(parse(buf, &s, &err), -1);
    cr_assert(strstr(err.msg, "name"), "%s", err.msg);
}

Test(job_json, record_round_trips)
{
    struct job_spec s;
    struct sh_error err;
    cr_assert_eq(parse("{\"command\":[\"sleep\",\"1\"],\"gpus\":1,\"env\":"
                       "{\"K\":\"V\"},\"volumes\":[{\"name\":\"d\",\"path\":"
                       "\"/d\"}]}",
                       &s, &err),
                 0, "%s", err.msg);
    s.user = strdup("alice");
    s.project = strdup("vision");
    struct job *job = job_create(42, &s, 1234);
    /* Without a reason first: nulls must round-trip too. */
    json_t *bare = job_to_record(job);
    struct job *bare_back = job_from_record(bare, &err);
    cr_assert_not_null(bare_back, "%s", err.msg);
    cr_assert_null(bare_back->reason);
    job_destroy(bare_back);
    json_decref(bare);
    job_set_reason(job, "resources: needs 1 GPU");
    job->attained_gpu_ms = 7200000; /* LAS: survives a controller restart */
    /* The image digest its first node resolved: the same after a restart. */
    job->image_digest = strdup("sha256:0123456789abcdef0123456789abcdef"
                               "0123456789abcdef0123456789abcdef");
    json_t *rec = job_to_record(job);
    cr_assert_not_null(rec);
    struct job *back = job_from_record(rec, &err);
    cr_assert_not_null(back, "%s", err.msg);
    cr_assert_eq(back->id, 42);
    cr_assert_eq(back->submit_ms, 1234);
    cr_assert_str_eq(back->spec.user, "alice");
    cr_assert_str_eq(back->spec.argv[1], "1");
    cr_assert_str_eq(back->spec.env[0].value, "V");
    cr_assert_str_eq(back->reason, "resources: needs 1 GPU");
    cr_assert_eq(back->attained_gpu_ms, 7200000);
    cr_assert_str_eq(back->image_digest, job->image_digest);
    /* A stored digest that is not sha256:HEX is not taken back. */
    json_object_set_new(rec, "image_digest", json_string("sha256:../x"));
    struct job *odd = job_from_record(rec, &err);
    cr_assert_not_null(odd, "%s", err.msg);
    cr_assert_null(odd->image_digest);
    job_destroy(odd);
    json_t *view = job_to_json(back);
    cr_assert_str_eq(json_string_value(json_object_get(view, "state")),
                     "pending");
    cr_assert_eq(json_integer_value(json_object_get(view, "id")), 42);
    json_decref(view);
    json_decref(rec);
    job_destroy(job);
    job_destroy(back);
}

/* The listing's writer and the jansson view give the same text. */
static void assert_writer_matches(const char *record, const char *reason,
                                  int64_t est, const char *note)
{
    struct sh_error err;
    json_t *rec = json_loads(record, 0, NULL);
    cr_assert_not_null(rec, "bad test JSON: %s", record);
    struct job *job = job_from_record(rec, &err);
    cr_assert_not_null(job, "%s", err.msg);
    json_t *view = job_to_json(job);
    if (reason)
        json_object_set_new(view, "reason", json_string(reason));
    if (est > 0) {
        char iso[32];
        clock_format_iso(est, iso, sizeof(iso));
        json_object_set_new(view, "estimated_start", json_string(iso));
    }
    if (note)
        json_object_set_new(view, "estimate", json_string(note));
    char *want = json_dumps(view, JSON_COMPACT);
    struct strbuf sb;
    strbuf_init(&sb, 1 << 20);
    strbuf_appends(&sb, "x");
    struct job_view_extra x = {reason, est, note, false};
    cr_assert_eq(job_json_write(&sb, job, &x, clock_wall_ms()), 0);
    cr_assert_str_eq(strbuf_str(&sb) + 1, want);
    strbuf_fini(&sb);
    free(want);
    json_decref(view);
    json_decref(rec);
    job_destroy(job);
}

Test(job_json, listing_writer_gives_the_views_text)
{
    /* Pending, with what a listing adds. */
    assert_writer_matches(
        "{\"id\":7,\"spec\":{\"command\":[\"python\",\"t \\\"q\\\".py\","
        "\"a\\\\b\\n\\u0001\\u00e9\"],\"gpus\":2,\"user\":\"u\","
        "\"project\":\"p\",\"env\":{\"K\":\"V\\t\",\"L\":\"\"},"
        "\"volumes\":[{\"name\":\"d\",\"path\":\"/d\",\"readonly\":true}],"
        "\"hold\":true,\"time_limit\":3600,\"workdir\":\"/"
        "w\",\"output\":\"o_%j.txt\",\"error\":\"e_%j\"},"
        "\"state\":\"pending\",\"submit_ms\":1796189932843,\"start_ms\":0,"
        "\"end_ms\":0,\"exit_code\":-1,\"exit_signal\":0,\"requeues\":2,"
        "\"releasing\":false,\"est_start_ms\":0,\"placement\":[],"
        "\"held\":true,\"array_id\":5,\"array_task\":2,\"array_max\":0}",
        "resources: needs 2 GPUs", 1796189999000, NULL);
    assert_writer_matches(
        "{\"id\":8,\"spec\":{\"command\":[\"true\"],\"gpus\":1,\"user\":\"u\","
        "\"project\":\"p\"},\"state\":\"pending\",\"submit_ms\":1,"
        "\"start_ms\":0,\"end_ms\":0,\"exit_code\":-1,\"exit_signal\":0,"
        "\"requeues\":0,\"releasing\":false,\"est_start_ms\":0,"
        "\"placement\":[],\"reason\":\"held\"}",
        NULL, 0, "no estimate: it is held");
    /* Every placement wish and the container part: the writer must know
     * each spec field job_spec_to_json writes. */
    assert_writer_matches(
        "{\"id\":10,\"spec\":{\"command\":[\"x\"],\"gpus\":1,\"nodes\":2,"
        "\"user\":\"u\",\"project\":\"p\",\"nodelist\":\"a,b\","
        "\"exclude\":\"c\",\"constraint\":\"a100&ib\",\"exclusive\":true,"
        "\"begin\":\"2026-12-02T10:00:00Z\",\"requeue\":true,"
        "\"checkpointable\":true,\"image\":\"oci-archive:/srv/i.tar\","
        "\"container_mounts\":[\"/data:/d:ro\",\"/x:/y\"],"
        "\"container_workdir\":\"/"
        "w\",\"container_env\":{"
        "\"A\":\"1\","
        "\"B\":\"\\\"\"}},\"state\":\"pending\",\"submit_ms\":1,"
        "\"start_ms\":0,\"end_ms\":0,\"exit_code\":-1,\"exit_signal\":0,"
        "\"requeues\":0,\"releasing\":false,\"est_start_ms\":0,"
        "\"placement\":[]}",
        "begin: eligible at 2026-12-02T10:00:00Z", 0, NULL);
    /* Ended on two nodes, with usage figures. */
    assert_writer_matches(
        "{\"id\":9,\"spec\":{\"command\":[\"sh\",\"-c\",\"x\"],\"gpus\":1,"
        "\"nodes\":2,\"user\":\"u\",\"project\":\"p\",\"name\":\"n\","
        "\"gpu_type\":\"H100-80GB\",\"mem\":1073741824,\"cpus\":4},"
        "\"state\":\"failed\",\"submit_ms\":1000,\"start_ms\":2000,"
        "\"end_ms\":123457,\"exit_code\":3,\"exit_signal\":9,\"requeues\":0,"
        "\"releasing\":false,\"est_start_ms\":0,\"master_port\":29500,"
        "\"image_digest\":\"sha256:0123456789abcdef0123456789abcdef"
        "0123456789abcdef0123456789abcdef\","
        "\"gpu_model\":\"H100-80GB\",\"util_sum\":123.456,\"util_ms\":7000,"
        "\"cpu_ns\":1234567891,\"mem_peak\":99,\"placement\":[{\"node\":"
        "\"n1\",\"gpus\":[\"GPU-a\"],\"share\":1,\"done\":true,"
        "\"exit_code\":3},{\"node\":\"n2\",\"gpus\":[\"GPU-b\"],"
        "\"share\":0.25,\"done\":false,\"exit_signal\":9}]}",
        NULL, 0, NULL);
    /* Requeued twice: its earlier attempts, then the last one (ended:
     * a running job's GPU seconds change between the two writers). */
    assert_writer_matches(
        "{\"id\":11,\"spec\":{\"command\":[\"x\"],\"gpus\":1,\"user\":\"u\","
        "\"project\":\"p\",\"requeue\":true},\"state\":\"completed\","
        "\"submit_ms\":1000,\"start_ms\":9000,\"end_ms\":12000,\"exit_code\":0,"
        "\"exit_signal\":0,\"requeues\":2,\"releasing\":false,"
        "\"est_start_ms\":0,\"queued_ms\":8000,\"placement\":[{\"node\":"
        "\"n3\",\"gpus\":[\"GPU-c\"],\"share\":1,\"done\":true}],"
        "\"attempts\":[{\"attempt\":0,\"state\":\"preempted\","
        "\"start_ms\":2000,\"end_ms\":3000,\"exit_code\":-1,"
        "\"exit_signal\":0,\"nodes\":\"n1,n2\",\"reason\":\"preempted by "
        "job 4\"},{\"attempt\":1,\"state\":\"node_fail\",\"start_ms\":5000,"
        "\"end_ms\":6000,\"exit_code\":-1,\"exit_signal\":0}]}",
        NULL, 0, NULL);
}

/* Each requeue keeps the attempt that ended, its own times and nodes; the
 * record keeps the last JOB_ATTEMPTS_KEPT of them across a restart. */
Test(job_json, attempts_are_kept_bounded_and_stored)
{
    struct job_spec s;
    struct sh_error err;
    cr_assert_eq(
        parse("{\"command\":[\"x\"],\"gpus\":1,\"requeue\":true}", &s, &err), 0,
        "%s", err.msg);
    s.user = strdup("u");
    s.project = strdup("p");
    struct job *job = job_create(5, &s, 1000);
    int64_t t = 1000;
    int runs = JOB_ATTEMPTS_KEPT + 5;
    for (int i = 0; i < runs; i++) {
        struct job_alloc *al = calloc(1, sizeof(*al));
        al->node = strdup(i % 2 ? "n2" : "n1");
        al->gpus = calloc(1, sizeof(char *));
        al->exit_code = -1;
        cr_assert_eq(job_transition(job, JOB_RUNNING, t += 10, &err), 0, "%s",
                     err.msg);
        job_set_alloc(job, al, 1);
        cr_assert_eq(job_transition(job, JOB_PREEMPTED, t += 10, &err), 0, "%s",
                     err.msg);
        cr_assert_eq(job_transition(job, JOB_PENDING, t += 10, &err), 0, "%s",
                     err.msg);
    }
    cr_assert_eq(job->npast, JOB_ATTEMPTS_KEPT);
    cr_assert_eq(job->past[0].attempt, runs - JOB_ATTEMPTS_KEPT);
    cr_assert_eq(job->past[JOB_ATTEMPTS_KEPT - 1].attempt, runs - 1);
    json_t *rec = job_to_record(job);
    struct job *back = job_from_record(rec, &err);
    cr_assert_not_null(back, "%s", err.msg);
    json_t *view = job_to_json(back);
    json_t *atts = json_object_get(view, "attempts");
    /* The kept ones and the current (pending, not started) attempt. */
    cr_assert_eq(json_array_size(atts), JOB_ATTEMPTS_KEPT + 1);
    int64_t last_end = 0;
    for (size_t i = 0; i < JOB_ATTEMPTS_KEPT; i++) {
        json_t *a = json_array_get(atts, i);
        int64_t st = json_integer_value(json_object_get(a, "start_ms"));
        int64_t en = json_integer_value(json_object_get(a, "end_ms"));
        cr_assert_gt(st, last_end);
        cr_assert_gt(en, st);
        last_end = en;
        cr_assert_str_eq(json_string_value(json_object_get(a, "state")),
                         "preempted");
        cr_assert_eq(json_array_size(json_object_get(a, "nodes")), 1);
    }
    json_t *cur = json_array_get(atts, JOB_ATTEMPTS_KEPT);
    cr_assert_eq(json_integer_value(json_object_get(cur, "attempt")), runs);
    cr_assert_str_eq(json_string_value(json_object_get(cur, "state")),
                     "pending");
    cr_assert(json_is_null(json_object_get(cur, "start_time")));
    json_decref(view);
    json_decref(rec);
    job_destroy(job);
    job_destroy(back);
}

Test(job_json, begin_is_an_absolute_utc_time)
{
    struct job_spec s;
    struct sh_error err = {0};
    json_t *o = json_pack("{s:[s], s:s}", "command", "x", "begin",
                          "2026-12-02T10:00:00Z");
    job_spec_init(&s);
    cr_assert_eq(job_spec_from_json(o, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(s.begin_ms, INT64_C(1796205600000));
    json_t *back = job_spec_to_json(&s);
    cr_assert_str_eq(json_string_value(json_object_get(back, "begin")),
                     "2026-12-02T10:00:00Z");
    json_decref(back);
    job_spec_fini(&s);
    json_decref(o);
    o = json_pack("{s:[s], s:s}", "command", "x", "begin", "now+1h");
    job_spec_init(&s);
    cr_assert_lt(job_spec_from_json(o, &s, &err), 0);
    cr_assert(strstr(err.msg, "begin must be a UTC time"), "%s", err.msg);
    json_decref(o);
}

Test(job_json, output_files_with_an_image_are_refused)
{
    /* The shim would exec crun before opening them: refused, not ignored. */
    struct job_spec s;
    struct sh_error err = {0};
    cr_assert_lt(parse("{\"command\":[\"x\"],\"image\":\"oci:/srv/img:t\","
                       "\"output\":\"out_%j.txt\"}",
                       &s, &err),
                 0);
    cr_assert(strstr(err.msg, "not supported with an image"), "%s", err.msg);
    cr_assert_lt(parse("{\"command\":[\"x\"],\"image\":\"oci:/srv/img:t\","
                       "\"error\":\"err_%j.txt\"}",
                       &s, &err),
                 0);
}

/* --gpus-total: a total with no shape; the engine picks nodes x GPUs. */
Test(job_json, gpus_total_has_no_shape_and_round_trips)
{
    struct job_spec s;
    struct sh_error err;
    cr_assert_eq(parse("{\"command\":[\"x\"],\"gpus_total\":16,"
                       "\"gpu_type\":\"H100-80GB\",\"exclusive\":true}",
                       &s, &err),
                 0, "%s", err.msg);
    cr_assert_eq(s.gpus_total, 16);
    cr_assert_eq(s.nodes, 0);
    cr_assert_eq(s.gpus_per_node, 0);
    cr_assert_eq(job_spec_total_gpus(&s), 16);
    cr_assert(job_spec_uses_gpus(&s));
    s.user = strdup("u");
    s.project = strdup("p");
    struct job *job = job_create(3, &s, 1);
    json_t *rec = job_to_record(job);
    struct job *back = job_from_record(rec, &err);
    cr_assert_not_null(back, "%s", err.msg);
    cr_assert_eq(back->spec.gpus_total, 16);
    cr_assert_eq(back->spec.nodes, 0);
    json_decref(rec);
    job_destroy(job);
    job_destroy(back);
    /* A job without it says nothing of it. */
    cr_assert_eq(parse("{\"command\":[\"x\"],\"gpus\":2}", &s, &err), 0);
    json_t *v = job_spec_to_json(&s);
    cr_assert_null(json_object_get(v, "gpus_total"));
    json_decref(v);
    job_spec_fini(&s);
}

Test(job_json, gpus_total_refuses_a_fixed_shape)
{
    static const struct {
        const char *json;
        const char *words;
    } cases[] = {
        {"{\"command\":[\"x\"],\"gpus_total\":16,\"nodes\":2}",
         "give it without nodes and gpus"},
        {"{\"command\":[\"x\"],\"gpus_total\":16,\"gpus\":8}",
         "give it without nodes and gpus"},
        {"{\"command\":[\"x\"],\"gpus_total\":2,\"slice\":\"1g.10gb\"}",
         "not with slice"},
        {"{\"command\":[\"x\"],\"gpus_total\":2,\"nodelist\":\"a,b\"}",
         "not with nodelist"},
        {"{\"command\":[\"x\"],\"gpus_total\":-1}", "gpus_total"},
        {"{\"command\":[\"x\"],\"gpus_total\":99999999}", "gpus_total"},
        {"{\"command\":[\"x\"],\"nodes\":0}", "nodes must be 1.."},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct job_spec s;
        struct sh_error err = {0};
        cr_assert_eq(parse(cases[i].json, &s, &err), -1, "%s", cases[i].json);
        cr_assert_not_null(strstr(err.msg, cases[i].words), "%s: %s",
                           cases[i].json, err.msg);
    }
}

/* An ended job: a running one's GPU-seconds grow with the clock, which the
 * two writers read at different moments. */
Test(job_json, listing_writer_knows_gpus_total)
{
    assert_writer_matches(
        "{\"id\":11,\"spec\":{\"command\":[\"x\"],\"gpus_total\":12,"
        "\"nodes\":0,\"gpus\":0,\"user\":\"u\",\"project\":\"p\"},"
        "\"state\":\"completed\",\"submit_ms\":1,\"start_ms\":2,"
        "\"end_ms\":5002,\"exit_code\":0,\"exit_signal\":0,\"requeues\":0,"
        "\"releasing\":false,\"est_start_ms\":0,\"placement\":[{\"node\":"
        "\"n1\",\"gpus\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"],\"share\":6},"
        "{\"node\":\"n2\",\"gpus\":[\"g\",\"h\",\"i\",\"j\",\"k\",\"l\"],"
        "\"share\":6}]}",
        NULL, 0, NULL);
}
