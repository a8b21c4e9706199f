/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: agent/launch.c turns the controller's work entry into what a run
 * executes. Work entries are built the way shoald's nodework.c work_entry()
 * builds them (job_spec_to_json for the spec), and the tests check what a
 * job sees: its argv, the environment contract of ARCHITECTURE.md ("Inside
 * a job"), its own variables and that they cannot override the contract,
 * the user, the ranks, the MPS fence of a time-slice, and refusals. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "agent/launch.h"
#include "lib/model/job.h"
#include "lib/model/job_json.h"

#define RUN_DIR "/var/lib/shoal/runs/job-42-0"

/* ---- building work entries ---- */

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    cr_assert_not_null(d);
    return d;
}

/* A spec as the controller stores it: user and project filled in. argv is
 * NULL-terminated. */
static void spec_make(struct job_spec *s, const char *const *argv)
{
    job_spec_init(s);
    s->user = xstrdup("alice");
    s->project = xstrdup("vision");
    int n = 0;
    while (argv && argv[n])
        n++;
    s->argv = calloc((size_t)n + 1, sizeof(char *));
    cr_assert_not_null(s->argv);
    for (int i = 0; i < n; i++)
        s->argv[i] = xstrdup(argv[i]);
    s->argc = n;
}

static void spec_add_env(struct job_spec *s, const char *key, const char *val)
{
    struct job_env *e = realloc(s->env, (size_t)(s->nenv + 1) * sizeof(*e));
    cr_assert_not_null(e);
    s->env = e;
    s->env[s->nenv].key = xstrdup(key);
    s->env[s->nenv].value = xstrdup(val);
    s->nenv++;
}

