/* SPDX-License-Identifier: Apache-2.0 */
/* Computing a run's launch description (see launch.h). */
#include "agent/launch.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/model/job_array.h"
#include "lib/model/job_container.h"
#include "lib/model/job_output.h"
#include "lib/util/strbuf.h"

#define DEFAULT_PATH                                                           \
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

void launch_cgroup_key(uint64_t id, int attempt, char *buf, size_t size)
{
    snprintf(buf, size, "job-%llu-%d", (unsigned long long)id, attempt);
}

int launch_grace_s(const json_t *work)
{
    const json_t *g = json_object_get(work, "grace_s");
    if (!json_is_integer(g) || json_integer_value(g) < 0 ||
        json_integer_value(g) > INT_MAX / 1000)
        return LAUNCH_DEFAULT_GRACE_S;
    return (int)json_integer_value(g);
}

int64_t launch_kill_at_ms(int64_t now_ms, int grace_s)
{
    int64_t t = now_ms + (int64_t)(grace_s > 0 ? grace_s : 0) * 1000;
    int64_t rem = t % 1000;
    if (rem < 0)
        rem += 1000;
    return rem ? t - rem + 1000 : t;
}

int launch_deadline_text(int64_t kill_at_ms, char *buf, size_t size)
{
    int64_t sec = kill_at_ms / 1000;
    if (kill_at_ms % 1000 < 0)
        sec--; /* round down before 1970 too */
    int n = snprintf(buf, size, "%lld\n", (long long)sec);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

/* Join the strings of a JSON array with commas. */
static int join(const json_t *arr, struct strbuf *sb)
{
    size_t i;
    json_t *v;
    json_array_foreach (arr, i, v) {
        if (!json_is_string(v) ||
            strbuf_appendf(sb, "%s%s", i ? "," : "", json_string_value(v)) < 0)
            return -1;
    }
    return 0;
}

static int add_env(json_t *env, const char *key, const char *value)
{
    char *kv;
    if (asprintf(&kv, "%s=%s", key, value) < 0)
        return -1;
    int rc = json_array_append_new(env, json_string(kv));
    free(kv);
    return rc;
}

static int add_env_int(json_t *env, const char *key, long long value)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", value);
    return add_env(env, key, buf);
}

/* Drop an earlier KEY=... so the contract's value wins. */
static void env_unset(json_t *env, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < json_array_size(env);) {
        const char *kv = json_string_value(json_array_get(env, i));
        if (kv && strncmp(kv, key, n) == 0 && kv[n] == '=')
            json_array_remove(env, i);
        else
            i++;
    }
}

/* The rest of what Slurm scripts read: where the job was submitted from,
 * its CPUs, GPUs and memory per node, its partition, its array's range;
 * and the GPUs' UUIDs under a name of their own. */
static int slurm_more_env(json_t *env, const json_t *spec, const char *uuids,
                          size_t ngpus, int tpn)
{
    int rc = add_env(env, "SHOAL_GPU_UUIDS", uuids);
    const char *dir = json_string_value(json_object_get(spec, "submit_dir"));
    if (dir)
        rc |= add_env(env, "SLURM_SUBMIT_DIR", dir);
    long long cpus =
        (long long)json_integer_value(json_object_get(spec, "cpus"));
    if (cpus > 0) {
        rc |= add_env_int(env, "SLURM_CPUS_ON_NODE", cpus);
        if (cpus % tpn == 0)
            rc |= add_env_int(env, "SLURM_CPUS_PER_TASK", cpus / tpn);
    }
    rc |= add_env_int(env, "SLURM_GPUS_PER_NODE", (long long)ngpus);
    long long mem = (long long)json_integer_value(json_object_get(spec, "mem"));
    if (mem > 0)
        rc |= add_env_int(env, "SLURM_MEM_PER_NODE", mem >> 20); /* MiB */
    const char *part = json_string_value(json_object_get(spec, "partition"));
    if (part)
        rc |= add_env(env, "SLURM_JOB_PARTITION", part);
    const char *array = json_string_value(json_object_get(spec, "array"));
    struct job_array a;
    struct sh_error err;
    if (array && job_array_parse(array, &a, &err) == 0) {
        if (a.n > 0) {
            rc |= add_env_int(env, "SLURM_ARRAY_TASK_COUNT", a.n);
            rc |= add_env_int(env, "SLURM_ARRAY_TASK_MIN", a.idx[0]);
            rc |= add_env_int(env, "SLURM_ARRAY_TASK_MAX", a.idx[a.n - 1]);
        }
        job_array_fini(&a);
    }
    return rc ? -1 : 0;
}

