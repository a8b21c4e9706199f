/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: image references are classified and checked with a message naming
 * what is wrong; the container fields round-trip through the submission
 * JSON; container_* fields without an image are refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib/model/job_json.h"

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

Test(job_container, classifies_good_references)
{
    struct {
        const char *ref;
        enum job_image_kind kind;
        const char *transport;
    } ok[] = {
        {"oci-archive:/shared/img.tar", JOB_IMAGE_OCI_ARCHIVE,
         "oci-archive:/shared/img.tar"},
        {"oci:/shared/layout:v1", JOB_IMAGE_OCI_DIR, "oci:/shared/layout:v1"},
        {"oci:/shared/layout", JOB_IMAGE_OCI_DIR, "oci:/shared/layout:latest"},
        {"registry.example.com/team/train:1.4", JOB_IMAGE_REGISTRY,
         "docker://registry.example.com/team/train:1.4"},
        {"docker://localhost:5000/busybox", JOB_IMAGE_REGISTRY,
         "docker://localhost:5000/busybox"},
        {"ubuntu", JOB_IMAGE_REGISTRY, "docker://ubuntu"},
        {"nvcr.io/nvidia/pytorch@sha256:"
         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
         JOB_IMAGE_REGISTRY,
         "docker://nvcr.io/nvidia/pytorch@sha256:"
         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        enum job_image_kind k;
        struct sh_error err;
        char buf[2048];
        cr_assert_eq(job_image_ref_parse(ok[i].ref, &k, &err), 0, "%s: %s",
                     ok[i].ref, err.msg);
        cr_assert_eq(k, ok[i].kind, "%s", ok[i].ref);
        cr_assert_eq(job_image_transport(ok[i].ref, buf, sizeof(buf)), 0);
        cr_assert_str_eq(buf, ok[i].transport);
    }
}

Test(job_container, refuses_bad_references_with_a_reason)
{
    struct {
        const char *ref;
        const char *says;
    } bad[] = {
        {"", "empty"},
        {"oci-archive:relative.tar", "absolute"},
        {"oci-archive:/a/../etc/x.tar", ".."},
        {"oci:/d:bad tag", "printable"},
        {"oci:/d:-x", "tag"},
        {"Registry.Example.com/Team/Train:1.4", "lowercase"},
        {"registry.example.com/team/train:", "tag"},
        {"http://registry/x", "transports"},
        {"reg.io/x@sha256:abc", "digest"},
        {"reg.io/team/", "ends with"},
        {"bad_host.io:99999/x", "host"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        enum job_image_kind k;
        struct sh_error err;
        cr_assert_eq(job_image_ref_parse(bad[i].ref, &k, &err), -1, "%s",
                     bad[i].ref);
        cr_assert_not_null(strstr(err.msg, bad[i].says), "%s: %s", bad[i].ref,
                           err.msg);
    }
}

Test(job_container, fields_round_trip)
{
    struct job_spec s, again;
    struct sh_error err;
    cr_assert_eq(parse("{\"command\":[\"id\"],\"image\":\"oci-archive:/s/i."
                       "tar\",\"container_mounts\":[\"/data:/data:ro\","
                       "\"/scratch:/scratch\"],\"container_workdir\":\"/w\","
                       "\"container_env\":{\"A\":\"1\"}}",
                       &s, &err),
                 0, "%s", err.msg);
    cr_assert_str_eq(s.container.image, "oci-archive:/s/i.tar");
    cr_assert_eq(s.container.nmounts, 2);
    cr_assert(s.container.mounts[0].readonly);
    cr_assert(!s.container.mounts[1].readonly);
    cr_assert_str_eq(s.container.mounts[1].dst, "/scratch");
    cr_assert_str_eq(s.container.workdir, "/w");
    cr_assert_str_eq(s.container.env[0].value, "1");
    json_t *o = job_spec_to_json(&s);
    job_spec_init(&again);
    cr_assert_eq(job_spec_from_json(o, &again, &err), 0, "%s", err.msg);
    cr_assert_eq(again.container.nmounts, 2);
    cr_assert(again.container.mounts[0].readonly);
    cr_assert_str_eq(again.container.mounts[0].src, "/data");
    json_decref(o);
    struct job_spec copy;
    cr_assert_eq(job_spec_copy(&copy, &again), 0);
    cr_assert_str_eq(copy.container.env[0].key, "A");
    job_spec_fini(&copy);
    job_spec_fini(&again);
    job_spec_fini(&s);
}

Test(job_container, refuses_container_fields_without_an_image)
{
    struct job_spec s;
    struct sh_error err;
    cr_assert_eq(
        parse("{\"command\":[\"id\"],\"container_workdir\":\"/w\"}", &s, &err),
        -1);
    cr_assert_not_null(strstr(err.msg, "need an image"), "%s", err.msg);
    cr_assert_eq(parse("{\"command\":[\"id\"],\"image\":\"x\","
                       "\"container_mounts\":[\"data:/d\"]}",
                       &s, &err),
                 -1);
    cr_assert_not_null(strstr(err.msg, "absolute"), "%s", err.msg);
    cr_assert_eq(
        parse("{\"command\":[\"id\"],\"image\":\"BAD IMAGE\"}", &s, &err), -1);
    cr_assert_not_null(strstr(err.msg, "image"), "%s", err.msg);
}

/* A digest reported by a node is data from that node: only sha256: and 64
 * lowercase hex digits pass, before the controller stores or sends it on. */
Test(job_container, digest_from_a_node_is_validated)
{
    const char *hex =
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char good[80];
    snprintf(good, sizeof(good), "sha256:%s", hex);
    cr_assert(job_image_digest_valid(good));
    const char *bad[] = {
        NULL,
        "",
        "sha256:",
        "sha256:abc",
        "sha512:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "SHA256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "sha256:"
        "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
        "sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg",
        "sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0",
        "sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n",
        "sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"",
        "sha256:../../../../etc/passwd",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_not(job_image_digest_valid(bad[i]), "%s",
                      bad[i] ? bad[i] : "(null)");
    /* A reference that names its digest needs no resolution. */
    char ref[200];
    snprintf(ref, sizeof(ref), "reg.io/team/x@sha256:%s", hex);
    cr_assert(job_image_ref_pinned(ref));
    cr_assert_not(job_image_ref_pinned("reg.io/team/x:1"));
    cr_assert_not(job_image_ref_pinned("oci-archive:/s/x.tar"));
    cr_assert_not(job_image_ref_pinned(NULL));
}