static json_t *str_array(const char *const *v)
{
    json_t *a = json_array();
    for (int i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* The work entry of one node's part of a job, shaped like nodework.c's
 * work_entry(): nodes and gpus are NULL-terminated lists. */
static json_t *work_make(uint64_t id, int attempt, int node_rank,
                         const char *const *nodes, const char *const *gpus,
                         const struct job_spec *spec)
{
    /* "o" steals the arrays and the spec */
    json_t *w =
        json_pack("{s:I, s:i, s:s, s:i, s:o, s:o, s:s, s:i, s:I, s:i, s:o}",
                  "id", (json_int_t)id, "attempt", attempt, "action", "run",
                  "node_rank", node_rank, "nodes", str_array(nodes), "gpus",
                  str_array(gpus), "master_addr", "10.0.0.1", "master_port",
                  29500, "start_ms", (json_int_t)1767312010000LL, "grace_s", 10,
                  "spec", job_spec_to_json(spec));
    cr_assert_not_null(w);
    return w;
}

static struct launch_ctx ctx_make(void)
{
    struct launch_ctx ctx = {
        .node = "gpu01",
        .run_dir = RUN_DIR,
        .as_root = false,
        .cg_parent = NULL,
        .gpus = NULL,
        .ngpus = 0,
        .mps = false,
    };
    return ctx;
}

/* ---- reading the launch description ---- */

static int env_count(const json_t *launch, const char *key)
{
    size_t n = strlen(key);
    size_t i;
    json_t *v;
    int count = 0;
    json_array_foreach (json_object_get(launch, "env"), i, v) {
        const char *kv = json_string_value(v);
        if (kv && strncmp(kv, key, n) == 0 && kv[n] == '=')
            count++;
    }
    return count;
}

/* The value of KEY, or NULL when absent. Asserts KEY appears at most once:
 * a duplicate would leave the job with two different answers. */
static const char *env_get(const json_t *launch, const char *key)
{
    size_t n = strlen(key);
    size_t i;
    json_t *v;
    const char *found = NULL;
    cr_assert_leq(env_count(launch, key), 1, "%s is set more than once", key);
    json_array_foreach (json_object_get(launch, "env"), i, v) {
        const char *kv = json_string_value(v);
        if (kv && strncmp(kv, key, n) == 0 && kv[n] == '=')
            found = kv + n + 1;
    }
    return found;
}

static void assert_env(const json_t *launch, const char *key, const char *want)
{
    const char *got = env_get(launch, key);
    cr_assert_not_null(got, "%s is missing", key);
    cr_assert_str_eq(got, want, "%s", key);
}

static const char *argv_at(const json_t *launch, size_t i)
{
    return json_string_value(
        json_array_get(json_object_get(launch, "argv"), i));
}

static long long int_field(const json_t *launch, const char *key)
{
    const json_t *v = json_object_get(launch, key);
    cr_assert(json_is_integer(v), "%s is not an integer", key);
    return (long long)json_integer_value(v);
}

/* One launch from a spec, for the tests that need no other setup. */
static json_t *launch_one(const struct job_spec *spec, int node_rank,
                          const char *const *nodes, const char *const *gpus,
                          const struct launch_ctx *ctx)
{
    json_t *w = work_make(42, 0, node_rank, nodes, gpus, spec);
    struct sh_error err = {0};
    json_t *l = launch_from_work(w, ctx, &err);
    cr_assert_not_null(l, "launch_from_work: %s", err.msg);
    json_decref(w);
    return l;
}

static const char *const ONE_NODE[] = {"gpu01", NULL};
static const char *const TWO_GPUS[] = {"GPU-1111", "GPU-2222", NULL};
static const char *const NO_GPUS[] = {NULL};

/* ---- argv ---- */

Test(launch, command_job_runs_its_command_as_given)
{
    struct job_spec s;
    spec_make(&s,
              (const char *const[]){"python", "train.py", "--lr", "0.1", NULL});
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, TWO_GPUS, &ctx);
    cr_assert_eq(json_array_size(json_object_get(l, "argv")), 4);
    cr_assert_str_eq(argv_at(l, 0), "python");
    cr_assert_str_eq(argv_at(l, 1), "train.py");
    cr_assert_str_eq(argv_at(l, 2), "--lr");
    cr_assert_str_eq(argv_at(l, 3), "0.1");
    cr_assert(json_is_null(json_object_get(l, "script")),
              "a command job carries no script");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, script_job_runs_the_script_in_the_run_dir_with_its_arguments)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"--epochs", "3", NULL});
    s.script = xstrdup("#!/bin/sh\necho hello\n");
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, TWO_GPUS, &ctx);
    cr_assert_eq(json_array_size(json_object_get(l, "argv")), 3);
    cr_assert_str_eq(argv_at(l, 0), RUN_DIR "/script");
    cr_assert_str_eq(argv_at(l, 1), "--epochs");
    cr_assert_str_eq(argv_at(l, 2), "3");
    cr_assert_str_eq(json_string_value(json_object_get(l, "script")),
                     "#!/bin/sh\necho hello\n");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, script_job_without_arguments_runs_just_the_script)
{
    struct job_spec s;
    spec_make(&s, NULL);
    s.script = xstrdup("#!/bin/sh\ntrue\n");
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    cr_assert_eq(json_array_size(json_object_get(l, "argv")), 1);
    cr_assert_str_eq(argv_at(l, 0), RUN_DIR "/script");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, job_with_neither_command_nor_script_is_refused)
{
    struct job_spec s;
    spec_make(&s, NULL);
    struct launch_ctx ctx = ctx_make();
    json_t *w = work_make(42, 0, 0, ONE_NODE, NO_GPUS, &s);
    struct sh_error err = {0};
    cr_assert_null(launch_from_work(w, &ctx, &err));
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert(strstr(err.msg, "nothing to run") != NULL, "%s", err.msg);
    json_decref(w);
    job_spec_fini(&s);
}

Test(launch, workdir_is_passed_through_and_null_when_not_given)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"true", NULL});
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    cr_assert(json_is_null(json_object_get(l, "workdir")));
    json_decref(l);
    s.workdir = xstrdup("/home/alice/project");
    l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    cr_assert_str_eq(json_string_value(json_object_get(l, "workdir")),
                     "/home/alice/project");
    json_decref(l);
    job_spec_fini(&s);
}

/* ---- the environment contract ---- */

