/* SPDX-License-Identifier: Apache-2.0 */
/* `#SBATCH` lines in a batch script, read with Slurm's meaning of each
 * option Shoal has (--gres=gpu:N, --gpus-per-node, -N, -t, --mem, -J,
 * --dependency, --array, ...), so a Slurm script runs unchanged. An option Shoal
 * does not have is an error that names it: never silently ignored (a
 * script asking for GPUs must never run without them).
 */
#include "cmd/cmd_resources.h"
#include "cmd/cmd_sbatch.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cmd/cmd_export.h"
#include "lib/model/job.h"
#include "lib/model/job_mail.h"
#include "lib/util/clock.h"
#include "lib/util/parse.h"

static int bad(struct sh_error *err, const char *opt, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct sh_error *err, const char *opt, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sh_errorf(err, SH_EINVAL, "#SBATCH %s: %s", opt, msg);
}

static int count(const char *opt, const char *v, long max, long *out,
                 struct sh_error *err)
{
    char *end;
    if (!isdigit((unsigned char)v[0]))
        return bad(err, opt, "'%s' is not a count", v);
    long n = strtol(v, &end, 10);
    if (*end == '-')
        return bad(err, opt,
                   "ranges ('%s') are not supported: give one "
                   "number",
                   v);
    if (*end || n < 1 || n > max)
        return bad(err, opt, "'%s' is not a count of 1..%ld", v, max);
    *out = n;
    return 0;
}

/* Slurm times: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S; UNLIMITED. */
static int slurm_time(const char *opt, const char *v, int64_t *secs,
                      struct sh_error *err)
{
    long f[4] = {0, 0, 0, 0};
    int nf = 0;
    long days = 0;
    const char *p = v;
    if (strcasecmp(v, "unlimited") == 0 || strcasecmp(v, "infinite") == 0) {
        *secs = 0;
        return 0;
    }
    const char *dash = strchr(v, '-');
    if (dash) {
        char *end;
        days = strtol(v, &end, 10);
        if (end != dash || days < 0 || days > 366)
            return bad(err, opt, "'%s' is not a Slurm time", v);
        p = dash + 1;
    }
    while (*p && nf < 3) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return bad(err, opt, "'%s' is not a Slurm time", v);
        f[nf++] = strtol(p, &end, 10);
        p = end;
        /* Bounded before any arithmetic: no field of a time this long. */
        if (f[nf - 1] > 527040) /* minutes in 366 days */
            return bad(err, opt, "'%s' is not a time of 1 s..366 days", v);
        if (*p == ':')
            p++;
        else if (*p)
            return bad(err, opt, "'%s' is not a Slurm time", v);
    }
    if (*p || nf == 0)
        return bad(err, opt, "'%s' is not a Slurm time", v);
    int64_t s;
    if (dash) /* D-H, D-H:M, D-H:M:S */
        s = days * 86400 + f[0] * 3600 + f[1] * 60 + f[2];
    else if (nf == 1) /* minutes */
        s = f[0] * 60;
    else if (nf == 2) /* M:S */
        s = f[0] * 60 + f[1];
    else /* H:M:S */
        s = f[0] * 3600 + f[1] * 60 + f[2];
    if (s <= 0 || s > 366 * 86400)
        return bad(err, opt, "'%s' is not a time of 1 s..366 days", v);
    *secs = s;
    return 0;
}

/* Slurm sizes: a number is megabytes; K, M, G, T suffixes. */
static int slurm_mem(const char *opt, const char *v, json_int_t *bytes,
                     struct sh_error *err)
{
    char *end;
    if (!isdigit((unsigned char)v[0]))
        return bad(err, opt, "'%s' is not a size", v);
    unsigned long long n = strtoull(v, &end, 10);
    unsigned long long mul = 1ULL << 20;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K':
            mul = 1ULL << 10;
            break;
        case 'M':
            mul = 1ULL << 20;
            break;
        case 'G':
            mul = 1ULL << 30;
            break;
        case 'T':
            mul = 1ULL << 40;
            break;
        default:
            return bad(err, opt, "'%s' is not a size (K, M, G or T)", v);
        }
        if (end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2]))
            return bad(err, opt, "'%s' is not a size", v);
    }
    if (n == 0 && strcmp(opt, "--mem") == 0) {
        *bytes = 0; /* Slurm's "all the node's memory": no reservation */
        return 0;
    }
    if (n == 0 || n > (1ULL << 50) / mul)
        return bad(err, opt, "'%s' is out of range", v);
    *bytes = (json_int_t)(n * mul);
    return 0;
}