static int contract_env(json_t *env, const json_t *work, const json_t *spec,
                        const char *run_dir, int node_rank, int nnodes, int tpn,
                        bool batch)
{
    struct strbuf gpus, nodes;
    strbuf_init(&gpus, 1 << 16);
    strbuf_init(&nodes, 1 << 20);
    int rc = -1;
    const json_t *gpu_arr = json_object_get(work, "gpus");
    if (join(gpu_arr, &gpus) < 0 ||
        join(json_object_get(work, "nodes"), &nodes) < 0)
        goto out;
    static const char *const keys[] = {"SHOAL_JOB_ID",
                                       "SHOAL_ATTEMPT",
                                       "SHOAL_JOB_NAME",
                                       "SHOAL_PROJECT",
                                       "SHOAL_USER",
                                       "SHOAL_NODELIST",
                                       "SHOAL_NNODES",
                                       "SHOAL_NODE_RANK",
                                       "SHOAL_GPUS_PER_NODE",
                                       "SHOAL_TASKS_PER_NODE",
                                       "CUDA_VISIBLE_DEVICES",
                                       "NVIDIA_VISIBLE_DEVICES",
                                       "MASTER_ADDR",
                                       "MASTER_PORT",
                                       "WORLD_SIZE",
                                       "NODE_RANK",
                                       "LOCAL_WORLD_SIZE",
                                       "RANK",
                                       "LOCAL_RANK",
                                       "SLURM_JOB_ID",
                                       "SLURM_JOBID",
                                       "SLURM_JOB_NAME",
                                       "SLURM_JOB_USER",
                                       "SLURM_JOB_ACCOUNT",
                                       "SLURM_NNODES",
                                       "SLURM_JOB_NUM_NODES",
                                       "SLURM_NODEID",
                                       "SLURM_JOB_NODELIST",
                                       "SLURM_NODELIST",
                                       "SLURM_NTASKS",
                                       "SLURM_NTASKS_PER_NODE",
                                       "SLURM_GPUS_ON_NODE",
                                       "SLURM_PROCID",
                                       "SLURM_LOCALID",
                                       "SLURM_ARRAY_TASK_ID",
                                       "SLURM_ARRAY_JOB_ID",
                                       "SHOAL_ARRAY_JOB_ID",
                                       "SHOAL_ARRAY_TASK_ID",
                                       "SHOAL_GPU_UUIDS",
                                       "SLURMD_NODENAME",
                                       "SLURM_SUBMIT_DIR",
                                       "SLURM_CPUS_PER_TASK",
                                       "SLURM_CPUS_ON_NODE",
                                       "SLURM_GPUS_PER_NODE",
                                       "SLURM_MEM_PER_NODE",
                                       "SLURM_JOB_PARTITION",
                                       "SLURM_ARRAY_TASK_COUNT",
                                       "SLURM_ARRAY_TASK_MIN",
                                       "SLURM_ARRAY_TASK_MAX",
                                       NULL};
    for (int i = 0; keys[i]; i++)
        env_unset(env, keys[i]);
    env_unset(env, "SHOAL_PREEMPT_GRACE");
    env_unset(env, "SHOAL_PREEMPT_DEADLINE");
    const char *name = json_string_value(json_object_get(spec, "name"));
    rc = 0;
    rc |=
        add_env_int(env, "SHOAL_JOB_ID",
                    (long long)json_integer_value(json_object_get(work, "id")));
    rc |= add_env_int(
        env, "SHOAL_ATTEMPT",
        (long long)json_integer_value(json_object_get(work, "attempt")));
    if (name)
        rc |= add_env(env, "SHOAL_JOB_NAME", name);
    rc |= add_env(env, "SHOAL_PROJECT",
                  json_string_value(json_object_get(spec, "project")));
    rc |= add_env(env, "SHOAL_USER",
                  json_string_value(json_object_get(spec, "user")));
    rc |= add_env(env, "SHOAL_NODELIST", strbuf_str(&nodes));
    rc |= add_env_int(env, "SHOAL_NNODES", nnodes);
    rc |= add_env_int(env, "SHOAL_NODE_RANK", node_rank);
    rc |= add_env_int(env, "SHOAL_GPUS_PER_NODE",
                      (long long)json_array_size(gpu_arr));
    rc |= add_env_int(env, "SHOAL_TASKS_PER_NODE", tpn);
    /* No GPU: hide every device rather than leave them all visible. */
    rc |= add_env(env, "CUDA_VISIBLE_DEVICES", strbuf_str(&gpus));
    rc |= add_env(env, "NVIDIA_VISIBLE_DEVICES",
                  gpus.len ? strbuf_str(&gpus) : "void");
    rc |= add_env(env, "MASTER_ADDR",
                  json_string_value(json_object_get(work, "master_addr")));
    rc |= add_env_int(
        env, "MASTER_PORT",
        (long long)json_integer_value(json_object_get(work, "master_port")));
    /* The batch step is one process; srun's steps set their own. */
    rc |= add_env_int(env, "WORLD_SIZE", batch ? 1 : (long long)nnodes * tpn);
    rc |= add_env_int(env, "NODE_RANK", node_rank);
    rc |= add_env_int(env, "LOCAL_WORLD_SIZE", batch ? 1 : tpn);
    /* The same facts under Slurm's names, for scripts written for it
     * (SLURM_PROCID and SLURM_LOCALID are per task: the shim sets them). */
    long long id = (long long)json_integer_value(json_object_get(work, "id"));
    rc |= add_env_int(env, "SLURM_JOB_ID", id);
    rc |= add_env_int(env, "SLURM_JOBID", id);
    if (name)
        rc |= add_env(env, "SLURM_JOB_NAME", name);
    rc |= add_env(env, "SLURM_JOB_USER",
                  json_string_value(json_object_get(spec, "user")));
    rc |= add_env(env, "SLURM_JOB_ACCOUNT",
                  json_string_value(json_object_get(spec, "project")));
    rc |= add_env_int(env, "SLURM_NNODES", nnodes);
    rc |= add_env_int(env, "SLURM_JOB_NUM_NODES", nnodes);
    rc |= add_env_int(env, "SLURM_NODEID", node_rank);
    rc |= add_env(env, "SLURM_JOB_NODELIST", strbuf_str(&nodes));
    rc |= add_env(env, "SLURM_NODELIST", strbuf_str(&nodes));
    rc |= add_env_int(env, "SLURM_NTASKS", (long long)nnodes * tpn);
    rc |= add_env_int(env, "SLURM_NTASKS_PER_NODE", tpn);
    rc |= add_env_int(env, "SLURM_GPUS_ON_NODE",
                      (long long)json_array_size(gpu_arr));
    if (json_object_get(work, "array_id")) {
        long long aid =
            (long long)json_integer_value(json_object_get(work, "array_id"));
        long long task =
            (long long)json_integer_value(json_object_get(work, "array_task"));
        rc |= add_env_int(env, "SHOAL_ARRAY_JOB_ID", aid);
        rc |= add_env_int(env, "SHOAL_ARRAY_TASK_ID", task);
        rc |= add_env_int(env, "SLURM_ARRAY_JOB_ID", aid);
        rc |= add_env_int(env, "SLURM_ARRAY_TASK_ID", task);
    }
    if (slurm_more_env(env, spec, strbuf_str(&gpus), json_array_size(gpu_arr),
                       tpn) < 0)
        rc = -1;
    /* Where and how long a stopped job learns its SIGKILL deadline. */
    rc |= add_env_int(env, "SHOAL_PREEMPT_GRACE", launch_grace_s(work));
    char *deadline;
    if (asprintf(&deadline, "%s/%s", run_dir, LAUNCH_DEADLINE_FILE) < 0) {
        rc = -1;
    } else {
        rc |= add_env(env, "SHOAL_PREEMPT_DEADLINE", deadline);
        free(deadline);
    }
out:
    strbuf_fini(&gpus);
    strbuf_fini(&nodes);
    return rc ? -1 : 0;
}

