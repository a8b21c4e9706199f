/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: what a container of a job gets (container.c): its process runs as
 * the job's user with no capabilities, its env puts the contract over the
 * image's, only the given devices and binds go in, and the driver's
 * libraries are found in ldconfig's list; image.c's tool errors read as a
 * sentence. */
#include <criterion/criterion.h>
#include <string.h>

#include "agent/container.h"
#include "agent/image.h"

static json_t *image_config(void)
{
    json_error_t jerr;
    json_t *c = json_loads(
        "{\"process\": {\"env\": [\"PATH=/opt/conda/bin:/usr/bin\", "
        "\"CUDA_HOME=/usr/local/cuda\", \"SHOAL_JOB_ID=forged\"], \"cwd\": "
        "\"/workspace\"}}",
        0, &jerr);
    cr_assert_not_null(c, "%s", jerr.text);
    return c;
}

static const json_t *find(const json_t *arr, const char *key, const char *val)
{
    size_t i;
    json_t *v;
    json_array_foreach (arr, i, v) {
        const char *s = json_string_value(json_object_get(v, key));
        if (s && strcmp(s, val) == 0)
            return v;
    }
    return NULL;
}

static const json_t *find_int(const json_t *arr, const char *key,
                              json_int_t val)
{
    size_t i;
    json_t *v;
    json_array_foreach (arr, i, v) {
        const json_t *n = json_object_get(v, key);
        if (json_is_integer(n) && json_integer_value(n) == val)
            return v;
    }
    return NULL;
}

static bool has_env(const json_t *env, const char *kv)
{
    size_t i;
    json_t *v;
    json_array_foreach (env, i, v) {
        if (strcmp(json_string_value(v), kv) == 0)
            return true;
    }
    return false;
}