/* gpu[:TYPE]:N (--gres) or [TYPE:]N (--gpus-per-node). */
static int gpu_spec(json_t *job, const char *opt, const char *v, bool gres,
                    long *total, struct sh_error *err)
{
    char buf[160];
    snprintf(buf, sizeof(buf), "%s", v);
    char *p = buf;
    if (gres) {
        if (strchr(p, ','))
            return bad(err, opt, "'%s': only one gres, gpu, is supported", v);
        if (strncmp(p, "gpu", 3) != 0 || (p[3] && p[3] != ':'))
            return bad(err, opt, "'%s': Shoal schedules GPUs only (gpu:N)", v);
        p += 3;
        if (!*p) {
            json_object_set_new(job, "gpus", json_integer(1));
            return 0;
        }
        p++;
    }
    char *colon = strrchr(p, ':');
    const char *num = colon ? colon + 1 : p;
    if (colon) {
        *colon = '\0';
        if (!*p)
            return bad(err, opt, "'%s': an empty GPU type", v);
        json_object_set_new(job, "gpu_type", json_string(p));
    }
    long n;
    if (count(opt, num, total ? JOB_GPUS_TOTAL_MAX : JOB_GPUS_PER_NODE_MAX, &n,
              err) < 0)
        return -1;
    if (total)
        *total = n;
    else
        json_object_set_new(job, "gpus", json_integer(n));
    return 0;
}

struct sbatch_opt {
    const char *lng;
    char shrt;
    bool arg;
    int id;
};

enum {
    O_NODES = 1,
    O_GRES,
    O_GPUS_PER_NODE,
    O_GPUS,
    O_TIME,
    O_MEM,
    O_NAME,
    O_NTASKS,
    O_TASKS_PER_NODE,
    O_CPUS_PER_TASK,
    O_DEPENDENCY,
    O_HOLD,
    O_REQUEUE,
    O_NO_REQUEUE,
    O_ACCOUNT,
    O_CHDIR,
    O_EXPORT,
    O_ARRAY,
    O_NODELIST,
    O_EXCLUDE,
    O_CONSTRAINT,
    O_EXCLUSIVE,
    O_BEGIN,
    O_CIMAGE,
    O_CMOUNTS,
    O_CWORKDIR,
    O_OUTPUT,
    O_ERROR,
    O_PARTITION,
    O_QOS,
    O_OPEN_MODE,
    O_GPUS_PER_TASK,
    O_MAIL_TYPE,
    O_MAIL_USER,
    O_CPUS_PER_GPU,
    O_MEM_PER_GPU,
    O_MEM_PER_CPU,
};

