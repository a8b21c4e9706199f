/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal submit`: build a job from options, or from a batch script with
 * `#SHOAL` directive lines (the same options, one or more per line, before
 * the first command of the script), and print the new job's id. Options on
 * the command line override the script's directives. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd_resources.h"
#include "cmd/cmd.h"
#include "cmd/cmd_export.h"
#include "cmd/cmd_opts.h"
#include "cmd/cmd_sbatch.h"
#include "lib/model/job.h"
#include "lib/util/clock.h"
#include "lib/util/parse.h"
#include "lib/util/strbuf.h"

static const char usage[] =
    "Usage: shoal submit [options] -- CMD [ARGS...]\n"
    "       shoal submit [options] SCRIPT [ARGS...]\n"
    "Submit a job and print its id. A SCRIPT may hold '#SHOAL <options>'\n"
    "lines before its first command; options given here override them.\n"
    "\n"
    "  -g, --gpus N           GPUs per node (default 0)\n"
    "  -N, --nodes N          nodes, all started together (default 1)\n"
    "      --gpus-total N     N GPUs in all: Shoal picks the shape, the\n"
    "                         fewest nodes that hold them with the same\n"
    "                         count on each (not with --gpus, --nodes)\n"
    "      --gpu-type MODEL   GPU model, e.g. H100-80GB\n"
    "      --slice PROFILE    a GPU slice: a MIG profile (1g.10gb) or shared\n"
    "      --gpu-mem SIZE     the smallest GPU or slice with this memory\n"
    "  -p, --project NAME     project to charge (default: your default)\n"
    "      --priority CLASS   high, normal or low (default normal)\n"
    "      --partition NAME   a partition an admin defined (shoal partition\n"
    "                         list): its nodes and time limits; without it,\n"
    "                         the default partition when there is one\n"
    "      --qos NAME         a QOS an admin defined (shoal qos list): its\n"
    "                         priority class and time limit\n"
    "      --mail-type LIST   BEGIN, END, FAIL, REQUEUE, INVALID_DEPEND, ALL:\n"
    "                         the cluster's notification command is run\n"
    "                         then (refused where an admin set none)\n"
    "      --mail-user ADDR   who is notified (default: you)\n"
    "  -t, --time DUR         time limit: 90s, 30m, 2h, 1d, HH:MM:SS\n"
    "  -c, --cpus N           CPUs per node\n"
    "      --cpus-per-task N  ... N x --tasks-per-node\n"
    "      --cpus-per-gpu N   ... N x GPUs per node\n"
    "  -m, --mem SIZE         memory per node: 512M, 16G\n"
    "      --mem-per-gpu SIZE ... SIZE x GPUs per node\n"
    "      --mem-per-cpu SIZE ... SIZE x CPUs per node\n"
    "                         (none given: the cluster's default share)\n"
    "  -v, --volume NAME:PATH[:ro]  mount a volume (repeatable; see shoal "
    "volume)\n"
    "  -n, --name NAME        job name\n"
    "  -e, --env K=V          set a variable in the job; K alone copies yours\n"
    "                         (repeatable)\n"
    "      --export LIST      your variables the job gets, as Slurm's: ALL\n"
    "                         (the default: your whole environment, PATH\n"
    "                         included, but never SHOAL_TOKEN), NONE, or\n"
    "                         [ALL,]VAR,VAR=VALUE,... (without ALL: only\n"
    "                         these); --env entries win; with --image the\n"
    "                         default is NONE (the image's environment),\n"
    "                         and with --user too\n"
    "      --requeue          requeue after preemption or node failure\n"
    "      --checkpointable   the job saves its state on SIGTERM and resumes\n"
    "                         from it: the las policy may preempt it (implies\n"
    "                         --requeue)\n"
    "  -d, --dependency LIST  run after other jobs: afterok:ID[:ID...],\n"
    "                         afterany:ID, afternotok:ID, singleton\n"
    "                         (comma-separated, all must hold); an array's\n"
    "                         ID means every task of it, ID_N task N\n"
    "      --hold             submit held: it starts after shoal release\n"
    "  -a, --array SPEC       one job per task: 0-99, 1,3,5-7, 0-98:2, with\n"
    "                         %M for at most M running or queued at once\n"
    "                         (SHOAL_ARRAY_TASK_ID tells a task its index)\n"
    "  -w, --nodelist A,B     run on exactly these nodes (as many as --nodes;\n"
    "                         without --nodes, one per name)\n"
    "  -x, --exclude A,B      never on these nodes\n"
    "  -C, --constraint EXPR  only nodes whose labels match: NAME, KEY=VALUE,\n"
    "                         A&B (both), A|B (either; '&' binds first)\n"
    "      --exclusive        whole nodes: waits for idle nodes and shares\n"
    "                         them with no other job while it runs\n"
    "  -o, --output PATTERN   write the job's stdout (and stderr, without\n"
    "                         --error) to this file on each node, as you:\n"
    "                         %j job id, %A array id, %a task index,\n"
    "                         %x name, %u user, %N node, %% a percent sign\n"
    "                         (relative to the working directory)\n"
    "      --error PATTERN    write stderr to this file (same escapes)\n"
    "  -b, --begin TIME       not before TIME: now+30m, now+2hours, HH:MM,\n"
    "                         YYYY-MM-DD[THH:MM[:SS]], midnight, noon,\n"
    "                         teatime, tomorrow (local time)\n"
    "      --tasks-per-node N processes per node, each with its own ranks\n"
    "  -D, --workdir DIR      working directory, absolute or from the\n"
    "                         current one (default: the current one;\n"
    "                         not with --image)\n"
    "      --image REF        run in an OCI image: oci-archive:PATH,\n"
    "                         oci:DIR:TAG or registry/name:tag\n"
    "      --container-mounts SRC:DST[:ro][,...]  bind node paths into the\n"
    "                         image (repeatable)\n"
    "      --container-workdir DIR  working directory inside the image\n"
    "                         (default: the image's own)\n"
    "      --container-env K=V  set a variable inside the image; K alone\n"
    "                         copies yours (repeatable)\n"
    "      --user NAME        submit for another user (cluster admins)\n"
    "      --json             print the whole job as JSON\n"
    "  -h, --help             show this help\n";