Test(launch, gpus_are_visible_as_the_comma_joined_uuids)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"nvidia-smi", NULL});
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, TWO_GPUS, &ctx);
    assert_env(l, "CUDA_VISIBLE_DEVICES", "GPU-1111,GPU-2222");
    assert_env(l, "NVIDIA_VISIBLE_DEVICES", "GPU-1111,GPU-2222");
    assert_env(l, "SHOAL_GPUS_PER_NODE", "2");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, job_without_gpus_sees_no_device)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"hostname", NULL});
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    /* Both set, to nothing: unset would leave every device visible. */
    assert_env(l, "CUDA_VISIBLE_DEVICES", "");
    assert_env(l, "NVIDIA_VISIBLE_DEVICES", "void");
    assert_env(l, "SHOAL_GPUS_PER_NODE", "0");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, distributed_job_gets_the_contract_of_its_node)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"torchrun", "train.py", NULL});
    s.nodes = 3;
    s.gpus_per_node = 2;
    s.tasks_per_node = 4;
    s.name = xstrdup("resnet");
    const char *const nodes[] = {"gpu01", "gpu02", "gpu03", NULL};
    struct launch_ctx ctx = ctx_make();
    ctx.node = "gpu02";
    json_t *w = work_make(42, 2, 1, nodes, TWO_GPUS, &s);
    struct sh_error err = {0};
    json_t *l = launch_from_work(w, &ctx, &err);
    cr_assert_not_null(l, "%s", err.msg);
    assert_env(l, "SHOAL_JOB_ID", "42");
    assert_env(l, "SHOAL_ATTEMPT", "2");
    assert_env(l, "SHOAL_JOB_NAME", "resnet");
    assert_env(l, "SHOAL_USER", "alice");
    assert_env(l, "SHOAL_PROJECT", "vision");
    assert_env(l, "SHOAL_NODELIST", "gpu01,gpu02,gpu03");
    assert_env(l, "SHOAL_NNODES", "3");
    assert_env(l, "SHOAL_NODE_RANK", "1");
    assert_env(l, "SHOAL_GPUS_PER_NODE", "2");
    assert_env(l, "SHOAL_TASKS_PER_NODE", "4");
    assert_env(l, "MASTER_ADDR", "10.0.0.1");
    assert_env(l, "MASTER_PORT", "29500");
    assert_env(l, "WORLD_SIZE", "12");
    assert_env(l, "NODE_RANK", "1");
    assert_env(l, "LOCAL_WORLD_SIZE", "4");
    /* The shim adds the per-task ranks. */
    cr_assert_null(env_get(l, "RANK"));
    cr_assert_null(env_get(l, "LOCAL_RANK"));
    json_decref(l);
    json_decref(w);
    job_spec_fini(&s);
}

Test(launch, unnamed_job_has_no_job_name_variable)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"true", NULL});
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    cr_assert_null(env_get(l, "SHOAL_JOB_NAME"));
    assert_env(l, "SHOAL_JOB_ID", "42");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, job_has_a_default_path)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"true", NULL});
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    const char *path = env_get(l, "PATH");
    cr_assert_not_null(path);
    cr_assert(strstr(path, "/usr/bin") != NULL, "%s", path);
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, job_variables_are_passed_to_the_job)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"python", "train.py", NULL});
    spec_add_env(&s, "WANDB_PROJECT", "resnet");
    spec_add_env(&s, "OMP_NUM_THREADS", "8");
    spec_add_env(&s, "EMPTY", "");
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, TWO_GPUS, &ctx);
    assert_env(l, "WANDB_PROJECT", "resnet");
    assert_env(l, "OMP_NUM_THREADS", "8");
    assert_env(l, "EMPTY", "");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, job_variables_cannot_override_the_contract)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"python", "train.py", NULL});
    s.tasks_per_node = 2;
    spec_add_env(&s, "CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7");
    spec_add_env(&s, "NVIDIA_VISIBLE_DEVICES", "all");
    spec_add_env(&s, "SHOAL_JOB_ID", "1");
    spec_add_env(&s, "WORLD_SIZE", "1000");
    spec_add_env(&s, "MASTER_ADDR", "evil.example.com");
    spec_add_env(&s, "RANK", "99");
    spec_add_env(&s, "LOCAL_RANK", "99");
    spec_add_env(&s, "KEEP_ME", "yes");
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, TWO_GPUS, &ctx);
    assert_env(l, "CUDA_VISIBLE_DEVICES", "GPU-1111,GPU-2222");
    assert_env(l, "NVIDIA_VISIBLE_DEVICES", "GPU-1111,GPU-2222");
    assert_env(l, "SHOAL_JOB_ID", "42");
    assert_env(l, "WORLD_SIZE", "2");
    assert_env(l, "MASTER_ADDR", "10.0.0.1");
    /* The shim sets RANK and LOCAL_RANK per task; the job's are dropped so
     * they cannot shadow the shim's. */
    cr_assert_eq(env_count(l, "RANK"), 0);
    cr_assert_eq(env_count(l, "LOCAL_RANK"), 0);
    assert_env(l, "KEEP_ME", "yes");
    json_decref(l);
    job_spec_fini(&s);
}

