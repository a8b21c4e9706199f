/* SPDX-License-Identifier: Apache-2.0 */
/* Trace reader. The contract (doc/design/sim.md): CSV with a header whose
 * columns come in any order: id, submit (s), duration (s), gpus, and
 * optionally nodes, user, project, gpu_type, priority, time_limit (s),
 * slice, cpus and mem (host CPUs and memory per node, "20G"). gpus below 1 (0.25) is a fraction of one GPU, replayed on a slice
 * (sim_run.c); gpu_type may be a set of models, "A100-80GB|H100-80GB".
 * Unknown or repeated columns are errors; every error names the line
 * (and the column); lines are at most SIM_LINE_MAX bytes. Also reads three
 * public formats directly (chosen by --trace-format, or by their header):
 *   philly:   timestamp,duration,num_gpus,gpu_time,cluster (Pollux's copy
 *             of the Philly trace); cluster is the project, submit is
 *             seconds since the earliest timestamp;
 *   tiresias: job_id,num_gpu,submit_time,iterations,model_name,duration,
 *             interval;
 *   pollux:   name,time,application,num_replicas,batch_size; no duration
 *             in the file: estimated from the application's GPU-time class
 *             (see doc/design/sim.md), the project is the application.
 * Not here: quoting beyond plain "..." fields, other delimiters.
 */
#include "sim/sim.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/job.h"
#include "lib/util/parse.h"

#define FIELDS_MAX 32

enum role {
    R_IGNORE = 0,
    R_ID,
    R_SUBMIT,
    R_DURATION,
    R_GPUS,
    R_NODES,
    R_USER,
    R_PROJECT,
    R_GPU_TYPE,
    R_PRIORITY,
    R_TIME_LIMIT,
    R_SLICE,
    R_CPUS,
    R_MEM,
    R_TIMESTAMP,
    R_APPLICATION,
    R_GPU_MILLI,
    R_COUNT,
};

struct column {
    const char *name;
    enum role role;
    bool required;
};

/* Intern a trace name; a trace may hold at most SIM_NAMES_MAX of them. */
static int sim_names_intern(struct strtab *t, const char *name, uint32_t *id)
{
    if (strtab_find(t, name) == STRTAB_NONE && t->n >= SIM_NAMES_MAX)
        return -1;
    return strtab_intern(t, name, id);
}

static const struct column shoal_cols[] = {
    {"id", R_ID, true},
    {"submit", R_SUBMIT, true},
    {"duration", R_DURATION, true},
    {"gpus", R_GPUS, true},
    {"nodes", R_NODES, false},
    {"user", R_USER, false},
    {"project", R_PROJECT, false},
    {"gpu_type", R_GPU_TYPE, false},
    {"priority", R_PRIORITY, false},
    {"time_limit", R_TIME_LIMIT, false},
    {"slice", R_SLICE, false},
    {"gpu_milli", R_GPU_MILLI, false},
    {"cpus", R_CPUS, false},
    {"mem", R_MEM, false},
    {NULL, 0, false},
};
static const struct column philly_cols[] = {
    {"timestamp", R_TIMESTAMP, true}, {"duration", R_DURATION, true},
    {"num_gpus", R_GPUS, true},       {"gpu_time", R_IGNORE, false},
    {"cluster", R_PROJECT, false},    {NULL, 0, false},
};
static const struct column tiresias_cols[] = {
    {"job_id", R_ID, true},          {"num_gpu", R_GPUS, true},
    {"submit_time", R_SUBMIT, true}, {"iterations", R_IGNORE, false},
    {"model_name", R_IGNORE, false}, {"duration", R_DURATION, true},
    {"interval", R_IGNORE, false},   {NULL, 0, false},
};
static const struct column pollux_cols[] = {
    {"name", R_IGNORE, false},
    {"time", R_SUBMIT, true},
    {"application", R_APPLICATION, true},
    {"num_replicas", R_GPUS, true},
    {"batch_size", R_IGNORE, false},
    {NULL, 0, false},
};

static const struct column *format_cols(enum sim_format f)
{
    switch (f) {
    case SIM_FORMAT_PHILLY:
        return philly_cols;
    case SIM_FORMAT_TIRESIAS:
        return tiresias_cols;
    case SIM_FORMAT_POLLUX:
        return pollux_cols;
    default:
        return shoal_cols;
    }
}