Test(container, config_holds_the_job_and_only_what_it_was_given)
{
    json_t *img = image_config();
    json_error_t jerr;
    json_t *ctr = json_loads(
        "{\"mounts\": [{\"src\": \"/scratch\", \"dst\": \"/s\", \"readonly\": "
        "true}], \"workdir\": null, \"devices\": [{\"path\": \"/dev/nvidia3\", "
        "\"major\": 195, \"minor\": 3}], \"libs\": [{\"src\": "
        "\"/usr/lib/x86_64-linux-gnu/libcuda.so.1\", \"dst\": "
        "\"/usr/lib/x86_64-linux-gnu/libcuda.so.1\"}]}",
        0, &jerr);
    json_t *vols =
        json_loads("[{\"path\": \"/data\", \"readonly\": false}]", 0, &jerr);
    char *argv[] = {"python", "train.py", NULL};
    char *env[] = {"SHOAL_JOB_ID=7", "CUDA_VISIBLE_DEVICES=GPU-x", NULL};
    gid_t groups[] = {1000, 27};
    struct container_input in = {
        .image_config = img,
        .container = ctr,
        .volumes = vols,
        .rootfs = "/run/r/ctr/rootfs",
        .run_dir = "/state/runs/7.0",
        .shm_dir = "/run/r/ctr/shm",
        .hostname = "node1",
    };
    struct container_proc proc = {argv, env, 1000, 1000, groups, 2};
    char why[256];
    json_t *cfg = container_config(&in, &proc, why, sizeof(why));
    cr_assert_not_null(cfg, "%s", why);
    const json_t *p = json_object_get(cfg, "process");
    cr_assert_eq(
        json_integer_value(json_object_get(json_object_get(p, "user"), "uid")),
        1000);
    cr_assert_eq(json_array_size(json_object_get(json_object_get(p, "user"),
                                                 "additionalGids")),
                 2);
    cr_assert(json_is_true(json_object_get(p, "noNewPrivileges")));
    cr_assert_eq(json_array_size(json_object_get(
                     json_object_get(p, "capabilities"), "bounding")),
                 0);
    cr_assert_str_eq(json_string_value(json_object_get(p, "cwd")),
                     "/workspace");
    const json_t *e = json_object_get(p, "env");
    /* The image's PATH and CUDA_HOME stay; its forged contract does not. */
    cr_assert(has_env(e, "PATH=/opt/conda/bin:/usr/bin"));
    cr_assert(has_env(e, "CUDA_HOME=/usr/local/cuda"));
    cr_assert(has_env(e, "SHOAL_JOB_ID=7"));
    cr_assert(!has_env(e, "SHOAL_JOB_ID=forged"));
    const json_t *lin = json_object_get(cfg, "linux");
    cr_assert_eq(json_array_size(json_object_get(lin, "devices")), 1);
    cr_assert_not_null(
        find(json_object_get(lin, "devices"), "path", "/dev/nvidia3"));
    cr_assert_null(find(json_object_get(lin, "namespaces"), "type", "pid"));
    cr_assert_null(find(json_object_get(lin, "namespaces"), "type", "network"));
    cr_assert_not_null(
        find(json_object_get(lin, "namespaces"), "type", "mount"));
    /* A user namespace mapping the user's ids only, each to itself: root
     * is not mapped (gid 1000 comes once though it is also a group). */
    cr_assert_not_null(
        find(json_object_get(lin, "namespaces"), "type", "user"));
    const json_t *um = json_object_get(lin, "uidMappings");
    cr_assert_eq(json_array_size(um), 1);
    cr_assert_eq(json_integer_value(
                     json_object_get(json_array_get(um, 0), "containerID")),
                 1000);
    cr_assert_eq(
        json_integer_value(json_object_get(json_array_get(um, 0), "hostID")),
        1000);
    cr_assert_eq(
        json_integer_value(json_object_get(json_array_get(um, 0), "size")), 1);
    const json_t *gm = json_object_get(lin, "gidMappings");
    cr_assert_eq(json_array_size(gm), 2);
    cr_assert_not_null(find_int(gm, "containerID", 27));
    cr_assert_null(find_int(gm, "containerID", 0));
    const json_t *m = json_object_get(cfg, "mounts");
    const json_t *s = find(m, "destination", "/s");
    cr_assert_not_null(s);
    cr_assert_str_eq(json_string_value(json_object_get(s, "source")),
                     "/scratch");
    cr_assert_str_eq(
        json_string_value(json_array_get(json_object_get(s, "options"), 1)),
        "ro");
    cr_assert_not_null(find(m, "destination", "/data"));
    cr_assert_not_null(find(m, "destination", "/state/runs/7.0"));
    cr_assert_not_null(
        find(m, "destination", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
    cr_assert_str_eq(json_string_value(json_object_get(
                         find(m, "destination", "/dev/shm"), "source")),
                     "/run/r/ctr/shm");
    json_decref(cfg);
    json_decref(ctr);
    json_decref(vols);
    json_decref(img);
}

static bool has_option(const json_t *mount, const char *opt)
{
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(mount, "options"), i, v)
        if (strcmp(json_string_value(v), opt) == 0)
            return true;
    return false;
}

/* Issue 27: the GPU nodes 0666 (crun's umask is 0, the job's 022), the
 * user's passwd and group bound read-only, a per-run home, /sys read-only
 * (a bind, whose "ro" crun applies; a sysfs in a user namespace falls
 * back to a bind that dropped it). */
Test(container, the_job_gets_its_gpu_modes_identity_home_and_a_read_only_sys)
{
    json_t *img = image_config();
    json_error_t jerr;
    json_t *ctr = json_loads(
        "{\"devices\": [{\"path\": \"/dev/nvidia0\", \"major\": 195, "
        "\"minor\": 0}]}",
        0, &jerr);
    char *argv[] = {"true", NULL};
    char *env[] = {NULL};
    struct container_input in = {
        .image_config = img,
        .container = ctr,
        .rootfs = "rootfs",
        .run_dir = "/state/runs/7.0",
        .passwd_file = "/state/runs/7.0/ctr/passwd",
        .group_file = "/state/runs/7.0/ctr/group",
        .home_src = "/state/runs/7.0/ctr/home",
        .home_dst = "/home/alice",
    };
    struct container_proc proc = {argv, env, 1000, 1000, NULL, 0};
    char why[256];
    json_t *cfg = container_config(&in, &proc, why, sizeof(why));
    cr_assert_not_null(cfg, "%s", why);
    const json_t *user =
        json_object_get(json_object_get(cfg, "process"), "user");
    cr_assert_eq(json_integer_value(json_object_get(user, "umask")), 022);
    const json_t *dev =
        find(json_object_get(json_object_get(cfg, "linux"), "devices"), "path",
             "/dev/nvidia0");
    cr_assert_eq(json_integer_value(json_object_get(dev, "fileMode")), 0666);
    const json_t *m = json_object_get(cfg, "mounts");
    const json_t *sys = find(m, "destination", "/sys");
    cr_assert_str_eq(json_string_value(json_object_get(sys, "type")), "bind");
    cr_assert(has_option(sys, "ro"));
    cr_assert(has_option(sys, "rro"));
    cr_assert(has_option(sys, "rnosuid"));
    cr_assert(has_option(sys, "rnodev"));
    cr_assert(has_option(sys, "rnoexec"));
    const json_t *pw = find(m, "destination", "/etc/passwd");
    cr_assert_str_eq(json_string_value(json_object_get(pw, "source")),
                     "/state/runs/7.0/ctr/passwd");
    cr_assert(has_option(pw, "ro"));
    cr_assert(has_option(find(m, "destination", "/etc/group"), "ro"));
    const json_t *home = find(m, "destination", "/home/alice");
    cr_assert_str_eq(json_string_value(json_object_get(home, "source")),
                     "/state/runs/7.0/ctr/home");
    cr_assert_not(has_option(home, "ro"));
    json_decref(cfg);
    json_decref(ctr);
    json_decref(img);
}

Test(container, workdir_and_path_defaults)
{
    json_error_t jerr;
    json_t *img = json_loads("{\"process\": {}}", 0, &jerr);
    json_t *ctr = json_loads("{\"workdir\": \"/w\"}", 0, &jerr);
    char *argv[] = {"id", NULL};
    char *env[] = {NULL};
    struct container_input in = {.image_config = img, .container = ctr};
    struct container_proc proc = {argv, env, 1000, 1000, NULL, 0};
    json_t *p = container_process(&in, &proc);
    cr_assert_str_eq(json_string_value(json_object_get(p, "cwd")), "/w");
    cr_assert(has_env(json_object_get(p, "env"),
                      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/"
                      "bin:/sbin:/bin"));
    json_decref(p);
    json_decref(ctr);
    json_decref(img);
}

Test(container, driver_libraries_from_ldconfig)
{
    const char *text =
        "1234 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibnvidia-ml.so.1 (libc6,x86-64) => "
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n"
        "\tlibnvidia-ml.so (libc6,x86-64) => "
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so\n"
        "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/"
        "libcuda.so.1\n"
        "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1\n"
        "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib/"
        "libcudart.so.12\n"
        "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n";
    json_t *libs = container_libs_from_ldconfig(text);
#if defined(__x86_64__)
    cr_assert_eq(json_array_size(libs), 2, "%s", json_dumps(libs, 0));
    cr_assert_not_null(
        find(libs, "src", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"));
    cr_assert_not_null(
        find(libs, "src", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
#endif
    cr_assert_null(find(libs, "src", "/usr/local/cuda/lib/libcudart.so.12"));
    json_decref(libs);
}

Test(image, tool_errors_read_as_a_sentence)
{
    char buf[256];
    image_tool_error(
        "time=\"2026-12-02T05:00:00Z\" level=fatal msg=\"Error parsing image "
        "name \\\"oci-archive:/x.tar\\\": open /x.tar: no such file or "
        "directory\"\n",
        buf, sizeof(buf));
    cr_assert_str_eq(buf, "Error parsing image name \"oci-archive:/x.tar\": "
                          "open /x.tar: no such file or directory");
    image_tool_error("first\nunpack failed: bad layer\n\n", buf, sizeof(buf));
    cr_assert_str_eq(buf, "unpack failed: bad layer");
    image_tool_error("", buf, sizeof(buf));
    cr_assert_str_eq(buf, "no message");
}