static const struct sbatch_opt known[] = {
    {"nodes", 'N', true, O_NODES},
    {"gres", 0, true, O_GRES},
    {"gpus-per-node", 0, true, O_GPUS_PER_NODE},
    {"gpus", 'G', true, O_GPUS},
    {"time", 't', true, O_TIME},
    {"mem", 0, true, O_MEM},
    {"job-name", 'J', true, O_NAME},
    {"ntasks", 'n', true, O_NTASKS},
    {"ntasks-per-node", 0, true, O_TASKS_PER_NODE},
    {"cpus-per-task", 'c', true, O_CPUS_PER_TASK},
    {"cpus-per-gpu", 0, true, O_CPUS_PER_GPU},
    {"mem-per-gpu", 0, true, O_MEM_PER_GPU},
    {"mem-per-cpu", 0, true, O_MEM_PER_CPU},
    {"dependency", 'd', true, O_DEPENDENCY},
    {"hold", 'H', false, O_HOLD},
    {"requeue", 0, false, O_REQUEUE},
    {"no-requeue", 0, false, O_NO_REQUEUE},
    {"account", 'A', true, O_ACCOUNT},
    {"chdir", 'D', true, O_CHDIR},
    {"export", 0, true, O_EXPORT},
    {"array", 'a', true, O_ARRAY},
    {"nodelist", 'w', true, O_NODELIST},
    {"exclude", 'x', true, O_EXCLUDE},
    {"constraint", 'C', true, O_CONSTRAINT},
    {"exclusive", 0, false, O_EXCLUSIVE},
    {"begin", 'b', true, O_BEGIN},
    /* pyxis (Slurm's container plugin) names */
    {"container-image", 0, true, O_CIMAGE},
    {"container-mounts", 0, true, O_CMOUNTS},
    {"container-workdir", 0, true, O_CWORKDIR},
    {"output", 'o', true, O_OUTPUT},
    {"error", 'e', true, O_ERROR},
    {"partition", 'p', true, O_PARTITION},
    {"qos", 'q', true, O_QOS},
    {"open-mode", 0, true, O_OPEN_MODE},
    {"gpus-per-task", 0, true, O_GPUS_PER_TASK},
    {"mail-type", 0, true, O_MAIL_TYPE},
    {"mail-user", 0, true, O_MAIL_USER},
    {"tasks-per-node", 0, true, O_TASKS_PER_NODE}, /* Slurm's alias */
    {NULL, 0, false, 0},
};

/* Options Slurm users write that Shoal does not have, with a hint. */
static const struct {
    const char *lng;
    char shrt;
    const char *why;
} unsupported[] = {
    {"signal", 0,
     "Shoal sends no signal before the time limit: at the limit the job "
     "gets SIGTERM, then SIGKILL after the grace period, and "
     "$SHOAL_PREEMPT_DEADLINE names a file holding the SIGKILL's time"},
    {"licenses", 'L', "Shoal has no licenses (Slurm's -L): remove it"},
    {"clusters", 'M',
     "Shoal runs one cluster: remove it and submit to the cluster you mean"},
    {"cluster", 0,
     "Shoal runs one cluster: remove it and submit to the cluster you mean"},
    {NULL, 0, NULL},
};

/* pyxis's --container-mounts: SRC:DST[:ro] entries joined by commas; the
 * controller checks each. */
static int container_mounts(json_t *job, const char *opt, const char *v,
                            struct sh_error *err)
{
    json_t *mounts = json_object_get(job, "container_mounts");
    if (!mounts) {
        mounts = json_array();
        json_object_set_new(job, "container_mounts", mounts);
    }
    for (const char *p = v; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == 0 || !memchr(p, ':', n))
            return bad(err, opt, "'%s' must be SRC:DST[:ro][,...]", v);
        json_array_append_new(mounts, json_stringn(p, n));
        p += n + (comma ? 1 : 0);
    }
    return 0;
}