static const char *const format_names[] = {"auto", "shoal", "philly",
                                           "tiresias", "pollux"};

int sim_format_parse(const char *name, enum sim_format *out,
                     struct sh_error *err)
{
    for (int i = 0; i < 5; i++) {
        if (strcmp(name, format_names[i]) == 0) {
            *out = (enum sim_format)i;
            return 0;
        }
    }
    return sh_errorf(err, SH_EINVAL,
                     "trace format must be auto, shoal, "
                     "philly, tiresias or pollux, not '%s'",
                     name);
}

/* ---------------------------------------------------------------- names */

/* ---------------------------------------------------------------- input */

struct input {
    FILE *f;
    const char *text;
    size_t pos;
    const char *name;
    size_t line;
};

/* The next line into buf (without the newline). 1 = a line, 0 = end,
 * -1 = too long. */
static int next_line(struct input *in, char *buf, size_t size)
{
    size_t n = 0;
    int c;
    for (;;) {
        if (in->f) {
            c = getc(in->f);
        } else {
            c = in->text[in->pos] ? (unsigned char)in->text[in->pos++] : EOF;
        }
        if (c == EOF) {
            if (n == 0)
                return 0;
            break;
        }
        if (c == '\n')
            break;
        if (n + 1 >= size)
            return -1;
        buf[n++] = (char)c;
    }
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    in->line++;
    return 1;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* Split a CSV line in place. Fields may be "quoted" ("" is a quote). */
static int split_csv(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '"') {
            char *o = ++p;
            f[n++] = o;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')
                    p++;
                *o++ = *p++;
            }
            if (*p == '"')
                p++;
            while (*p && *p != ',')
                p++;
            bool more = *p == ',';
            *o = '\0';
            if (!more)
                break;
            p++;
            continue;
        }
        f[n++] = p;
        while (*p && *p != ',')
            p++;
        bool more = *p == ',';
        *p = '\0';
        f[n - 1] = trim(f[n - 1]);
        if (!more)
            break;
        p++;
    }
    return n;
}

/* ------------------------------------------------------------- values */

/* Seconds, whole or with a fraction ("66.0", "0.5"), into ms. */
static int seconds_ms(const char *s, int64_t *ms)
{
    int64_t whole = 0, frac = 0, scale = 1000;
    const char *p = s;
    if (!*p)
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > INT64_C(1000000000000))
            return -1;
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        p++;
        bool digits = false;
        for (; *p >= '0' && *p <= '9'; p++) {
            digits = true;
            if (scale > 1) {
                scale /= 10;
                frac += (*p - '0') * scale;
            }
        }
        if (!digits && p == s + 1)
            return -1;
    }
    if (*p || p == s)
        return -1;
    *ms = whole * 1000 + frac;
    return 0;
}

/* A GPU count: a whole number ("2", also "2.0") into *gpus, or a fraction
 * below 1 ("0.25", ".5", at most 6 decimals) into *ppm (millionths, gpus
 * 1). 0 ok, -1 not a number, -2 a non-whole number above 1, -3 too many
 * decimals. */
static int gpus_value(const char *s, int64_t max, int64_t *gpus, int64_t *ppm)
{
    int64_t whole = 0, frac = 0, scale = 1000000;
    const char *p = s;
    bool digits = false;
    for (; *p >= '0' && *p <= '9'; p++, digits = true) {
        whole = whole * 10 + (*p - '0');
        if (whole > max)
            return -1;
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits = true) {
            if (scale == 1 && *p != '0')
                return -3;
            scale /= scale > 1 ? 10 : 1;
            frac += (*p - '0') * scale;
        }
    }
    if (*p || !digits)
        return -1;
    *ppm = 0;
    *gpus = whole;
    if (frac == 0)
        return 0;
    if (whole > 0)
        return -2;
    *gpus = 1;
    *ppm = frac;
    return 0;
}