enum {
    OPT_GPU_TYPE = 256,
    OPT_SLICE,
    OPT_GPU_MEM,
    OPT_PRIORITY,
    OPT_REQUEUE,
    OPT_CHECKPOINTABLE,
    OPT_TASKS,
    OPT_USER,
    OPT_JSON,
    OPT_HOLD,
    OPT_EXCLUSIVE,
    OPT_IMAGE,
    OPT_CMOUNTS,
    OPT_CWORKDIR,
    OPT_CENV,
    OPT_ERROR,
    OPT_GPUS_TOTAL,
    OPT_EXPORT,
    OPT_PARTITION,
    OPT_QOS,
    OPT_MAIL_TYPE,
    OPT_MAIL_USER,
    OPT_CPUS_PER_TASK,
    OPT_CPUS_PER_GPU,
    OPT_MEM_PER_GPU,
    OPT_MEM_PER_CPU,
};

static const struct option opts[] = {
    {"gpus", required_argument, NULL, 'g'},
    {"nodes", required_argument, NULL, 'N'},
    {"gpus-total", required_argument, NULL, OPT_GPUS_TOTAL},
    {"gpu-type", required_argument, NULL, OPT_GPU_TYPE},
    {"slice", required_argument, NULL, OPT_SLICE},
    {"gpu-mem", required_argument, NULL, OPT_GPU_MEM},
    {"project", required_argument, NULL, 'p'},
    {"priority", required_argument, NULL, OPT_PRIORITY},
    {"time", required_argument, NULL, 't'},
    {"cpus", required_argument, NULL, 'c'},
    {"mem", required_argument, NULL, 'm'},
    {"cpus-per-task", required_argument, NULL, OPT_CPUS_PER_TASK},
    {"cpus-per-gpu", required_argument, NULL, OPT_CPUS_PER_GPU},
    {"mem-per-gpu", required_argument, NULL, OPT_MEM_PER_GPU},
    {"mem-per-cpu", required_argument, NULL, OPT_MEM_PER_CPU},
    {"volume", required_argument, NULL, 'v'},
    {"name", required_argument, NULL, 'n'},
    {"env", required_argument, NULL, 'e'},
    {"export", required_argument, NULL, OPT_EXPORT},
    {"partition", required_argument, NULL, OPT_PARTITION},
    {"qos", required_argument, NULL, OPT_QOS},
    {"mail-type", required_argument, NULL, OPT_MAIL_TYPE},
    {"mail-user", required_argument, NULL, OPT_MAIL_USER},
    {"requeue", no_argument, NULL, OPT_REQUEUE},
    {"checkpointable", no_argument, NULL, OPT_CHECKPOINTABLE},
    {"dependency", required_argument, NULL, 'd'},
    {"hold", no_argument, NULL, OPT_HOLD},
    {"array", required_argument, NULL, 'a'},
    {"nodelist", required_argument, NULL, 'w'},
    {"exclude", required_argument, NULL, 'x'},
    {"constraint", required_argument, NULL, 'C'},
    {"exclusive", no_argument, NULL, OPT_EXCLUSIVE},
    {"begin", required_argument, NULL, 'b'},
    {"output", required_argument, NULL, 'o'},
    {"error", required_argument, NULL, OPT_ERROR},
    {"tasks-per-node", required_argument, NULL, OPT_TASKS},
    {"workdir", required_argument, NULL, 'D'},
    {"image", required_argument, NULL, OPT_IMAGE},
    {"container-image", required_argument, NULL, OPT_IMAGE},
    {"container-mounts", required_argument, NULL, OPT_CMOUNTS},
    {"container-workdir", required_argument, NULL, OPT_CWORKDIR},
    {"container-env", required_argument, NULL, OPT_CENV},
    {"user", required_argument, NULL, OPT_USER},
    {"json", no_argument, NULL, OPT_JSON},
    {NULL, 0, NULL, 0},
};