static int apply_one(json_t *job, int id, const char *opt, const char *v,
                     struct sbatch *l, struct sh_error *err)
{
    int64_t secs = 0;
    json_int_t bytes = 0;
    switch (id) {
    case O_NODES:
        return count(opt, v, 1024, &l->nodes, err);
    case O_GRES:
        return gpu_spec(job, opt, v, true, NULL, err);
    case O_GPUS_PER_NODE:
        return gpu_spec(job, opt, v, false, NULL, err);
    case O_GPUS:
        return gpu_spec(job, opt, v, false, &l->gpus_total, err);
    case O_TIME:
        if (slurm_time(opt, v, &secs, err) < 0)
            return -1;
        if (secs > 0)
            json_object_set_new(job, "time_limit", json_integer(secs));
        return 0;
    case O_MEM:
        if (slurm_mem(opt, v, &bytes, err) < 0)
            return -1;
        if (bytes) /* --mem=0: the whole node's memory, none reserved */
            json_object_set_new(job, "mem", json_integer(bytes));
        else
            json_object_del(job, "mem");
        return 0;
    case O_NAME:
        json_object_set_new(job, "name", json_string(v));
        return 0;
    case O_NTASKS:
        return count(opt, v, 65536, &l->ntasks, err);
    case O_TASKS_PER_NODE:
        return count(opt, v, 256, &l->tasks_per_node, err);
    case O_CPUS_PER_TASK:
        return count(opt, v, 4096, &l->cpus_per_task, err);
    case O_CPUS_PER_GPU: { /* resolved per node by cmd_resources.c */
        long n;
        if (count(opt, v, 4096, &n, err) < 0)
            return -1;
        json_object_set_new(job, CMD_RES_CPUS_PER_GPU, json_integer(n));
        return 0;
    }
    case O_MEM_PER_GPU:
    case O_MEM_PER_CPU:
        if (slurm_mem(opt, v, &bytes, err) < 0)
            return -1;
        json_object_set_new(job,
                            id == O_MEM_PER_GPU ? CMD_RES_MEM_PER_GPU
                                                : CMD_RES_MEM_PER_CPU,
                            json_integer(bytes));
        return 0;
    case O_DEPENDENCY:
        json_object_set_new(job, "dependency", json_string(v));
        return 0;
    case O_HOLD:
        json_object_set_new(job, "hold", json_true());
        return 0;
    case O_REQUEUE:
    case O_NO_REQUEUE:
        json_object_set_new(job, "requeue", json_boolean(id == O_REQUEUE));
        return 0;
    case O_ACCOUNT:
        json_object_set_new(job, "project", json_string(v));
        return 0;
    case O_CHDIR: { /* relative: from the submit directory, as Slurm */
        char cwd[4096], path[8192];
        if (v[0] != '/' && !getcwd(cwd, sizeof(cwd)))
            return bad(err, opt, "'%s': the current directory is unknown", v);
        snprintf(path, sizeof(path), "%s%s%s", v[0] == '/' ? "" : cwd,
                 v[0] == '/' ? "" : "/", v);
        json_object_set_new(job, "workdir", json_string(path));
        return 0;
    }
    case O_ARRAY:
        json_object_set_new(job, "array", json_string(v));
        return 0;
    case O_NODELIST:
        json_object_set_new(job, "nodelist", json_string(v));
        return 0;
    case O_EXCLUDE:
        json_object_set_new(job, "exclude", json_string(v));
        return 0;
    case O_CONSTRAINT:
        json_object_set_new(job, "constraint", json_string(v));
        return 0;
    case O_EXCLUSIVE:
        json_object_set_new(job, "exclusive", json_true());
        return 0;
    case O_PARTITION:
        if (strchr(v, ','))
            return bad(err, opt,
                       "'%s': give one partition (Shoal does not pick "
                       "among several)",
                       v);
        json_object_set_new(job, "partition", json_string(v));
        return 0;
    case O_QOS:
        json_object_set_new(job, "qos", json_string(v));
        return 0;
    case O_GPUS_PER_TASK: {
        char buf[160];
        snprintf(buf, sizeof(buf), "%s", v);
        char *colon = strrchr(buf, ':');
        if (colon) { /* [TYPE:]N */
            *colon = '\0';
            if (!*buf)
                return bad(err, opt, "'%s': an empty GPU type", v);
            json_object_set_new(job, "gpu_type", json_string(buf));
        }
        return count(opt, colon ? v + (colon - buf) + 1 : v,
                     JOB_GPUS_PER_NODE_MAX, &l->gpus_per_task, err);
    }
    case O_MAIL_TYPE: { /* the controller refuses it without a command */
        int events;
        if (job_mail_parse(v, &events, err) < 0)
            return sh_error_prefix(err, "#SBATCH %s: ", opt);
        json_object_set_new(job, "mail_type", json_string(v));
        return 0;
    }
    case O_MAIL_USER:
        if (!job_mail_user_valid(v))
            return bad(err, opt, "'%s' is not a mail address", v);
        json_object_set_new(job, "mail_user", json_string(v));
        return 0;
    case O_OPEN_MODE:
        /* Shoal's output files are always appended to (tasks share them). */
        if (strcmp(v, "append") != 0)
            return bad(err, opt,
                       "'%s': Shoal appends to output files (append is "
                       "the only mode); remove the file first to start "
                       "afresh",
                       v);
        return 0;
    case O_OUTPUT:
        json_object_set_new(job, "output", json_string(v));
        return 0;
    case O_ERROR:
        json_object_set_new(job, "error", json_string(v));
        return 0;
    case O_BEGIN: {
        /* Sent as an absolute UTC time, as shoal submit --begin does. */
        char iso[32];
        if (clock_parse_begin(opt, v, clock_wall_ms(), &secs, err) < 0)
            return sh_error_prefix(err, "#SBATCH ");
        clock_format_iso(secs, iso, sizeof(iso));
        json_object_set_new(job, "begin", json_string(iso));
        return 0;
    }
    case O_CIMAGE:
        json_object_set_new(job, "image", json_string(v));
        return 0;
    case O_CMOUNTS:
        return container_mounts(job, opt, v, err);
    case O_CWORKDIR:
        json_object_set_new(job, "container_workdir", json_string(v));
        return 0;
    case O_EXPORT: /* applied when the job is sent (cmd_export.h) */
        if (export_check(v, err) < 0)
            return sh_error_prefix(err, "#SBATCH ");
        json_object_set_new(job, "export", json_string(v));
        return 0;
    }
    return 0;
}