/* A job's PATH replaces the default one: a second PATH entry would be
 * read by some programs (getenv takes the first) and not others. */
Test(launch, job_path_replaces_the_default_path)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"train", NULL});
    spec_add_env(&s, "PATH", "/opt/conda/bin:/usr/bin");
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    cr_assert_eq(env_count(l, "PATH"), 1);
    assert_env(l, "PATH", "/opt/conda/bin:/usr/bin");
    json_decref(l);
    job_spec_fini(&s);
}

/* ---- user, ranks, cgroup ---- */

Test(launch, user_is_switched_to_only_when_the_agent_runs_as_root)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"id", NULL});
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    cr_assert_null(json_string_value(json_object_get(l, "user")),
                   "an unprivileged agent cannot switch users");
    json_decref(l);
    ctx.as_root = true;
    l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    cr_assert_str_eq(json_string_value(json_object_get(l, "user")), "alice");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, ranks_come_from_the_node_and_the_tasks_per_node)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"mpirun", NULL});
    s.nodes = 4;
    s.tasks_per_node = 8;
    const char *const nodes[] = {"a", "b", "c", "d", NULL};
    struct launch_ctx ctx = ctx_make();
    for (int r = 0; r < 4; r++) {
        json_t *l = launch_one(&s, r, nodes, TWO_GPUS, &ctx);
        cr_assert_eq(int_field(l, "tasks"), 8);
        cr_assert_eq(int_field(l, "node_rank"), r);
        cr_assert_eq(int_field(l, "world_size"), 32);
        json_decref(l);
    }
    job_spec_fini(&s);
}

Test(launch, batch_job_runs_once_on_its_first_node_and_holds_the_others)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){NULL});
    s.script = xstrdup("#!/bin/sh\nsrun hostname\n");
    s.batch = true;
    s.nodes = 3;
    s.tasks_per_node = 4;
    const char *const nodes[] = {"a", "b", "c", NULL};
    struct launch_ctx ctx = ctx_make();
    for (int r = 0; r < 3; r++) {
        json_t *l = launch_one(&s, r, nodes, TWO_GPUS, &ctx);
        /* The script once, on the first node, as one process of one. */
        cr_assert_eq(int_field(l, "tasks"), r == 0 ? 1 : 0);
        cr_assert_eq(int_field(l, "world_size"), 1);
        assert_env(l, "WORLD_SIZE", "1");
        /* ... with the whole allocation's variables. */
        assert_env(l, "SLURM_NTASKS", "12");
        assert_env(l, "SLURM_NNODES", "3");
        json_decref(l);
    }
    job_spec_fini(&s);
}

