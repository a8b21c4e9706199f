/* SPDX-License-Identifier: Apache-2.0 */
/* Volume records and where a job may mount them. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_json.h"
#include "lib/model/volume.h"

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    cr_assert_not_null(v, "bad test JSON: %s", jerr.text);
    return v;
}

Test(volume, host_request_becomes_a_record)
{
    json_t *body = parse("{\"name\":\"data\",\"kind\":\"host\",\"project\":"
                         "\"vision\",\"readonly\":true,\"host\":{\"path\":"
                         "\"/srv/data\"}}");
    struct sh_error err;
    json_t *rec = volume_from_request(body, "alice", 1234, &err);
    cr_assert_not_null(rec, "%s", err.msg);
    cr_assert_str_eq(volume_name(rec), "data");
    cr_assert_str_eq(volume_project(rec), "vision");
    cr_assert(volume_readonly(rec));
    cr_assert_eq(volume_kind(rec), VOLUME_HOST);
    cr_assert_str_eq(json_string_value(json_object_get(rec, "created_by")),
                     "alice");
    cr_assert_eq(volume_record_check(rec, &err), 0, "%s", err.msg);
    json_decref(rec);
    json_decref(body);
}

Test(volume, s3_request_becomes_a_record)
{
    json_t *body = parse("{\"name\":\"ds\",\"kind\":\"s3\",\"readonly\":"
                         "true,\"s3\":{\"endpoint\":\"https://s3.example.com:"
                         "9000\",\"bucket\":\"data.sets\",\"prefix\":"
                         "\"imagenet/train\",\"region\":\"eu-west-1\","
                         "\"secret\":\"cred\",\"cache\":true}}");
    struct sh_error err;
    json_t *rec = volume_from_request(body, "alice", 1, &err);
    cr_assert_not_null(rec, "%s", err.msg);
    cr_assert_eq(volume_kind(rec), VOLUME_S3);
    cr_assert_str_eq(volume_secret(rec), "cred");
    cr_assert(
        json_equal(json_object_get(rec, "s3"), json_object_get(body, "s3")));
    cr_assert_eq(volume_record_check(rec, &err), 0, "%s", err.msg);
    json_decref(rec);
    json_decref(body);
}

Test(volume, cluster_wide_when_no_project)
{
    json_t *body = parse("{\"name\":\"d\",\"kind\":\"host\",\"host\":{"
                         "\"path\":\"/srv\"}}");
    json_t *rec = volume_from_request(body, "root", 1, NULL);
    cr_assert_not_null(rec);
    cr_assert_null(volume_project(rec));
    cr_assert(!volume_readonly(rec));
    json_decref(rec);
    json_decref(body);
}

Test(volume, bad_requests_are_refused_with_the_reason)
{
    static const struct {
        const char *body;
        const char *says;
    } cases[] = {
        {"[]", "JSON object"},
        {"{\"kind\":\"host\",\"host\":{\"path\":\"/x\"}}", "volume name"},
        {"{\"name\":\"a b\",\"kind\":\"host\",\"host\":{\"path\":\"/x\"}}",
         "volume name"},
        {"{\"name\":\"d\",\"host\":{\"path\":\"/x\"}}", "needs a kind"},
        {"{\"name\":\"d\",\"kind\":\"ftp\"}", "unknown; use host"},
        {"{\"name\":\"d\",\"kind\":\"csi\"}", "a csi volume needs"},
        {"{\"name\":\"d\",\"kind\":\"csi\",\"csi\":{\"socket\":\"rel.sock\","
         "\"volume_id\":\"v\"}}",
         "csi socket"},
        {"{\"name\":\"d\",\"kind\":\"csi\",\"csi\":{\"socket\":\"/s\"}}",
         "csi volume_id"},
        {"{\"name\":\"d\",\"kind\":\"csi\",\"csi\":{\"socket\":\"/s\","
         "\"volume_id\":\"v\",\"controller\":{\"socket\":\"/c\"}}}",
         "gets its volume_id from the plugin"},
        {"{\"name\":\"d\",\"kind\":\"csi\",\"csi\":{\"socket\":\"/s\","
         "\"controller\":{\"socket\":\"/c\",\"capacity\":-1}}}",
         "capacity must be"},
        {"{\"name\":\"d\",\"kind\":\"csi\",\"csi\":{\"socket\":\"/s\","
         "\"volume_id\":\"v\",\"attributes\":{\"k\":1}}}",
         "csi attribute 'k'"},
        {"{\"name\":\"d\",\"kind\":\"csi\",\"csi\":{\"socket\":\"/s\","
         "\"volume_id\":\"v\",\"mount_flags\":\"ro\"}}",
         "csi mount_flags"},
        {"{\"name\":\"d\",\"kind\":\"nfs\"}", "an nfs volume needs"},
        {"{\"name\":\"d\",\"kind\":\"nfs\",\"nfs\":{\"server\":\"-x\","
         "\"export\":\"/e\"}}",
         "nfs server"},
        {"{\"name\":\"d\",\"kind\":\"nfs\",\"nfs\":{\"server\":\"h\","
         "\"export\":\"e\"}}",
         "nfs export"},
        {"{\"name\":\"d\",\"kind\":\"nfs\",\"nfs\":{\"server\":\"h\","
         "\"export\":\"/e\",\"options\":\"vers=4,suid\"}}",
         "nfs options"},
        {"{\"name\":\"d\",\"kind\":\"nfs\",\"nfs\":{\"server\":\"h\","
         "\"export\":\"/e\",\"options\":\"port=1 2\"}}",
         "nfs options"},
        {"{\"name\":\"d\",\"kind\":\"nfs\",\"nfs\":{\"server\":\"h\","
         "\"export\":\"/e\"},\"s3\":{}}",
         "has no \"s3\""},
        {"{\"name\":\"d\",\"kind\":\"s3\"}", "an s3 volume needs"},
        {"{\"name\":\"d\",\"kind\":\"s3\",\"s3\":{\"endpoint\":\"ftp://x\","
         "\"bucket\":\"abc\",\"secret\":\"s\"}}",
         "s3 endpoint"},
        {"{\"name\":\"d\",\"kind\":\"s3\",\"s3\":{\"endpoint\":\"http://u@x\","
         "\"bucket\":\"abc\",\"secret\":\"s\"}}",
         "s3 endpoint"},
        {"{\"name\":\"d\",\"kind\":\"s3\",\"s3\":{\"endpoint\":\"http://x\","
         "\"bucket\":\"AB\",\"secret\":\"s\"}}",
         "s3 bucket"},
        {"{\"name\":\"d\",\"kind\":\"s3\",\"s3\":{\"endpoint\":\"http://x\","
         "\"bucket\":\"abc\"}}",
         "names the secret"},
        {"{\"name\":\"d\",\"kind\":\"s3\",\"s3\":{\"endpoint\":\"http://x\","
         "\"bucket\":\"abc\",\"secret\":\"s\",\"prefix\":\"/a\"}}",
         "s3 prefix"},
        {"{\"name\":\"d\",\"kind\":\"s3\",\"s3\":{\"endpoint\":\"http://x\","
         "\"bucket\":\"abc\",\"secret\":\"s\",\"prefix\":\"a/../b\"}}",
         "s3 prefix"},
        {"{\"name\":\"d\",\"kind\":\"s3\",\"s3\":{\"endpoint\":\"http://x\","
         "\"bucket\":\"abc\",\"secret\":\"s\",\"cache\":1}}",
         "s3 cache"},
        {"{\"name\":\"d\",\"kind\":\"s3\",\"host\":{\"path\":\"/x\"}}",
         "has no \"host\""},
        {"{\"name\":\"d\",\"kind\":\"host\"}", "host volume needs"},
        {"{\"name\":\"d\",\"kind\":\"host\",\"host\":{\"path\":\"rel\"}}",
         "host path"},
        {"{\"name\":\"d\",\"kind\":\"host\",\"host\":{\"path\":\"/a/../b\"}}",
         "host path"},
        {"{\"name\":\"d\",\"kind\":\"host\",\"host\":{\"path\":\"/\"}}",
         "host path"},
        {"{\"name\":\"d\",\"kind\":\"host\",\"host\":{\"path\":\"/x\","
         "\"z\":1}}",
         "unknown field 'z'"},
        {"{\"name\":\"d\",\"kind\":\"host\",\"host\":{\"path\":\"/x\"},"
         "\"readonly\":\"yes\"}",
         "readonly must be"},
        {"{\"name\":\"d\",\"kind\":\"host\",\"host\":{\"path\":\"/x\"},"
         "\"project\":7}",
         "project must be"},
        {"{\"name\":\"d\",\"kind\":\"host\",\"host\":{\"path\":\"/x\"},"
         "\"created_ms\":7}",
         "unknown field 'created_ms'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *body = parse(cases[i].body);
        struct sh_error err;
        json_t *rec = volume_from_request(body, "alice", 1, &err);
        cr_assert_null(rec, "%s accepted", cases[i].body);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert(strstr(err.msg, cases[i].says), "%s: '%s' lacks '%s'",
                  cases[i].body, err.msg, cases[i].says);
        json_decref(body);
    }
}

Test(volume, mount_paths_stay_out_of_the_system)
{
    static const char *const ok[] = {"/data",      "/mnt/x",   "/home/alice/d",
                                     "/var/tmp/x", "/scratch", "/etcetera"};
    static const char *const bad[] = {
        "/",     "data",     "/etc",   "/etc/x",   "/usr/lib",
        "/proc", "/a/../b",  "/a/./b", "/a//b",    "/a/",
        "/root", "/dev/shm", "/lib64", "/var/lib", "/var/run/x"};
    struct sh_error err;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        cr_assert_eq(volume_mount_path_check(ok[i], &err), 0, "%s: %s", ok[i],
                     err.msg);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(volume_mount_path_check(bad[i], &err), -1, "%s accepted",
                     bad[i]);
}

Test(volume, job_volumes_take_a_mode)
{
    json_t *body = parse("{\"command\":[\"ls\"],\"volumes\":[\"a:/a:ro\","
                         "\"b:/b:rw\",\"c:/c\",{\"name\":\"d\",\"path\":"
                         "\"/d\",\"readonly\":true}]}");
    struct job_spec s;
    job_spec_init(&s);
    struct sh_error err;
    cr_assert_eq(job_spec_from_json(body, &s, &err), 0, "%s", err.msg);
    cr_assert_eq(s.nvolumes, 4);
    cr_assert(s.volumes[0].readonly);
    cr_assert_str_eq(s.volumes[0].path, "/a");
    cr_assert(!s.volumes[1].readonly);
    cr_assert_str_eq(s.volumes[1].path, "/b");
    cr_assert(!s.volumes[2].readonly);
    cr_assert(s.volumes[3].readonly);
    json_t *back = job_spec_to_json(&s);
    cr_assert(json_is_true(json_object_get(
        json_array_get(json_object_get(back, "volumes"), 0), "readonly")));
    json_decref(back);
    job_spec_fini(&s);
    json_decref(body);

    body = parse("{\"command\":[\"ls\"],\"volumes\":[\"a:/a:rx\"]}");
    job_spec_init(&s);
    cr_assert_eq(job_spec_from_json(body, &s, &err), -1);
    cr_assert(strstr(err.msg, "ro or rw"), "%s", err.msg);
    job_spec_fini(&s);
    json_decref(body);
}

Test(volume, job_validation_refuses_system_mount_paths)
{
    json_t *body = parse("{\"command\":[\"ls\"],\"user\":\"a\",\"project\":"
                         "\"p\",\"volumes\":[\"data:/etc/x\"]}");
    struct job_spec s;
    job_spec_init(&s);
    struct sh_error err;
    /* Parsing validates the whole spec. */
    cr_assert_eq(job_spec_from_json(body, &s, &err), -1);
    cr_assert(strstr(err.msg, "volume data: mount path /etc/x"), "%s", err.msg);
    job_spec_fini(&s);
    json_decref(body);
}