/* The option named lng (len bytes; long form) or shrt (short form), or
 * NULL with err naming it: one Shoal does not have, with a hint when it
 * is a Slurm option Shoal left out. */
static const struct sbatch_opt *find_opt(const char *lng, size_t len, char shrt,
                                         const char *name, struct sh_error *err)
{
    for (int k = 0; known[k].lng; k++) {
        if (lng ? strlen(known[k].lng) == len &&
                      strncmp(known[k].lng, lng, len) == 0
                : known[k].shrt == shrt)
            return &known[k];
    }
    for (int k = 0; unsupported[k].lng; k++) {
        if (lng ? strlen(unsupported[k].lng) == len &&
                      strncmp(unsupported[k].lng, lng, len) == 0
                : unsupported[k].shrt == shrt) {
            bad(err, name, "%s", unsupported[k].why);
            return NULL;
        }
    }
    bad(err, name, "Shoal has no such option; remove it or use a #SHOAL line");
    return NULL;
}

/* One option word (and its value) at words[*i]; moves *i past them. */
static int apply_word(json_t *job, char **words, int n, int *i,
                      struct sbatch *sb, struct sh_error *err)
{
    const char *w = words[*i];
    char name[64];
    const char *attached; /* --opt=VALUE, -oVALUE or -o=VALUE */
    const struct sbatch_opt *o;
    if (strncmp(w, "--", 2) == 0) {
        const char *eq = strchr(w + 2, '=');
        size_t len = eq ? (size_t)(eq - w - 2) : strlen(w + 2);
        snprintf(name, sizeof(name), "--%.*s", (int)len, w + 2);
        o = find_opt(w + 2, len, 0, name, err);
        attached = eq ? eq + 1 : NULL;
    } else if (w[0] == '-' && w[1] && w[1] != '-') {
        snprintf(name, sizeof(name), "-%c", w[1]);
        o = find_opt(NULL, 0, w[1], name, err);
        attached = !w[2] ? NULL : w[2] == '=' ? w + 3 : w + 2;
    } else {
        return sh_errorf(err, SH_EINVAL, "#SBATCH: '%s' is not an option", w);
    }
    if (!o) {
        /* Skip a value given apart, so it is not read as an option. */
        if (!attached && *i + 1 < n && words[*i + 1][0] != '-')
            (*i)++;
        return -1;
    }
    const char *val = attached;
    if (o->arg && !val) {
        if (*i + 1 >= n)
            return bad(err, name, "needs a value");
        val = words[++(*i)];
    } else if (!o->arg && attached) {
        return bad(err, name, "takes no value");
    }
    return apply_one(job, o->id, name, val ? val : "", sb, err);
}