struct submit {
    json_t *job; /* the request being built */
    bool json_out;
    const char *where; /* "command line" or "SCRIPT:LINE" for errors */
    bool in_script;    /* reading #SHOAL lines, not the command line */
    struct sh_error err;
    /* Reading a script: every bad directive, one per line ("PATH:LINE:
     * message"), so one answer names them all. */
    struct strbuf *problems;
    int nproblems;
};

/* Keep s->err as one of the script's problems. */
static void keep_problem(struct submit *s)
{
    if (s->problems && s->nproblems < 64)
        strbuf_appendf(s->problems, "%s  %s", s->nproblems ? "\n" : "",
                       s->err.msg);
    s->nproblems++;
}

static int fail(struct submit *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Put the message in s->err ("SCRIPT:LINE: " in front for a directive) and
 * return -1; the caller passes the failure up and cmd_submit dies with it. */
static int fail(struct submit *s, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (s->in_script)
        return sh_errorf(&s->err, SH_EINVAL, "%s: %s", s->where, msg);
    return sh_errorf(&s->err, SH_EINVAL, "%s", msg);
}

/* --begin as Slurm writes it, sent as an absolute UTC time. */
static int set_begin(struct submit *s, const char *arg)
{
    int64_t ms;
    char iso[32];
    struct sh_error err;
    if (clock_parse_begin("--begin", arg, clock_wall_ms(), &ms, &err) < 0)
        return fail(s, "%s", err.msg);
    clock_format_iso(ms, iso, sizeof(iso));
    json_object_set_new(s->job, "begin", json_string(iso));
    return 0;
}

static int set_env(struct submit *s, const char *field, const char *arg)
{
    json_t *env = json_object_get(s->job, field);
    if (!env) {
        env = json_object();
        json_object_set_new(s->job, field, env); /* steals env */
    }
    const char *eq = strchr(arg, '=');
    char key[257];
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    if (n == 0 || n >= sizeof(key))
        return fail(s, "--%s '%s' must be NAME=VALUE or NAME",
                    strcmp(field, "env") == 0 ? "env" : "container-env", arg);
    memcpy(key, arg, n);
    key[n] = '\0';
    const char *value = eq ? eq + 1 : getenv(key);
    if (!value)
        return fail(s, "--%s %s: no such variable in your environment",
                    strcmp(field, "env") == 0 ? "env" : "container-env", key);
    json_object_set_new(env, key, json_string(value));
    return 0;
}

static int add_volume(struct submit *s, const char *arg)
{
    json_t *vols = json_object_get(s->job, "volumes");
    if (!vols) {
        vols = json_array();
        json_object_set_new(s->job, "volumes", vols); /* steals vols */
    }
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || colon[1] != '/')
        return fail(s, "--volume '%s' must be NAME:/PATH[:ro]", arg);
    json_array_append_new(vols, json_string(arg));
    return 0;
}