/* "YYYY-MM-DD HH:MM:SS" (UTC) into seconds since the epoch. */
static int timestamp_s(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, se;
    char tail;
    if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se,
               &tail) != 6)
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 ||
        h < 0 || mi < 0 || se < 0)
        return -1;
    /* Days from the civil date (Howard Hinnant's algorithm). */
    int64_t yy = y - (mo <= 2);
    int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
    int64_t yoe = yy - era * 400;
    int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    *out = days * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

/* Pollux's application classes, by GPU-time (their workload.py): the
 * geometric middle of each class, in GPU-hours. An estimate. */
static int pollux_gpu_hours(const char *app, double *h)
{
    static const struct {
        const char *app;
        double h;
    } t[] = {{"cifar10", 0.25}, {"ncf", 0.25},  {"deepspeech2", 3.2},
             {"bert", 3.2},     {"yolov3", 32}, {"imagenet", 320}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (strcmp(app, t[i].app) == 0) {
            *h = t[i].h;
            return 0;
        }
    }
    return -1;
}

/* ---------------------------------------------------------------- rows */

struct reader {
    struct input in;
    struct sim_trace *t;
    const struct column *cols;
    int ncols;
    enum role role[FIELDS_MAX];
    const char *colname[FIELDS_MAX];
    int64_t *stamps; /* philly: timestamps, seconds */
    uint32_t default_name;
    int64_t gpu_milli; /* this row's gpu_milli, 0 = none */
};

