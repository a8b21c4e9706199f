/* SPDX-License-Identifier: Apache-2.0 */
/* #SBATCH lines: Slurm's meaning of each option Shoal has, and an error
 * naming every option it does not have. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd_export.h"
#include "cmd/cmd_sbatch.h"

/* Apply lines (each a NULL-terminated word list) and finish. */
static int apply(json_t *job, const char *const *lines[], struct sh_error *err)
{
    struct sbatch sb;
    sbatch_init(&sb);
    for (int i = 0; lines[i]; i++) {
        char *w[16];
        int n = 0;
        while (lines[i][n]) {
            w[n] = (char *)lines[i][n];
            n++;
        }
        if (sbatch_apply_words(job, w, n, &sb, err) < 0)
            return -1;
    }
    return sbatch_finish(job, &sb, err);
}

static long long num(json_t *job, const char *k)
{
    return json_integer_value(json_object_get(job, k));
}

Test(sbatch, a_slurm_script_header_means_what_slurm_says)
{
    static const char *const l1[] = {"--gres=gpu:2", NULL};
    static const char *const l2[] = {"-N", "2", "--time=1-02:30", NULL};
    static const char *const l3[] = {"-J", "train", "--mem=16G", NULL};
    static const char *const l4[] = {"--ntasks=4", "-c", "8", NULL};
    static const char *const l5[] = {"--dependency=afterok:7", "-H", NULL};
    static const char *const l6[] = {"-A", "vision", "--requeue",
                                     "--array=0-3%2", NULL};
    static const char *const *lines[] = {l1, l2, l3, l4, l5, l6, NULL};
    json_t *job = json_object();
    struct sh_error err = {0};
    cr_assert_eq(apply(job, lines, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "gpus"), 2);
    cr_assert_eq(num(job, "nodes"), 2);
    cr_assert_eq(num(job, "time_limit"), 86400 + 2 * 3600 + 30 * 60);
    cr_assert_str_eq(json_string_value(json_object_get(job, "name")), "train");
    cr_assert_eq(num(job, "mem"), 16LL << 30);
    cr_assert_eq(num(job, "tasks_per_node"), 2); /* 4 tasks on 2 nodes */
    cr_assert_eq(num(job, "cpus"), 16);          /* 8 per task x 2 */
    cr_assert_str_eq(json_string_value(json_object_get(job, "dependency")),
                     "afterok:7");
    cr_assert(json_is_true(json_object_get(job, "hold")));
    cr_assert_str_eq(json_string_value(json_object_get(job, "project")),
                     "vision");
    cr_assert(json_is_true(json_object_get(job, "requeue")));
    cr_assert_str_eq(json_string_value(json_object_get(job, "array")), "0-3%2");
    json_decref(job);
}

Test(sbatch, gpu_forms_and_times)
{
    static const char *const a[] = {"--gres=gpu:A100-80GB:4", NULL};
    static const char *const *la[] = {a, NULL};
    json_t *job = json_object();
    struct sh_error err = {0};
    cr_assert_eq(apply(job, la, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "gpus"), 4);
    cr_assert_str_eq(json_string_value(json_object_get(job, "gpu_type")),
                     "A100-80GB");
    json_decref(job);

    static const char *const b[] = {"-N2", "--gpus=16", "-t", "90", NULL};
    static const char *const *lb[] = {b, NULL};
    job = json_object();
    cr_assert_eq(apply(job, lb, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "gpus"), 8);             /* 16 in total on 2 nodes */
    cr_assert_eq(num(job, "time_limit"), 90 * 60); /* minutes */
    json_decref(job);

    static const char *const c[] = {"--gpus-per-node=3", "--time=10:00",
                                    "--mem", "2048", NULL};
    static const char *const *lc[] = {c, NULL};
    job = json_object();
    cr_assert_eq(apply(job, lc, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "gpus"), 3);
    cr_assert_eq(num(job, "time_limit"), 600);   /* M:S */
    cr_assert_eq(num(job, "mem"), 2048LL << 20); /* megabytes */
    json_decref(job);
}

static void refused(const char *const *words, const char *part)
{
    const char *const *lines[] = {words, NULL};
    json_t *job = json_object();
    struct sh_error err = {0};
    cr_assert_lt(apply(job, lines, &err), 0, "%s accepted", words[0]);
    cr_assert(strstr(err.msg, part), "'%s' lacks '%s'", err.msg, part);
    json_decref(job);
}