int sbatch_apply_words(json_t *job, char **words, int n, struct sbatch *sb,
                       struct sh_error *err)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (apply_word(job, words, n, &i, sb, err) == 0)
            continue;
        rc = -1;
        if (!sb->report)
            return -1;
        sb->report(sb->report_arg, err);
    }
    return rc;
}

void sbatch_init(struct sbatch *sb)
{
    memset(sb, 0, sizeof(*sb));
}

int sbatch_finish(json_t *job, const struct sbatch *sb, struct sh_error *err)
{
    const struct sbatch *l = sb;
    long given = l->nodes;
    /* -n N --ntasks-per-node M without -N: Slurm's N/M nodes. */
    if (!given && l->ntasks && l->tasks_per_node) {
        if (l->ntasks % l->tasks_per_node)
            return bad(err, "--ntasks",
                       "%ld tasks at %ld per node do not fill whole nodes: "
                       "give -N or a count that divides",
                       l->ntasks, l->tasks_per_node);
        given = l->ntasks / l->tasks_per_node;
    }
    long nodes = given ? given : 1;
    if (given)
        json_object_set_new(job, "nodes", json_integer(given));
    if (l->gpus_per_task && (l->gpus_total || json_object_get(job, "gpus")))
        return bad(err, "--gpus-per-task",
                   "gives the GPUs per task, and --gpus, --gres or "
                   "--gpus-per-node give them otherwise: keep one");
    if (l->gpus_total && json_object_get(job, "gpus"))
        return bad(err, "--gpus",
                   "gives the GPUs in all, and --gres or --gpus-per-node "
                   "gives them per node: keep one");
    if (l->gpus_total && !given) {
        /* Slurm's meaning: that many GPUs, on nodes Shoal picks. */
        json_object_set_new(job, "gpus_total", json_integer(l->gpus_total));
    } else if (l->gpus_total) {
        if (l->gpus_total % nodes)
            return bad(err, "--gpus",
                       "%ld GPUs do not split evenly over %ld nodes: use "
                       "--gpus-per-node",
                       l->gpus_total, nodes);
        json_object_set_new(job, "gpus", json_integer(l->gpus_total / nodes));
    }
    long tpn = l->tasks_per_node;
    if (l->ntasks) {
        if (l->ntasks % nodes)
            return bad(err, "--ntasks",
                       "%ld tasks do not split evenly over %ld nodes: use "
                       "--ntasks-per-node",
                       l->ntasks, nodes);
        if (tpn && tpn != l->ntasks / nodes)
            return bad(err, "--ntasks",
                       "%ld tasks on %ld nodes disagree with "
                       "--ntasks-per-node=%ld",
                       l->ntasks, nodes, tpn);
        tpn = l->ntasks / nodes;
    }
    if (tpn)
        json_object_set_new(job, "tasks_per_node", json_integer(tpn));
    if (l->gpus_per_task) {
        long per_node = l->gpus_per_task * (tpn ? tpn : 1);
        if (per_node > JOB_GPUS_PER_NODE_MAX)
            return bad(err, "--gpus-per-task",
                       "%ld GPUs per task x %ld tasks per node is more "
                       "than %d GPUs on a node: give -N",
                       l->gpus_per_task, tpn ? tpn : 1, JOB_GPUS_PER_NODE_MAX);
        json_object_set_new(job, "gpus", json_integer(per_node));
    }
    if (l->cpus_per_task)
        json_object_set_new(job, "cpus",
                            json_integer(l->cpus_per_task * (tpn ? tpn : 1)));
    return 0;
}