/* --container-mounts SRC:DST[:ro], several joined by commas (as pyxis
 * takes them); the controller checks each. */
static int add_container_mounts(struct submit *s, const char *arg)
{
    json_t *mounts = json_object_get(s->job, "container_mounts");
    if (!mounts) {
        mounts = json_array();
        json_object_set_new(s->job, "container_mounts", mounts);
    }
    for (const char *p = arg; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == 0 || !memchr(p, ':', n))
            return fail(s, "--container-mounts '%s' must be SRC:DST[:ro]", arg);
        json_array_append_new(mounts, json_stringn(p, n));
        p += n + (comma ? 1 : 0);
    }
    return 0;
}

static int set_int(struct submit *s, const char *key, const char *opt,
                   const char *arg, long long max)
{
    int64_t v;
    struct sh_error err;
    if (parse_int64(opt, arg, 0, max, &v, &err) < 0)
        return fail(s, "%s", err.msg);
    json_object_set_new(s->job, key, json_integer(v));
    return 0;
}

static int set_size(struct submit *s, const char *key, const char *opt,
                    const char *arg)
{
    uint64_t v;
    struct sh_error err;
    if (parse_size(opt, arg, &v, &err) < 0)
        return fail(s, "%s", err.msg);
    json_object_set_new(s->job, key, json_integer((json_int_t)v));
    return 0;
}