Test(sbatch, options_shoal_does_not_have_are_named)
{
    static const char *const p[] = {"-p", "gpu,cpu", NULL};
    refused(p, "#SBATCH -p: 'gpu,cpu': give one partition");
    static const char *const a[] = {"--mail-type=TIME_LIMIT_90", NULL};
    refused(a,
            "#SBATCH --mail-type: mail_type: TIME_LIMIT_90 is not supported");
    static const char *const s[] = {"--signal=B:USR1@60", NULL};
    refused(s, "#SBATCH --signal: Shoal sends no signal before the time limit");
    static const char *const z[] = {"--frobnicate", NULL};
    refused(z, "#SBATCH --frobnicate: Shoal has no such option");
    static const char *const g[] = {"--gres=gpu:2,nvme:1", NULL};
    refused(g, "only one gres");
    static const char *const m[] = {"--gres=mps:50", NULL};
    refused(m, "Shoal schedules GPUs only");
    static const char *const r[] = {"-N", "2-4", NULL};
    refused(r, "ranges");
    static const char *const t[] = {"--time=1:2:3:4", NULL};
    refused(t, "not a Slurm time");
    /* Fields are bounded before any arithmetic (found by fuzzing). */
    static const char *const big[] = {"-t", "2-0:00:0222222222222222222222",
                                      NULL};
    refused(big, "is not a time of 1 s..366 days");
    static const char *const days[] = {"--time=9999999-0", NULL};
    refused(days, "not a Slurm time");
    static const char *const v[] = {"--mem=12X", NULL};
    refused(v, "not a size");
    static const char *const e[] = {"--export=NONE,FOO", NULL};
    refused(e, "NONE goes alone");
    static const char *const n[] = {"--gpus=3", "-N", "2", NULL};
    refused(n, "do not split evenly");
    static const char *const x[] = {"--time", NULL};
    refused(x, "needs a value");
    static const char *const y[] = {"gpu:2", NULL};
    refused(y, "'gpu:2' is not an option");
}

Test(sbatch, node_wishes_mean_what_slurm_says)
{
    static const char *const a[] = {"-w", "gpu01,gpu02", "--exclude=gpu03",
                                    NULL};
    static const char *const b[] = {"-C", "a100&ib", "--exclusive", NULL};
    static const char *const *lines[] = {a, b, NULL};
    json_t *job = json_object();
    struct sh_error err = {0};
    cr_assert_eq(apply(job, lines, &err), 0, "%s", err.msg);
    cr_assert_str_eq(json_string_value(json_object_get(job, "nodelist")),
                     "gpu01,gpu02");
    cr_assert_str_eq(json_string_value(json_object_get(job, "exclude")),
                     "gpu03");
    cr_assert_str_eq(json_string_value(json_object_get(job, "constraint")),
                     "a100&ib");
    cr_assert(json_is_true(json_object_get(job, "exclusive")));
    json_decref(job);
    static const char *const x[] = {"--exclusive=user", NULL};
    refused(x, "#SBATCH --exclusive: takes no value");
}

Test(sbatch, begin_becomes_an_absolute_time)
{
    static const char *const a[] = {"--begin=now+1hour", NULL};
    static const char *const *lines[] = {a, NULL};
    json_t *job = json_object();
    struct sh_error err = {0};
    cr_assert_eq(apply(job, lines, &err), 0, "%s", err.msg);
    const char *b = json_string_value(json_object_get(job, "begin"));
    cr_assert_not_null(b);
    cr_assert_eq(strlen(b), 20, "%s", b); /* YYYY-MM-DDTHH:MM:SSZ */
    json_decref(job);
    static const char *const x[] = {"-b", "someday", NULL};
    refused(x, "#SBATCH -b: 'someday' is not a start time");
}

/* --gpus (-G) is Slurm's total: without -N, Shoal picks the nodes. */
Test(sbatch, gpus_without_nodes_is_a_total_the_engine_shapes)
{
    static const char *const a[] = {"-G", "16", NULL};
    static const char *const *la[] = {a, NULL};
    json_t *job = json_object();
    struct sh_error err = {0};
    cr_assert_eq(apply(job, la, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "gpus_total"), 16);
    cr_assert_null(json_object_get(job, "gpus"));
    cr_assert_null(json_object_get(job, "nodes"));
    json_decref(job);
    static const char *const big[] = {"--gpus=128", NULL};
    job = json_object();
    const char *const *lbig[] = {big, NULL};
    cr_assert_eq(apply(job, lbig, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "gpus_total"), 128);
    json_decref(job);
    static const char *const both[] = {"--gpus=4", "--gres=gpu:2", NULL};
    refused(both, "keep one");
}

static const char *envget(json_t *env, const char *k)
{
    return json_string_value(json_object_get(env, k));
}