static int rowerr(struct reader *r, struct sh_error *err, const char *col,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int rowerr(struct reader *r, struct sh_error *err, const char *col,
                  const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (col)
        return sh_errorf(err, SH_EINVAL, "%s:%zu: column '%s': %s", r->in.name,
                         r->in.line, col, what);
    return sh_errorf(err, SH_EINVAL, "%s:%zu: %s", r->in.name, r->in.line,
                     what);
}

static int header(struct reader *r, char **f, int n, enum sim_format format,
                  struct sh_error *err)
{
    if (format == SIM_FORMAT_AUTO) {
        /* A public format when the header is exactly its columns. */
        format = SIM_FORMAT_SHOAL;
        for (int k = SIM_FORMAT_PHILLY; k <= SIM_FORMAT_POLLUX; k++) {
            const struct column *c = format_cols((enum sim_format)k);
            int nc = 0, hit = 0;
            for (; c[nc].name; nc++) {
                for (int i = 0; i < n; i++)
                    hit += strcmp(f[i], c[nc].name) == 0;
            }
            if (nc == n && hit == n)
                format = (enum sim_format)k;
        }
    }
    r->t->format = format;
    r->cols = format_cols(format);
    r->ncols = n;
    for (int i = 0; i < n; i++) {
        int k;
        for (k = 0; r->cols[k].name && strcmp(r->cols[k].name, f[i]); k++)
            ;
        if (!r->cols[k].name) {
            char known[256] = "";
            size_t off = 0;
            for (int x = 0; r->cols[x].name; x++)
                off += (size_t)snprintf(known + off, sizeof(known) - off,
                                        "%s%s", x ? ", " : "", r->cols[x].name);
            return sh_errorf(err, SH_EINVAL,
                             "%s:1: unknown column '%s' "
                             "(%s traces have: %s)",
                             r->in.name, f[i], format_names[format], known);
        }
        for (int j = 0; j < i; j++) {
            if (strcmp(f[j], f[i]) == 0)
                return sh_errorf(err, SH_EINVAL,
                                 "%s:1: column '%s' "
                                 "appears twice",
                                 r->in.name, f[i]);
        }
        r->role[i] = r->cols[k].role;
        r->colname[i] = r->cols[k].name;
    }
    for (int k = 0; r->cols[k].name; k++) {
        bool have = false;
        for (int i = 0; i < n; i++)
            have |= strcmp(f[i], r->cols[k].name) == 0;
        if (r->cols[k].required && !have)
            return sh_errorf(err, SH_EINVAL, "%s:1: missing column '%s'",
                             r->in.name, r->cols[k].name);
    }
    return 0;
}

static int name_field(struct reader *r, struct sh_error *err, const char *col,
                      const char *v, uint32_t *out)
{
    if (!job_ident_valid(v))
        return rowerr(r, err, col,
                      "'%s' is not a valid name (1..64 of "
                      "A-Z a-z 0-9 . _ -)",
                      v);
    if (sim_names_intern(&r->t->names, v, out) < 0)
        return sh_errorf(err, SH_ETOOLARGE, "%s:%zu: too many names",
                         r->in.name, r->in.line);
    return 0;
}

/* gpu_type: a model or a set of models separated by '|' (the job runs on
 * any of them), each a name; kept as written. */
static int gpu_type_field(struct reader *r, struct sim_job *j, const char *col,
                          const char *v, struct sh_error *err)
{
    char part[JOB_IDENT_MAX + 2];
    const char *p = v;
    int n = 0;
    for (;;) {
        size_t len = strcspn(p, "|");
        if (len == 0 || len > JOB_IDENT_MAX)
            return rowerr(r, err, col,
                          "'%s' is not a GPU model or models separated "
                          "by '|'",
                          v);
        memcpy(part, p, len);
        part[len] = '\0';
        if (!job_ident_valid(part))
            return rowerr(r, err, col,
                          "'%s' is not a valid name (1..64 of "
                          "A-Z a-z 0-9 . _ -)",
                          part);
        if (++n > SCHED_MODELS_MAX)
            return rowerr(r, err, col, "more than %d models", SCHED_MODELS_MAX);
        if (!p[len])
            break;
        p += len + 1;
    }
    uint32_t id;
    if (sim_names_intern(&r->t->names, v, &id) < 0)
        return sh_errorf(err, SH_ETOOLARGE, "%s:%zu: too many names",
                         r->in.name, r->in.line);
    j->gpu_type = (int32_t)id;
    return 0;
}

/* The numeric columns: id, times, counts. */
static int num_field(struct reader *r, struct sim_job *j, enum role role,
                     const char *col, const char *v, struct sh_error *err)
{
    int64_t x;
    struct sh_error e2;
    switch (role) {
    case R_ID:
        if (parse_int64(col, v, 0, INT64_MAX, &x, &e2) < 0)
            return rowerr(r, err, col, "'%s' is not a job id", v);
        j->id = (uint64_t)x;
        return 0;
    case R_SUBMIT:
    case R_DURATION:
    case R_TIME_LIMIT:
        if (seconds_ms(v, &x) < 0)
            return rowerr(r, err, col, "'%s' is not a number of seconds", v);
        if (role == R_TIME_LIMIT && x == 0)
            return rowerr(r, err, col, "'%s': a time limit must be > 0", v);
        if (role == R_SUBMIT)
            j->submit_ms = x;
        else if (role == R_DURATION)
            j->duration_ms = x;
        else
            j->limit_ms = x;
        return 0;
    case R_GPUS: {
        int64_t ppm;
        int rc = gpus_value(v, JOB_NODES_MAX * JOB_GPUS_PER_NODE_MAX, &x, &ppm);
        if (rc == -2)
            return rowerr(r, err, col,
                          "'%s': fractions above 1 are not GPUs (a whole "
                          "number, or a fraction of one GPU below 1)",
                          v);
        if (rc == -3)
            return rowerr(r, err, col,
                          "'%s': a fraction has at most 6 decimals", v);
        if (rc < 0)
            return rowerr(r, err, col,
                          "'%s' is not a GPU count (0..65536, or a fraction "
                          "below 1 such as 0.25)",
                          v);
        j->gpus = (int32_t)x;
        j->frac_ppm = (int32_t)ppm;
        return 0;
    }
    case R_GPU_MILLI:
        if (parse_int64(col, v, 1, 1000, &x, &e2) < 0)
            return rowerr(r, err, col,
                          "'%s' is not a share of a GPU in thousandths "
                          "(1..1000)",
                          v);
        r->gpu_milli = x;
        return 0;
    case R_CPUS:
        if (parse_int64(col, v, 0, JOB_CPUS_MAX, &x, &e2) < 0)
            return rowerr(r, err, col, "'%s' is not a CPU count (0..%d)", v,
                          JOB_CPUS_MAX);
        j->cpus = (int32_t)x;
        return 0;
    case R_MEM: {
        uint64_t b;
        if (parse_size(col, v, &b, &e2) < 0)
            return rowerr(r, err, col, "'%s' is not a size such as 20G", v);
        j->mem = b;
        return 0;
    }
    case R_NODES:
        if (parse_int64(col, v, 1, JOB_NODES_MAX, &x, &e2) < 0)
            return rowerr(r, err, col, "'%s' is not a node count (1..1024)", v);
        j->nodes = (int32_t)x;
        return 0;
    case R_TIMESTAMP:
        if (timestamp_s(v, &x) < 0)
            return rowerr(r, err, col, "'%s' is not 'YYYY-MM-DD HH:MM:SS'", v);
        r->stamps[r->t->njobs] = x;
        return 0;
    default:
        return 0;
    }
}

/* The text columns: names, the slice profile, the priority. */
static int text_field(struct reader *r, struct sim_job *j, enum role role,
                      const char *col, const char *v, double *app_hours,
                      struct sh_error *err)
{
    uint32_t id;
    enum job_priority p;
    switch (role) {
    case R_USER:
        return name_field(r, err, col, v, &j->user);
    case R_PROJECT:
        return name_field(r, err, col, v, &j->project);
    case R_GPU_TYPE:
        return gpu_type_field(r, j, col, v, err);
    case R_SLICE:
        /* The rule of job submissions (job_spec_validate), which also keeps
         * out what sim_trace_write could not write back (',', '"'). */
        if (strlen(v) > JOB_SLICE_MAX || !job_ident_valid(v))
            return rowerr(r, err, col, "'%s' is not a slice profile", v);
        if (sim_names_intern(&r->t->names, v, &id) < 0)
            return sh_errorf(err, SH_ETOOLARGE, "too many names");
        j->slice = (int32_t)id;
        return 0;
    case R_PRIORITY:
        if (job_priority_from_name(v, &p) < 0)
            return rowerr(r, err, col, "'%s' is not high, normal or low", v);
        j->prio = (uint8_t)p;
        return 0;
    case R_APPLICATION:
        if (pollux_gpu_hours(v, app_hours) < 0)
            return rowerr(r, err, col,
                          "unknown application '%s' (cifar10, "
                          "ncf, deepspeech2, bert, yolov3, imagenet)",
                          v);
        return name_field(r, err, col, v, &j->project);
    default:
        return 0;
    }
}

static int row_field(struct reader *r, struct sim_job *j, enum role role,
                     const char *col, const char *v, double *app_hours,
                     struct sh_error *err)
{
    bool required = role == R_ID || role == R_SUBMIT || role == R_DURATION ||
                    role == R_GPUS || role == R_TIMESTAMP ||
                    role == R_APPLICATION;
    if (role == R_IGNORE || (!*v && !required))
        return 0; /* ignored, or optional and empty */
    if (num_field(r, j, role, col, v, err) < 0)
        return -1;
    return text_field(r, j, role, col, v, app_hours, err);
}

/* A fraction in millionths as the trace writes it: "0.25". */
static const char *frac_text(int32_t ppm, char *buf, size_t size)
{
    int digits = 6;
    while (digits > 1 && ppm % 10 == 0) {
        ppm /= 10;
        digits--;
    }
    snprintf(buf, size, "0.%0*d", digits, (int)ppm);
    return buf;
}

static int row(struct reader *r, char **f, int n, struct sh_error *err)
{
    struct sim_trace *t = r->t;
    if (n != r->ncols) {
        return rowerr(r, err, NULL, "%d fields, the header has %d", n,
                      r->ncols);
    }
    if (t->njobs == t->cap) {
        if (t->cap >= SIM_JOBS_MAX)
            return sh_errorf(err, SH_ETOOLARGE, "%s:%zu: more than %d jobs",
                             r->in.name, r->in.line, SIM_JOBS_MAX);
        size_t cap = t->cap ? t->cap * 2 : 1024;
        struct sim_job *jobs = realloc(t->jobs, cap * sizeof(*jobs));
        int64_t *st = r->stamps ? realloc(r->stamps, cap * sizeof(*st))
                                : malloc(cap * sizeof(*st));
        if (jobs)
            t->jobs = jobs;
        if (st)
            r->stamps = st;
        if (!jobs || !st)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
        t->cap = cap;
    }
    struct sim_job *j = &t->jobs[t->njobs];
    memset(j, 0, sizeof(*j));
    j->id = t->njobs + 1;
    j->gpu_type = -1;
    j->slice = -1;
    j->prio = JOB_PRIO_NORMAL;
    j->user = j->project = r->default_name;
    bool have_user = false;
    double app_hours = 0;
    char frac[16];
    r->gpu_milli = 0;
    for (int i = 0; i < n; i++) {
        if (row_field(r, j, r->role[i], r->colname[i], f[i], &app_hours, err) <
            0)
            return -1;
        have_user |= r->role[i] == R_USER && *f[i];
    }
    if (!have_user)
        j->user = j->project;
    if (r->gpu_milli > 0 && r->gpu_milli < 1000) {
        /* Alibaba's form of a fraction: gpus 1, gpu_milli 250. */
        if (j->frac_ppm > 0 || j->gpus != 1)
            return rowerr(r, err, "gpu_milli",
                          "%lld thousandths is a share of one GPU: gpus "
                          "must be 1",
                          (long long)r->gpu_milli);
        j->frac_ppm = (int32_t)(r->gpu_milli * 1000);
    }
    if (j->frac_ppm > 0) {
        if (j->slice >= 0)
            return rowerr(r, err, "gpus",
                          "a fraction of a GPU (%s) and a slice exclude "
                          "each other",
                          frac_text(j->frac_ppm, frac, sizeof(frac)));
        if (j->nodes > 1)
            return rowerr(r, err, "gpus",
                          "a fraction of a GPU (%s) runs on 1 node, not %d",
                          frac_text(j->frac_ppm, frac, sizeof(frac)), j->nodes);
    } else if (j->slice >= 0) {
        if (j->gpus > 1 || (j->nodes > 1))
            return rowerr(r, err, "slice",
                          "a slice job takes 1 GPU on 1 "
                          "node");
        j->gpus = 1;
        j->nodes = 1;
    } else if (j->gpus < 1) {
        return rowerr(r, err, "gpus",
                      "must be >= 1, or a fraction of one GPU above 0 such "
                      "as 0.25 (or give a slice)");
    } else if (j->nodes > 0 && j->gpus % j->nodes) {
        return rowerr(r, err, "gpus",
                      "%d GPUs do not split evenly over %d "
                      "nodes",
                      j->gpus, j->nodes);
    }
    if (app_hours > 0)
        j->duration_ms = (int64_t)(app_hours * 3600e3 / j->gpus);
    t->njobs++;
    return 0;
}

static int job_cmp(const void *a, const void *b)
{
    const struct sim_job *x = a, *y = b;
    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int unique_ids(struct sim_trace *t, const char *name,
                      struct sh_error *err)
{
    uint64_t *ids = malloc(sizeof(*ids) * (t->njobs ? t->njobs : 1));
    int rc = 0;
    if (!ids)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    for (size_t i = 0; i < t->njobs; i++)
        ids[i] = t->jobs[i].id;
    qsort(ids, t->njobs, sizeof(*ids), u64_cmp);
    for (size_t i = 1; i < t->njobs; i++) {
        if (ids[i] == ids[i - 1]) {
            rc = sh_errorf(err, SH_EINVAL,
                           "%s: job id %llu appears more "
                           "than once",
                           name, (unsigned long long)ids[i]);
            break;
        }
    }
    free(ids);
    return rc;
}

static int read_all(struct reader *r, enum sim_format format,
                    struct sh_error *err)
{
    char buf[SIM_LINE_MAX + 2];
    char *f[FIELDS_MAX];
    struct sim_trace *t = r->t;
    int rc;
    bool have_header = false;
    if (sim_names_intern(&t->names, "default", &r->default_name) < 0)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    while ((rc = next_line(&r->in, buf, sizeof(buf) - 1)) != 0) {
        if (rc < 0)
            return sh_errorf(err, SH_ETOOLARGE,
                             "%s:%zu: line longer than "
                             "%d bytes",
                             r->in.name, r->in.line + 1, SIM_LINE_MAX);
        if (!*trim(buf))
            continue;
        int n = split_csv(buf, f, FIELDS_MAX);
        if (n < 0)
            return sh_errorf(err, SH_EINVAL, "%s:%zu: more than %d fields",
                             r->in.name, r->in.line, FIELDS_MAX);
        if (!have_header) {
            if (header(r, f, n, format, err) < 0)
                return -1;
            have_header = true;
            continue;
        }
        if (row(r, f, n, err) < 0)
            return -1;
    }
    if (!have_header)
        return sh_errorf(err, SH_EINVAL, "%s: empty trace (no header)",
                         r->in.name);
    if (t->format == SIM_FORMAT_PHILLY && t->njobs > 0) {
        int64_t first = r->stamps[0];
        for (size_t i = 1; i < t->njobs; i++) {
            if (r->stamps[i] < first)
                first = r->stamps[i];
        }
        for (size_t i = 0; i < t->njobs; i++)
            t->jobs[i].submit_ms = (r->stamps[i] - first) * 1000;
    }
    if (unique_ids(t, r->in.name, err) < 0)
        return -1;
    if (t->njobs > 0)
        qsort(t->jobs, t->njobs, sizeof(*t->jobs), job_cmp);
    return 0;
}

static int read_common(struct input *in, enum sim_format format,
                       struct sim_trace *t, struct sh_error *err)
{
    struct reader r;
    memset(t, 0, sizeof(*t));
    memset(&r, 0, sizeof(r));
    r.in = *in;
    r.t = t;
    int rc = read_all(&r, format, err);
    free(r.stamps);
    return rc;
}

int sim_trace_read(FILE *f, const char *name, enum sim_format format,
                   struct sim_trace *t, struct sh_error *err)
{
    struct input in = {.f = f, .name = name};
    return read_common(&in, format, t, err);
}

int sim_trace_parse(const char *text, const char *name, enum sim_format format,
                    struct sim_trace *t, struct sh_error *err)
{
    struct input in = {.text = text, .name = name};
    return read_common(&in, format, t, err);
}

void sim_trace_fini(struct sim_trace *t)
{
    if (!t)
        return;
    free(t->jobs);
    strtab_fini(&t->names);
    memset(t, 0, sizeof(*t));
}

static void put_seconds(FILE *f, int64_t ms)
{
    if (ms % 1000 == 0)
        fprintf(f, "%lld", (long long)(ms / 1000));
    else
        fprintf(f, "%lld.%03lld", (long long)(ms / 1000),
                (long long)(ms % 1000));
}

int sim_trace_write(FILE *f, const struct sim_trace *t)
{
    /* The host columns only when some job has them: traces without stay
     * as they were. */
    bool host = false;
    for (size_t i = 0; i < t->njobs && !host; i++)
        host = t->jobs[i].cpus > 0 || t->jobs[i].mem > 0;
    fprintf(f,
            "id,submit,duration,gpus,nodes,user,project,gpu_type,"
            "priority,time_limit,slice%s\n",
            host ? ",cpus,mem" : "");
    for (size_t i = 0; i < t->njobs; i++) {
        const struct sim_job *j = &t->jobs[i];
        fprintf(f, "%llu,", (unsigned long long)j->id);
        put_seconds(f, j->submit_ms);
        fputc(',', f);
        put_seconds(f, j->duration_ms);
        if (j->frac_ppm > 0) {
            char frac[16];
            fprintf(f, ",%s,", frac_text(j->frac_ppm, frac, sizeof(frac)));
        } else {
            fprintf(f, ",%d,", j->gpus);
        }
        if (j->nodes > 0)
            fprintf(f, "%d", j->nodes);
        fprintf(f, ",%s,%s,%s,%s,", t->names.names[j->user],
                t->names.names[j->project],
                j->gpu_type >= 0 ? t->names.names[j->gpu_type] : "",
                job_priority_name((enum job_priority)j->prio));
        if (j->limit_ms > 0)
            put_seconds(f, j->limit_ms);
        fprintf(f, ",%s", j->slice >= 0 ? t->names.names[j->slice] : "");
        if (host) {
            fputc(',', f);
            if (j->cpus > 0)
                fprintf(f, "%d", j->cpus);
            fputc(',', f);
            if (j->mem > 0)
                fprintf(f, "%lluK",
                        (unsigned long long)((j->mem + 1023) / 1024));
        }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}