Test(launch, slurm_scripts_find_the_variables_they_read)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"true", NULL});
    s.submit_dir = xstrdup("/home/alice/exp");
    s.cpus = 8;
    s.tasks_per_node = 2;
    s.mem = 4ULL << 30;
    s.array = xstrdup("3-9:3%2");
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, TWO_GPUS, &ctx);
    assert_env(l, "SLURM_SUBMIT_DIR", "/home/alice/exp");
    assert_env(l, "SLURM_CPUS_ON_NODE", "8");
    assert_env(l, "SLURM_CPUS_PER_TASK", "4");
    assert_env(l, "SLURM_GPUS_PER_NODE", "2");
    assert_env(l, "SLURM_MEM_PER_NODE", "4096");
    assert_env(l, "SLURM_ARRAY_TASK_COUNT", "3");
    assert_env(l, "SLURM_ARRAY_TASK_MIN", "3");
    assert_env(l, "SLURM_ARRAY_TASK_MAX", "9");
    assert_env(l, "SLURMD_NODENAME", "gpu01");
    /* UUIDs under their own name; CUDA_VISIBLE_DEVICES keeps the
     * contract's (ARCHITECTURE.md). */
    assert_env(l, "SHOAL_GPU_UUIDS", "GPU-1111,GPU-2222");
    assert_env(l, "CUDA_VISIBLE_DEVICES", "GPU-1111,GPU-2222");
    /* No partition in the spec: none in the job. */
    cr_assert_null(env_get(l, "SLURM_JOB_PARTITION"));
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, steps_put_srun_first_on_path_and_name_the_socket)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){NULL});
    s.script = xstrdup("#!/bin/sh\nsrun true\n");
    s.batch = true;
    s.nodes = 2;
    spec_add_env(&s, "PATH", "/opt/conda/bin:/usr/bin");
    const char *const nodes[] = {"a", "b", NULL};
    struct launch_ctx ctx = ctx_make();
    ctx.step_socket = "/var/lib/shoal/step.sock";
    ctx.step_bin_dir = "/var/lib/shoal/bin";
    ctx.step_program = "/usr/bin/shoal-step";
    json_t *l = launch_one(&s, 0, nodes, TWO_GPUS, &ctx);
    assert_env(l, "PATH", "/var/lib/shoal/bin:/opt/conda/bin:/usr/bin");
    assert_env(l, "SHOAL_STEP_SOCKET", "/var/lib/shoal/step.sock");
    cr_assert_str_eq(argv_at(l, 0), RUN_DIR "/script");
    json_decref(l);
    /* The other node runs the step server, not the script. */
    l = launch_one(&s, 1, nodes, TWO_GPUS, &ctx);
    cr_assert_eq(int_field(l, "tasks"), 1);
    cr_assert_str_eq(argv_at(l, 0), "/usr/bin/shoal-step");
    cr_assert_str_eq(argv_at(l, 1), "--serve");
    cr_assert_null(json_string_value(json_object_get(l, "script")));
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, cgroup_key_names_the_job_and_attempt)
{
    char buf[64];
    launch_cgroup_key(42, 0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "job-42-0");
    launch_cgroup_key(18446744073709551615ULL, 3, buf, sizeof(buf));
    cr_assert_str_eq(buf, "job-18446744073709551615-3");
    char small[6];
    launch_cgroup_key(12345, 1, small, sizeof(small));
    cr_assert_str_eq(small, "job-1", "a short buffer is cut, not overrun");
}

Test(launch, launch_carries_the_cgroup_parent_and_key_of_the_attempt)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"true", NULL});
    struct launch_ctx ctx = ctx_make();
    ctx.cg_parent = "shoal.slice";
    json_t *w = work_make(7, 3, 0, ONE_NODE, NO_GPUS, &s);
    struct sh_error err = {0};
    json_t *l = launch_from_work(w, &ctx, &err);
    cr_assert_not_null(l, "%s", err.msg);
    cr_assert_str_eq(json_string_value(json_object_get(l, "cgroup_parent")),
                     "shoal.slice");
    cr_assert_str_eq(json_string_value(json_object_get(l, "cgroup_key")),
                     "job-7-3");
    json_decref(l);
    json_decref(w);
    ctx.cg_parent = NULL;
    w = work_make(7, 3, 0, ONE_NODE, NO_GPUS, &s);
    l = launch_from_work(w, &ctx, &err);
    cr_assert_not_null(l, "%s", err.msg);
    cr_assert(json_is_null(json_object_get(l, "cgroup_parent")));
    json_decref(l);
    json_decref(w);
    job_spec_fini(&s);
}