Test(export, all_sends_the_environment_but_never_the_token_or_the_jobs_own)
{
    char *environ[] = {"PATH=/venv/bin:/usr/bin",
                       "FOO=1",
                       "SHOAL_TOKEN=secret",
                       "SHOAL_URL=http://x",
                       "SLURM_JOB_ID=7",
                       "CUDA_VISIBLE_DEVICES=0",
                       "BASH_FUNC_module%%=() { :; }",
                       "PWD=/home/u",
                       NULL};
    json_t *env = json_pack("{s:s}", "FOO", "from --env");
    struct sh_error err = {0};
    cr_assert_eq(export_env(env, NULL, environ, &err), 0, "%s", err.msg);
    cr_assert_str_eq(envget(env, "PATH"), "/venv/bin:/usr/bin");
    cr_assert_str_eq(envget(env, "FOO"), "from --env"); /* --env wins */
    cr_assert_eq(json_object_size(env), 2);
    json_decref(env);
}

Test(export, none_and_lists)
{
    char *environ[] = {"PATH=/usr/bin", "FOO=1", "BAR=2", NULL};
    json_t *env = json_object();
    struct sh_error err = {0};
    cr_assert_eq(export_env(env, "NONE", environ, &err), 0, "%s", err.msg);
    cr_assert_eq(json_object_size(env), 0);
    cr_assert_eq(export_env(env, "FOO,QUX=a=b,UNSET", environ, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(envget(env, "FOO"), "1");
    cr_assert_str_eq(envget(env, "QUX"), "a=b");
    cr_assert_eq(json_object_size(env), 2); /* no PATH, no BAR */
    json_decref(env);
    env = json_object();
    cr_assert_eq(export_env(env, "ALL,FOO=9", environ, &err), 0, "%s", err.msg);
    cr_assert_str_eq(envget(env, "FOO"), "9");
    cr_assert_str_eq(envget(env, "BAR"), "2");
    cr_assert_lt(export_env(env, "SHOAL_TOKEN", environ, &err), 0);
    cr_assert(strstr(err.msg, "never travels"), "%s", err.msg);
    cr_assert_lt(export_env(env, "1BAD", environ, &err), 0);
    cr_assert_lt(export_env(env, "", environ, &err), 0);
    json_decref(env);
}

Test(export, past_the_limits_is_refused_and_changes_nothing)
{
    static char big[40000];
    memset(big, 'x', sizeof(big) - 1);
    memcpy(big, "BIG=", 4);
    char *environ[] = {"FOO=1", big, NULL};
    json_t *env = json_object();
    struct sh_error err = {0};
    cr_assert_lt(export_env(env, "ALL", environ, &err), 0);
    cr_assert(strstr(err.msg, "BIG is"), "%s", err.msg);
    cr_assert_eq(json_object_size(env), 0);
    json_decref(env);
}

Test(sbatch, tasks_and_gpus_per_task_mean_what_slurm_says)
{
    static const char *const a[] = {"--ntasks=2", "--ntasks-per-node=1", NULL};
    static const char *const *la[] = {a, NULL};
    json_t *job = json_object();
    struct sh_error err = {0};
    cr_assert_eq(apply(job, la, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "nodes"), 2);
    cr_assert_eq(num(job, "tasks_per_node"), 1);
    json_decref(job);
    static const char *const b[] = {"-N", "2", "--tasks-per-node=4",
                                    "--gpus-per-task=2", NULL};
    static const char *const *lb[] = {b, NULL};
    job = json_object();
    cr_assert_eq(apply(job, lb, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "gpus"), 8); /* 2 per task x 4 tasks */
    cr_assert_eq(num(job, "tasks_per_node"), 4);
    json_decref(job);
    static const char *const c[] = {"-n", "4", "--gpus-per-task=a100:1", NULL};
    static const char *const *lc[] = {c, NULL};
    job = json_object();
    cr_assert_eq(apply(job, lc, &err), 0, "%s", err.msg);
    cr_assert_eq(num(job, "gpus"), 4); /* -n without -N: one node */
    cr_assert_str_eq(json_string_value(json_object_get(job, "gpu_type")),
                     "a100");
    json_decref(job);
    static const char *const d[] = {"--ntasks=3", "--ntasks-per-node=2", NULL};
    refused(d, "do not fill whole nodes");
    static const char *const e[] = {"--gpus-per-task=1", "--gres=gpu:2", NULL};
    refused(e, "keep one");
}

Test(sbatch, a_relative_chdir_is_from_the_submit_directory)
{
    static const char *const a[] = {"-D", "runs/a", NULL};
    static const char *const *la[] = {a, NULL};
    json_t *job = json_object();
    struct sh_error err = {0};
    char cwd[4096], want[4200];
    cr_assert(getcwd(cwd, sizeof(cwd)));
    snprintf(want, sizeof(want), "%s/runs/a", cwd);
    cr_assert_eq(apply(job, la, &err), 0, "%s", err.msg);
    cr_assert_str_eq(json_string_value(json_object_get(job, "workdir")), want);
    json_decref(job);
}