/* One option into s->job. 0, or -1 with s->err filled. */
static int apply(struct submit *s, int c, const char *arg)
{
    struct sh_error err;
    int64_t secs;
    switch (c) {
    case 'g':
        return set_int(s, "gpus", "--gpus", arg, JOB_GPUS_PER_NODE_MAX);
    case 'N':
        return set_int(s, "nodes", "--nodes", arg, JOB_NODES_MAX);
    case OPT_GPUS_TOTAL: {
        int64_t n;
        if (parse_int64("--gpus-total", arg, 1, JOB_GPUS_TOTAL_MAX, &n, &err) <
            0)
            return fail(s, "%s", err.msg);
        json_object_set_new(s->job, "gpus_total", json_integer(n));
        return 0;
    }
    case 'c':
        return set_int(s, "cpus", "--cpus", arg, JOB_CPUS_MAX);
    case OPT_TASKS:
        return set_int(s, "tasks_per_node", "--tasks-per-node", arg,
                       JOB_TASKS_PER_NODE_MAX);
    case OPT_GPU_TYPE:
        json_object_set_new(s->job, "gpu_type", json_string(arg));
        break;
    case OPT_SLICE:
        json_object_set_new(s->job, "slice", json_string(arg));
        break;
    case OPT_GPU_MEM:
        return set_size(s, "gpu_mem", "--gpu-mem", arg);
    case 'm':
        return set_size(s, "mem", "--mem", arg);
    case OPT_CPUS_PER_TASK:
        return set_int(s, CMD_RES_CPUS_PER_TASK, "--cpus-per-task", arg,
                       JOB_CPUS_MAX);
    case OPT_CPUS_PER_GPU:
        return set_int(s, CMD_RES_CPUS_PER_GPU, "--cpus-per-gpu", arg,
                       JOB_CPUS_MAX);
    case OPT_MEM_PER_GPU:
        return set_size(s, CMD_RES_MEM_PER_GPU, "--mem-per-gpu", arg);
    case OPT_MEM_PER_CPU:
        return set_size(s, CMD_RES_MEM_PER_CPU, "--mem-per-cpu", arg);
    case 'p':
        json_object_set_new(s->job, "project", json_string(arg));
        break;
    case OPT_PRIORITY:
        if (strcmp(arg, "high") && strcmp(arg, "normal") && strcmp(arg, "low"))
            return fail(s, "--priority '%s' must be high, normal or low", arg);
        json_object_set_new(s->job, "priority", json_string(arg));
        break;
    case 't':
        if (parse_duration("--time", arg, &secs, &err) < 0)
            return fail(s, "%s", err.msg);
        json_object_set_new(s->job, "time_limit", json_integer(secs));
        break;
    case 'v':
        return add_volume(s, arg);
    case 'n':
        json_object_set_new(s->job, "name", json_string(arg));
        break;
    case 'e':
        return set_env(s, "env", arg);
    case OPT_PARTITION:
        json_object_set_new(s->job, "partition", json_string(arg));
        break;
    case OPT_QOS:
        json_object_set_new(s->job, "qos", json_string(arg));
        break;
    case OPT_MAIL_TYPE:
        json_object_set_new(s->job, "mail_type", json_string(arg));
        break;
    case OPT_MAIL_USER:
        json_object_set_new(s->job, "mail_user", json_string(arg));
        break;
    case OPT_EXPORT:
        if (export_check(arg, &err) < 0)
            return fail(s, "%s", err.msg);
        json_object_set_new(s->job, "export", json_string(arg));
        break;
    case OPT_IMAGE:
        json_object_set_new(s->job, "image", json_string(arg));
        break;
    case OPT_CMOUNTS:
        return add_container_mounts(s, arg);
    case OPT_CWORKDIR:
        json_object_set_new(s->job, "container_workdir", json_string(arg));
        break;
    case OPT_CENV:
        return set_env(s, "container_env", arg);
    case OPT_REQUEUE:
        json_object_set_new(s->job, "requeue", json_true());
        break;
    case OPT_CHECKPOINTABLE:
        json_object_set_new(s->job, "checkpointable", json_true());
        json_object_set_new(s->job, "requeue", json_true());
        break;
    case 'd':
        json_object_set_new(s->job, "dependency", json_string(arg));
        break;
    case OPT_HOLD:
        json_object_set_new(s->job, "hold", json_true());
        break;
    case 'a':
        json_object_set_new(s->job, "array", json_string(arg));
        break;
    case 'w':
        json_object_set_new(s->job, "nodelist", json_string(arg));
        break;
    case 'x':
        json_object_set_new(s->job, "exclude", json_string(arg));
        break;
    case 'C':
        json_object_set_new(s->job, "constraint", json_string(arg));
        break;
    case OPT_EXCLUSIVE:
        json_object_set_new(s->job, "exclusive", json_true());
        break;
    case 'b':
        return set_begin(s, arg);
    case 'o':
        json_object_set_new(s->job, "output", json_string(arg));
        break;
    case OPT_ERROR:
        json_object_set_new(s->job, "error", json_string(arg));
        break;
    case 'D': { /* relative: from the current directory, as Slurm's -D */
        char cwd[4096], path[8192];
        if (arg[0] != '/' && !getcwd(cwd, sizeof(cwd)))
            return fail(s, "--workdir '%s': the current directory is unknown",
                        arg);
        snprintf(path, sizeof(path), "%s%s%s", arg[0] == '/' ? "" : cwd,
                 arg[0] == '/' ? "" : "/", arg);
        json_object_set_new(s->job, "workdir", json_string(path));
        break;
    }
    case OPT_USER:
        json_object_set_new(s->job, "user", json_string(arg));
        break;
    case OPT_JSON:
        s->json_out = true;
        break;
    default:
        return fail(s, "%s (see shoal submit --help)",
                    "unknown option or missing value");
    }
    return 0;
}

/* Parse options from argv[1..]; returns the index of the first non-option
 * and whether "--" ended the options, or -1 with s->err filled. --help on
 * the command line prints the help and exits; in a script it is an error,
 * so a directive can never end a submission early with success. */