/* ---- the stop deadline ---- */

/* Every job learns its grace and where its deadline will appear; the file
 * is in the run folder (the agent's), and the job cannot point it
 * elsewhere. */
Test(launch, job_learns_its_grace_and_where_its_deadline_appears)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"python", "train.py", NULL});
    spec_add_env(&s, "SHOAL_PREEMPT_DEADLINE", "/tmp/mine");
    spec_add_env(&s, "SHOAL_PREEMPT_GRACE", "3600");
    struct launch_ctx ctx = ctx_make();
    json_t *w = work_make(42, 0, 0, ONE_NODE, TWO_GPUS, &s);
    json_object_set_new(w, "grace_s", json_integer(30));
    struct sh_error err = {0};
    json_t *l = launch_from_work(w, &ctx, &err);
    cr_assert_not_null(l, "%s", err.msg);
    assert_env(l, "SHOAL_PREEMPT_GRACE", "30");
    assert_env(l, "SHOAL_PREEMPT_DEADLINE", RUN_DIR "/preempt-deadline");
    json_decref(l);
    json_decref(w);
    job_spec_fini(&s);
}

Test(launch, grace_is_the_controllers_or_the_default)
{
    json_t *w = json_object();
    cr_assert_eq(launch_grace_s(w), LAUNCH_DEFAULT_GRACE_S, "absent");
    json_object_set_new(w, "grace_s", json_integer(0));
    cr_assert_eq(launch_grace_s(w), 0, "0 kills at once");
    json_object_set_new(w, "grace_s", json_integer(45));
    cr_assert_eq(launch_grace_s(w), 45);
    json_object_set_new(w, "grace_s", json_integer(-5));
    cr_assert_eq(launch_grace_s(w), LAUNCH_DEFAULT_GRACE_S, "negative");
    json_object_set_new(w, "grace_s", json_string("30"));
    cr_assert_eq(launch_grace_s(w), LAUNCH_DEFAULT_GRACE_S, "not a number");
    json_object_set_new(w, "grace_s", json_integer(1LL << 40));
    cr_assert_eq(launch_grace_s(w), LAUNCH_DEFAULT_GRACE_S, "overflows");
    json_decref(w);
}

/* The SIGKILL falls on a whole second, never before now + grace, so the
 * second the job reads is the moment it is killed. */
Test(launch, kill_time_is_now_plus_grace_rounded_up_to_a_second)
{
    cr_assert_eq(launch_kill_at_ms(1764640000000LL, 10), 1764640010000LL);
    cr_assert_eq(launch_kill_at_ms(1764640000001LL, 10), 1764640011000LL);
    cr_assert_eq(launch_kill_at_ms(1764640000999LL, 3), 1764640004000LL);
    cr_assert_eq(launch_kill_at_ms(1764640000500LL, 0), 1764640001000LL);
    cr_assert_eq(launch_kill_at_ms(1764640000500LL, -4), 1764640001000LL,
                 "a negative grace is none");
}

Test(launch, deadline_file_holds_the_unix_second_on_one_line)
{
    char buf[32];
    cr_assert_eq(launch_deadline_text(1764640010000LL, buf, sizeof(buf)), 11);
    cr_assert_str_eq(buf, "1764640010\n");
    cr_assert_eq(launch_deadline_text(1764640010999LL, buf, sizeof(buf)), 11);
    cr_assert_str_eq(buf, "1764640010\n", "rounded down");
    cr_assert_eq(launch_deadline_text(-1500, buf, sizeof(buf)), 3);
    cr_assert_str_eq(buf, "-2\n");
    char small[11];
    cr_assert_eq(launch_deadline_text(1764640010000LL, small, sizeof(small)),
                 -1, "no room for the newline");
}

/* ---- refusals ---- */

static void assert_bad_ranks(json_t *w)
{
    struct launch_ctx ctx = ctx_make();
    struct sh_error err = {0};
    cr_assert_null(launch_from_work(w, &ctx, &err));
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert(strstr(err.msg, "ranks") != NULL, "%s", err.msg);
    json_decref(w);
}