/* srun and scontrol (steps.h): their folder first on PATH, and the agent's
 * socket they ask. */
static int steps_env(json_t *env, const struct launch_ctx *ctx)
{
    if (!ctx->step_socket || !ctx->step_bin_dir)
        return 0;
    const char *path = DEFAULT_PATH;
    size_t i;
    json_t *v;
    json_array_foreach (env, i, v) {
        const char *kv = json_string_value(v);
        if (kv && strncmp(kv, "PATH=", 5) == 0)
            path = kv + 5;
    }
    char *joined;
    if (asprintf(&joined, "%s:%s", ctx->step_bin_dir, path) < 0)
        return -1;
    env_unset(env, "PATH");
    int rc = add_env(env, "PATH", joined);
    free(joined);
    env_unset(env, "SHOAL_STEP_SOCKET");
    return rc | add_env(env, "SHOAL_STEP_SOCKET", ctx->step_socket);
}

/* A time-slice on a node with MPS: its share of the GPU's threads and
 * memory, so one share cannot take the whole GPU. The job sees its GPU as
 * device 0 (CUDA_VISIBLE_DEVICES holds one UUID). */
static int mps_env(json_t *env, const json_t *work,
                   const struct launch_ctx *ctx)
{
    if (!ctx->mps)
        return 0;
    const json_t *gpus = json_object_get(work, "gpus");
    if (json_array_size(gpus) != 1)
        return 0;
    const char *uuid = json_string_value(json_array_get(gpus, 0));
    for (int i = 0; uuid && i < ctx->ngpus; i++) {
        const struct gpu_info *g = &ctx->gpus[i];
        if (strcmp(g->uuid, uuid) != 0 || g->nslices == 0 ||
            g->slices[0].kind != GPU_SLICE_SHARED)
            continue;
        /* The fence is ours: a job's own values never stand beside it. */
        env_unset(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
        env_unset(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
        int den = g->slices[0].share_den;
        char mem[64];
        snprintf(mem, sizeof(mem), "0=%lluM",
                 (unsigned long long)(g->slices[0].mem_bytes >> 20));
        if (add_env_int(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                        den > 0 ? 100 / den : 100) < 0 ||
            add_env(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", mem) < 0)
            return -1;
    }
    return 0;
}

/* The "container" object of a job with an image (container.h). */
static int add_container(json_t *out, const json_t *work, const json_t *spec,
                         const struct launch_ctx *ctx)
{
    const char *image = json_string_value(json_object_get(spec, "image"));
    char transport[JOB_IMAGE_MAX + 64];
    if (job_image_transport(image, transport, sizeof(transport)) < 0)
        return -1;
    json_t *env = json_array();
    const char *key;
    json_t *v;
    json_object_foreach (json_object_get(spec, "container_env"), key, v)
        add_env(env, key, json_string_value(v));
    json_t *mounts = json_deep_copy(json_object_get(spec, "container_mounts"));
    json_t *devs = ctx->container_devices
                       ? json_deep_copy(ctx->container_devices)
                       : json_array();
    json_t *libs = ctx->container_libs ? json_deep_copy(ctx->container_libs)
                                       : json_array();
    /* "o" steals mounts, env, devs and libs */
    json_t *c = json_pack(
        "{s:s, s:s, s:s?, s:I, s:I, s:I, s:b, s:o, s:O?, s:o, s:o, s:o}",
        "image", image, "transport", transport, "cache_dir",
        ctx->image_cache_dir, "cache_size", (json_int_t)ctx->image_cache_size,
        "max_size", (json_int_t)ctx->image_max_size, "max_files",
        (json_int_t)ctx->image_max_files, "tls_verify", ctx->image_tls_verify,
        "mounts", mounts ? mounts : json_array(), "workdir",
        json_object_get(spec, "container_workdir"), "env", env, "devices", devs,
        "libs", libs);
    if (!c)
        return -1;
    /* The digest the job's first node resolved the reference to: this
     * node pulls that, resolving nothing (checked: it came over the
     * network). */
    const char *digest =
        json_string_value(json_object_get(work, "image_digest"));
    if (digest && job_image_digest_valid(digest))
        json_object_set_new(c, "digest", json_string(digest));
    return json_object_set_new(out, "container", c);
}

/* --output / --error: the patterns expanded for this node (the shim's
 * tasks open them as the job's user, relative to the working directory).
 * -1 when a path does not fit. */
static int output_paths(json_t *out, const json_t *work, const json_t *spec,
                        const struct launch_ctx *ctx, const char *user)
{
    static const char *const keys[2][2] = {{"output", "stdout_path"},
                                           {"error", "stderr_path"}};
    struct job_output_vars v = {
        .id = (uint64_t)json_integer_value(json_object_get(work, "id")),
        .array_id =
            (uint64_t)json_integer_value(json_object_get(work, "array_id")),
        .array_task =
            (int)json_integer_value(json_object_get(work, "array_task")),
        .name = json_string_value(json_object_get(spec, "name")),
        .user = user,
        .node = ctx->node,
    };
    for (int i = 0; i < 2; i++) {
        const char *pattern =
            json_string_value(json_object_get(spec, keys[i][0]));
        char path[JOB_PATH_MAX + 1];
        if (!pattern)
            continue;
        if (job_output_expand(pattern, &v, path, sizeof(path)) < 0)
            return -1;
        json_object_set_new(out, keys[i][1], json_string(path));
    }
    return 0;
}

json_t *launch_from_work(const json_t *work, const struct launch_ctx *ctx,
                         struct sh_error *err)
{
    const json_t *spec = json_object_get(work, "spec");
    if (!json_is_object(spec)) {
        sh_errorf(err, SH_EINVAL, "work entry without a spec");
        return NULL;
    }
    int node_rank = (int)json_integer_value(json_object_get(work, "node_rank"));
    int nnodes = (int)json_array_size(json_object_get(work, "nodes"));
    int tpn = (int)json_integer_value(json_object_get(spec, "tasks_per_node"));
    if (tpn < 1 || tpn > JOB_TASKS_PER_NODE_MAX || nnodes < 1 ||
        node_rank < 0 || node_rank >= nnodes) {
        sh_errorf(err, SH_EINVAL, "work entry has bad ranks");
        return NULL;
    }
    /* Slurm's batch step: the script once, on the first node, as one
     * process (RANK 0 of 1); the other nodes hold their share for the
     * steps srun starts (no task of their own). */
    const char *mode = json_string_value(json_object_get(spec, "launch"));
    bool batch = mode && strcmp(mode, "batch") == 0;
    int tasks = batch ? (node_rank == 0 ? 1 : 0) : tpn;
    /* Those other nodes run the step server when the node has steps (not
     * in an image: shoal-step is the node's, not the image's). */
    const char *image0 = json_string_value(json_object_get(spec, "image"));
    bool serve = batch && node_rank > 0 && ctx->step_program && !image0;
    if (serve)
        tasks = 1;
    int world = batch ? 1 : nnodes * tpn;
    json_t *env = json_array();
    json_t *argv = json_array();
    json_t *out = NULL;
    const char *user = json_string_value(json_object_get(spec, "user"));
    const char *script = json_string_value(json_object_get(spec, "script"));
    if (!env || !argv)
        goto fail;
    const char *image = json_string_value(json_object_get(spec, "image"));
    /* In an image, its own PATH stands unless the job set one. */
    if (!image)
        add_env(env, "PATH", DEFAULT_PATH);
    /* The job's own variables, the container's, then the contract's (which
     * win). */
    const char *key;
    json_t *v;
    json_object_foreach (json_object_get(spec, "env"), key, v) {
        env_unset(env, key); /* the job's PATH replaces the default */
        add_env(env, key, json_string_value(v));
    }
    json_object_foreach (json_object_get(spec, "container_env"), key, v) {
        env_unset(env, key);
        add_env(env, key, json_string_value(v));
    }
    int rc = contract_env(env, work, spec, ctx->run_dir, node_rank, nnodes, tpn,
                          batch);
    if (rc < 0 || (ctx->node && add_env(env, "SLURMD_NODENAME", ctx->node)) ||
        mps_env(env, work, ctx) < 0)
        goto fail;
    if (!image && steps_env(env, ctx) < 0)
        goto fail;
    if (serve) {
        json_array_append_new(argv, json_string(ctx->step_program));
        json_array_append_new(argv, json_string("--serve"));
        script = NULL;
    } else if (script) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/script", ctx->run_dir);
        json_array_append_new(argv, json_string(path));
    }
    size_t i;
    json_array_foreach (serve ? NULL : json_object_get(spec, "command"), i, v)
        json_array_append(argv, v);
    if (json_array_size(argv) == 0) {
        sh_errorf(err, SH_EINVAL, "nothing to run");
        goto fail_quiet;
    }
    char key_buf[64];
    launch_cgroup_key((uint64_t)json_integer_value(json_object_get(work, "id")),
                      (int)json_integer_value(json_object_get(work, "attempt")),
                      key_buf, sizeof(key_buf));
    /* "o" steals argv and env */
    out = json_pack("{s:o, s:o, s:O?, s:s?, s:i, s:i, s:i, s:s?, s:s?, s:s}",
                    "argv", argv, "env", env, "workdir",
                    json_object_get(spec, "workdir"), "user",
                    ctx->as_root ? user : NULL, "tasks", tasks, "node_rank",
                    node_rank, "world_size", world, "script", script,
                    "cgroup_parent", ctx->cg_parent, "cgroup_key", key_buf);
    if (out) {
        json_t *allow = json_array();
        for (int k = 0; k < ctx->nallow_users; k++)
            json_array_append_new(allow, json_string(ctx->allow_users[k]));
        json_object_set_new(out, "allow_users", allow);
        json_object_set_new(out, "min_uid", json_integer(ctx->min_uid));
        if (output_paths(out, work, spec, ctx, user) < 0) {
            json_decref(out);
            sh_errorf(err, SH_EINVAL, "output or error pattern does not fit");
            return NULL;
        }
        /* The project's registry credentials, for the shim's skopeo. */
        const json_t *auth = json_object_get(work, "registry_auth");
        if (auth)
            json_object_set(out, "registry_auth", (json_t *)auth);
        const json_t *mounts = json_object_get(work, "mounts");
        if (json_array_size(mounts) > 0) {
            json_object_set(out, "mounts", (json_t *)mounts);
            if (ctx->stages_dir)
                json_object_set_new(out, "stages_dir",
                                    json_string(ctx->stages_dir));
        }
    }
    if (out && image && add_container(out, work, spec, ctx) < 0) {
        json_decref(out);
        out = NULL;
    }
    if (!out)
        sh_errorf(err, SH_EINTERNAL, "out of memory");
    return out;
fail:
    sh_errorf(err, SH_EINTERNAL, "out of memory");
fail_quiet:
    json_decref(env);
    json_decref(argv);
    return NULL;
}