static int parse_opts(struct submit *s, int argc, char **argv, bool *dashdash)
{
    struct cmd_opts p;
    char msg[sizeof(s->err.msg)];
    int c;
    cmd_opts_init(&p, "submit", usage, opts,
                  "g:N:p:t:c:m:v:n:e:D:d:a:w:x:C:b:o:", true, argc, argv);
    if (s->in_script)
        cmd_opts_keep_errors(&p, msg, sizeof(msg), "a directive");
    bool failed = false;
    while ((c = cmd_opts_next(&p)) != -1) {
        int rc = c == CMD_OPT_MISTAKE ? fail(s, "%s", msg) : apply(s, c, p.arg);
        if (rc < 0 && !s->in_script)
            return -1;
        if (rc < 0) {
            keep_problem(s); /* and go on to the line's next option */
            failed = true;
        }
    }
    if (failed)
        return -1;
    int first = cmd_opts_index(&p);
    *dashdash = first > 1 && strcmp(argv[first - 1], "--") == 0;
    return first;
}

/* Split a directive line into words; quotes group, backslash escapes. */
static int split_words(char *line, char **words, int max)
{
    int n = 0;
    char *p = line;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            break;
        if (n == max)
            return -1;
        char *out = p;
        words[n++] = out;
        char quote = 0;
        while (*p && (quote || (*p != ' ' && *p != '\t'))) {
            if (!quote && (*p == '"' || *p == '\'')) {
                quote = *p++;
            } else if (quote && *p == quote) {
                quote = 0;
                p++;
            } else if (*p == '\\' && p[1] && quote != '\'') {
                *out++ = p[1];
                p += 2;
            } else {
                *out++ = *p++;
            }
        }
        if (quote)
            return -1;
        if (*p)
            p++;
        *out = '\0';
    }
    return n;
}

static char *read_script(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot read %s: %s", path, strerror(errno));
    struct strbuf sb;
    strbuf_init(&sb, JOB_SCRIPT_MAX);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        if (strbuf_append(&sb, buf, n) < 0)
            die("%s is larger than the script limit of %d bytes", path,
                JOB_SCRIPT_MAX);
    }
    fclose(f);
    if (sb.len == 0)
        die("%s is empty", path);
    if (memchr(sb.data, '\0', sb.len))
        die("%s is not a text script", path);
    return strbuf_take(&sb);
}

/* One #SHOAL line: args is the text after "#SHOAL", s->where names it.
 * 0, or -1 with s->err filled. */
static int apply_line(struct submit *s, char *args)
{
    char *words[65];
    words[0] = "submit";
    int n = split_words(args, words + 1, 63);
    if (n < 0) {
        fail(s, "%s", "unbalanced quotes or too many words");
        keep_problem(s);
        return -1;
    }
    words[n + 1] = NULL;
    bool dd;
    int rest = parse_opts(s, n + 1, words, &dd);
    if (rest < 0)
        return -1; /* each problem kept */
    if (rest < n + 1) {
        fail(s, "'%s' is not an option", words[rest]);
        keep_problem(s);
        return -1;
    }
    return 0;
}

/* An #SBATCH problem: "PATH:LINE: message" kept with the others. */
static void sbatch_problem(void *arg, const struct sh_error *err)
{
    struct submit *s = arg;
    char msg[sizeof(s->err.msg)];
    snprintf(msg, sizeof(msg), "%s", err->msg);
    sh_errorf(&s->err, SH_EINVAL, "%s: %s", s->where, msg);
    keep_problem(s);
}

/* Apply the #SHOAL and #SBATCH lines at the top of a script. 0, or -1
 * with every bad directive in s->problems (the last in s->err). */