Test(launch, node_rank_outside_the_node_list_is_refused)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"true", NULL});
    const char *const two[] = {"a", "b", NULL};
    assert_bad_ranks(work_make(1, 0, 2, two, NO_GPUS, &s));
    assert_bad_ranks(work_make(1, 0, -1, two, NO_GPUS, &s));
    assert_bad_ranks(work_make(1, 0, 0, NO_GPUS, NO_GPUS, &s));
    job_spec_fini(&s);
}

Test(launch, tasks_per_node_out_of_range_is_refused)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"true", NULL});
    s.tasks_per_node = 0;
    assert_bad_ranks(work_make(1, 0, 0, ONE_NODE, NO_GPUS, &s));
    s.tasks_per_node = JOB_TASKS_PER_NODE_MAX + 1;
    assert_bad_ranks(work_make(1, 0, 0, ONE_NODE, NO_GPUS, &s));
    s.tasks_per_node = JOB_TASKS_PER_NODE_MAX;
    struct launch_ctx ctx = ctx_make();
    json_t *l = launch_one(&s, 0, ONE_NODE, NO_GPUS, &ctx);
    cr_assert_eq(int_field(l, "tasks"), JOB_TASKS_PER_NODE_MAX);
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, work_entry_without_a_spec_is_refused)
{
    json_t *w = json_pack("{s:I, s:i, s:i, s:[s], s:[]}", "id", (json_int_t)1,
                          "attempt", 0, "node_rank", 0, "nodes", "a", "gpus");
    struct launch_ctx ctx = ctx_make();
    struct sh_error err = {0};
    cr_assert_null(launch_from_work(w, &ctx, &err));
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert(strstr(err.msg, "spec") != NULL, "%s", err.msg);
    json_decref(w);
}

/* ---- MPS on time-sliced GPUs ---- */

/* A node with three GPUs: GPU-shared is time-sliced in quarters, GPU-whole
 * is whole, GPU-mig holds a MIG slice. */
static void node_gpus(struct gpu_info g[3])
{
    memset(g, 0, 3 * sizeof(*g));
    snprintf(g[0].uuid, sizeof(g[0].uuid), "GPU-shared");
    g[0].mem_total = 80ULL << 30;
    g[0].nslices = 4;
    for (int i = 0; i < 4; i++) {
        struct gpu_slice *sl = &g[0].slices[i];
        sl->kind = GPU_SLICE_SHARED;
        snprintf(sl->profile, sizeof(sl->profile), "shared/4");
        snprintf(sl->uuid, sizeof(sl->uuid), "GPU-shared");
        sl->mem_bytes = 20ULL << 30;
        sl->gi_id = -1;
        sl->ci_id = -1;
        sl->share_num = 1;
        sl->share_den = 4;
    }
    g[1].index = 1;
    snprintf(g[1].uuid, sizeof(g[1].uuid), "GPU-whole");
    g[1].mem_total = 80ULL << 30;
    g[2].index = 2;
    snprintf(g[2].uuid, sizeof(g[2].uuid), "GPU-mig");
    g[2].mig_enabled = true;
    g[2].nslices = 1;
    g[2].slices[0].kind = GPU_SLICE_MIG;
    snprintf(g[2].slices[0].profile, sizeof(g[2].slices[0].profile), "3g.40gb");
    snprintf(g[2].slices[0].uuid, sizeof(g[2].slices[0].uuid), "MIG-aaaa");
    g[2].slices[0].mem_bytes = 40ULL << 30;
    g[2].slices[0].share_num = 3;
    g[2].slices[0].share_den = 7;
}

static json_t *launch_on(const char *gpu_uuid, bool mps,
                         const struct gpu_info *gpus)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"python", "infer.py", NULL});
    struct launch_ctx ctx = ctx_make();
    ctx.gpus = gpus;
    ctx.ngpus = 3;
    ctx.mps = mps;
    const char *const one[] = {gpu_uuid, NULL};
    json_t *l = launch_one(&s, 0, ONE_NODE, one, &ctx);
    job_spec_fini(&s);
    return l;
}

Test(launch, time_slice_under_mps_is_fenced_to_its_share)
{
    struct gpu_info g[3];
    node_gpus(g);
    json_t *l = launch_on("GPU-shared", true, g);
    assert_env(l, "CUDA_VISIBLE_DEVICES", "GPU-shared");
    assert_env(l, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25");
    assert_env(l, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=20480M");
    json_decref(l);
}

Test(launch, time_slice_without_mps_gets_no_mps_variables)
{
    struct gpu_info g[3];
    node_gpus(g);
    json_t *l = launch_on("GPU-shared", false, g);
    assert_env(l, "CUDA_VISIBLE_DEVICES", "GPU-shared");
    cr_assert_null(env_get(l, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
    cr_assert_null(env_get(l, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
    json_decref(l);
}

Test(launch, whole_and_mig_gpus_get_no_mps_variables_even_under_mps)
{
    struct gpu_info g[3];
    node_gpus(g);
    /* A whole GPU, a MIG slice, the parent of the MIG slice (its slice is
     * not time-shared) and a GPU the agent does not know. */
    const char *uuids[] = {"GPU-whole", "MIG-aaaa", "GPU-mig", "GPU-unknown"};
    for (int i = 0; i < 4; i++) {
        json_t *l = launch_on(uuids[i], true, g);
        assert_env(l, "CUDA_VISIBLE_DEVICES", uuids[i]);
        cr_assert_null(env_get(l, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "%s",
                       uuids[i]);
        cr_assert_null(env_get(l, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "%s",
                       uuids[i]);
        json_decref(l);
    }
}

/* On a time-slice fenced by MPS, the job's own CUDA_MPS_* values do not
 * stand beside the fence's: getenv would take the first and the job would
 * escape its share. */
Test(launch, job_variables_cannot_lift_the_mps_fence)
{
    struct gpu_info g[3];
    node_gpus(g);
    struct job_spec s;
    spec_make(&s, (const char *const[]){"python", "infer.py", NULL});
    spec_add_env(&s, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100");
    spec_add_env(&s, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=81920M");
    struct launch_ctx ctx = ctx_make();
    ctx.gpus = g;
    ctx.ngpus = 3;
    ctx.mps = true;
    const char *const one[] = {"GPU-shared", NULL};
    json_t *l = launch_one(&s, 0, ONE_NODE, one, &ctx);
    cr_assert_eq(env_count(l, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 1);
    cr_assert_eq(env_count(l, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), 1);
    assert_env(l, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25");
    assert_env(l, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=20480M");
    json_decref(l);
    job_spec_fini(&s);
}

Test(launch, image_job_carries_its_container_and_keeps_the_image_path)
{
    struct job_spec s;
    spec_make(&s, (const char *const[]){"python", "train.py", NULL});
    s.container.image = xstrdup("registry.example.com/team/train:1.4");
    s.container.env = calloc(1, sizeof(*s.container.env));
    cr_assert_not_null(s.container.env);
    s.container.env[0].key = xstrdup("HF_HOME");
    s.container.env[0].value = xstrdup("/scratch/hf");
    s.container.nenv = 1;
    spec_add_env(&s, "SHOAL_JOB_ID", "forged");
    struct launch_ctx ctx = ctx_make();
    ctx.image_cache_dir = "/var/lib/shoal/images";
    ctx.image_cache_size = 1 << 30;
    ctx.image_tls_verify = true;
    json_t *l = launch_one(&s, 0, ONE_NODE, TWO_GPUS, &ctx);
    const json_t *c = json_object_get(l, "container");
    cr_assert_not_null(c);
    cr_assert_str_eq(json_string_value(json_object_get(c, "transport")),
                     "docker://registry.example.com/team/train:1.4");
    cr_assert_str_eq(json_string_value(json_object_get(c, "cache_dir")),
                     "/var/lib/shoal/images");
    /* No default PATH over the image's; container_env in; the contract
     * still wins. */
    cr_assert_eq(env_count(l, "PATH"), 0);
    assert_env(l, "HF_HOME", "/scratch/hf");
    assert_env(l, "SHOAL_JOB_ID", "42");
    json_decref(l);
    job_spec_fini(&s);
}