static int apply_directives(struct submit *s, const char *path,
                            const char *text)
{
    char *copy = strdup(text);
    char where[600];
    int lineno = 0;
    struct sbatch sb;
    bool slurm = false;
    sbatch_init(&sb);
    sb.report = sbatch_problem;
    sb.report_arg = s;
    if (!copy)
        return sh_errorf(&s->err, SH_EINTERNAL, "out of memory");
    for (char *line = copy; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        char *t = line;
        while (*t == ' ' || *t == '\t')
            t++;
        snprintf(where, sizeof(where), "%s:%d", path, lineno);
        s->where = where;
        if (strncmp(t, "#SBATCH", 7) == 0 &&
            (t[7] == ' ' || t[7] == '\t' || !t[7])) {
            /* A Slurm directive, with Slurm's meaning. */
            char *words[64];
            int n = split_words(t + 7, words, 64);
            if (n < 0) {
                sh_errorf(&s->err, SH_EINVAL,
                          "%s: unbalanced quotes or too many words", where);
                keep_problem(s);
            } else {
                sbatch_apply_words(s->job, words, n, &sb, &s->err);
            }
            slurm = true;
        } else if (strncmp(t, "#SHOAL", 6) == 0 &&
                   (t[6] == ' ' || t[6] == '\t' || !t[6])) {
            s->in_script = true;
            apply_line(s, t + 6); /* problems kept */
            s->in_script = false;
        } else if (*t && *t != '#') {
            break; /* the first command ends the directives */
        }
        line = nl ? nl + 1 : NULL;
    }
    s->where = "command line";
    if (slurm && sbatch_finish(s->job, &sb, &s->err) < 0) {
        char msg[sizeof(s->err.msg)];
        snprintf(msg, sizeof(msg), "%s", s->err.msg);
        sh_errorf(&s->err, SH_EINVAL, "%s: %s", path, msg);
        keep_problem(s);
    }
    free(copy);
    return s->nproblems ? -1 : 0;
}

int cmd_submit_directives(json_t *job, const char *path, const char *text,
                          struct sh_error *err)
{
    struct submit s = {.job = job, .where = "command line"};
    if (apply_directives(&s, path, text) < 0) {
        if (err)
            *err = s.err;
        return -1;
    }
    return 0;
}

/* Put the command line's options over the script's: scalars replace,
 * env entries replace by name, volumes and container mounts add up. */
static void merge_cli(json_t *job, json_t *cli)
{
    static const char *const objects[] = {"env", "container_env"};
    static const char *const arrays[] = {"volumes", "container_mounts"};
    bool merged[4] = {false};
    for (int i = 0; i < 2; i++) {
        json_t *d = json_object_get(job, objects[i]);
        json_t *c = json_object_get(cli, objects[i]);
        if (d && c)
            merged[i] = json_object_update(d, c) == 0;
        d = json_object_get(job, arrays[i]);
        c = json_object_get(cli, arrays[i]);
        if (d && c)
            merged[2 + i] = json_array_extend(d, c) == 0;
    }
    /* A shape on the command line replaces the script's other kind:
     * --gpus-total there drops the script's --gpus/--nodes, and back. */
    if (json_object_get(cli, "gpus_total")) {
        json_object_del(job, "gpus");
        json_object_del(job, "nodes");
    } else if (json_object_get(cli, "gpus") || json_object_get(cli, "nodes")) {
        json_object_del(job, "gpus_total");
    }
    const char *key;
    json_t *v;
    json_object_foreach (cli, key, v) {
        bool skip = false;
        for (int i = 0; i < 2; i++)
            skip |= (strcmp(key, objects[i]) == 0 && merged[i]) ||
                    (strcmp(key, arrays[i]) == 0 && merged[2 + i]);
        if (!skip)
            json_object_set(job, key, v);
    }
}

static void set_command(struct submit *s, int argc, char **argv, int first,
                        bool dashdash)
{
    json_t *cmd = json_array();
    int start = first;
    if (!dashdash && access(argv[first], R_OK) == 0) {
        /* A batch script: ship its text; the agent runs it. */
        char *text = read_script(argv[first]);
        /* Directives first, then the command line again so it wins. */
        json_t *cli = json_deep_copy(s->job);
        struct strbuf problems;
        strbuf_init(&problems, 65536);
        s->problems = &problems;
        if (apply_directives(s, argv[first], text) < 0 && s->nproblems == 1)
            die("%s", s->err.msg);
        if (s->nproblems)
            die("%s has %d bad directives:\n%s", argv[first], s->nproblems,
                strbuf_str(&problems));
        s->problems = NULL;
        strbuf_fini(&problems);
        cmd_resources_prefer(s->job, cli);
        merge_cli(s->job, cli);
        json_decref(cli);
        json_object_set_new(s->job, "script", json_string(text));
        /* Slurm's batch step: the script runs once, on the first node;
         * srun inside it starts the tasks. */
        json_object_set_new(s->job, "launch", json_string("batch"));
        if (!json_object_get(s->job, "name")) {
            const char *base = strrchr(argv[first], '/');
            json_object_set_new(s->job, "name",
                                json_string(base ? base + 1 : argv[first]));
        }
        free(text);
        start = first + 1;
    } else if (!dashdash) {
        die("'%s' is not a readable script; to run a command, put it after "
            "'--' (shoal submit [options] -- CMD ARGS...)",
            argv[first]);
    }
    for (int i = start; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    json_object_set_new(s->job, "command", cmd); /* steals cmd */
}

/* --export (the script's or the command line's; ALL when none) into the
 * job's env, under its --env entries. */
static void send_environment(json_t *job)
{
    extern char **environ;
    struct sh_error err;
    const char *spec = json_string_value(json_object_get(job, "export"));
    /* In an image the image's environment stands (its PATH, its
     * libraries): the submitter's is sent only when asked for. */
    if (!spec && json_object_get(job, "image"))
        spec = "NONE";
    /* A job submitted for another user (--user) would show that user the
     * submitter's environment: nothing is sent unless asked for. */
    if (!spec && json_object_get(job, "user"))
        spec = "NONE";
    json_t *env = json_object_get(job, "env");
    if (!env) {
        env = json_object();
        json_object_set_new(job, "env", env);
    }
    if (export_env(env, spec, environ, &err) < 0)
        die("%s", err.msg);
    json_object_del(job, "export");
    if (json_object_size(env) == 0)
        json_object_del(job, "env");
}

int cmd_submit(int argc, char **argv)
{
    struct submit s = {.job = json_object(), .where = "command line"};
    bool dashdash;
    int first = parse_opts(&s, argc, argv, &dashdash);
    if (first < 0)
        die("%s", s.err.msg);
    if (first >= argc)
        die("nothing to run: give a script or '-- CMD ARGS' (see shoal submit "
            "--help)");
    set_command(&s, argc, argv, first, dashdash);
    if (cmd_resources_resolve(s.job, &s.err) < 0)
        die("%s", s.err.msg);
    if (json_object_get(s.job, "gpus_total")) {
        static const char *const fixed[][2] = {{"gpus", "--gpus"},
                                               {"nodes", "--nodes"},
                                               {"nodelist", "--nodelist"},
                                               {"slice", "--slice"}};
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
            if (json_object_get(s.job, fixed[i][0]))
                die("--gpus-total lets Shoal pick the nodes and the GPUs per "
                    "node: not with %s (give --gpus per node and --nodes "
                    "instead)",
                    fixed[i][1]);
    }
    /* In an image, the working directory is the image's own (or
     * --container-workdir): the node's current folder means nothing there. */
    if (!json_object_get(s.job, "workdir") &&
        !json_object_get(s.job, "image")) {
        char cwd[4096];
        if (getcwd(cwd, sizeof(cwd)))
            json_object_set_new(s.job, "workdir", json_string(cwd));
    }
    char submit_dir[4096];
    if (getcwd(submit_dir, sizeof(submit_dir)))
        json_object_set_new(s.job, "submit_dir", json_string(submit_dir));
    send_environment(s.job);
    struct client *c = cmd_connect();
    /* Sent again if its answer is lost, without making a second job. */
    json_t *job = NULL;
    struct sh_error err;
    if (client_call_once(c, "/v1/jobs", s.job, &job, NULL, &err) < 0)
        die("%s", err.msg);
    if (s.json_out) {
        /* The submission answers with the id; show the whole job. */
        char path[64];
        snprintf(path, sizeof(path), "/v1/jobs/%lld",
                 (long long)json_integer_value(json_object_get(job, "id")));
        json_decref(job);
        cmd_print_json(cmd_call(c, "GET", path, NULL));
    } else {
        printf("%lld\n",
               (long long)json_integer_value(json_object_get(job, "id")));
        json_decref(job);
    }
    json_decref(s.job);
    client_destroy(c);
    return 0;
}
