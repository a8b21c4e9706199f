/* SPDX-License-Identifier: Apache-2.0 */
/* The simulator: replay a job trace against a cluster shape with the real
 * scheduling engine (src/sched/) in simulated time, and measure what users
 * would have seen. Discrete events (arrivals, completions, the ends of
 * preemption grace periods) drive the engine; nothing here sleeps or reads
 * a clock except to time itself.
 *
 * Three parts, one file each: the trace reader (sim_trace.c: the CSV
 * contract of doc/design/sim.md plus the Philly, Tiresias and Pollux
 * formats), the cluster spec (sim_cluster.c: "16x8xH100-80GB@32+..."), and
 * the run with its metrics and reports (sim_run.c, sim_report.c).
 */
#ifndef SHOAL_SIM_SIM_H
#define SHOAL_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/model/gpu.h"
#include "lib/util/error.h"
#include "lib/util/strtab.h"
#include "sched/sched.h"

#define SIM_LINE_MAX 4096     /* bytes in one trace line */
#define SIM_JOBS_MAX 10000000 /* jobs in one trace */
#define SIM_NAMES_MAX 1000000 /* distinct users/projects/models */

/* ------------------------------------------------------------- traces */

enum sim_format {
    SIM_FORMAT_AUTO = 0, /* by the header; the contract otherwise */
    SIM_FORMAT_SHOAL,    /* the contract: id,submit,duration,gpus,... */
    SIM_FORMAT_PHILLY,   /* timestamp,duration,num_gpus,gpu_time,cluster */
    SIM_FORMAT_TIRESIAS, /* job_id,num_gpu,submit_time,...,duration,... */
    SIM_FORMAT_POLLUX,   /* name,time,application,num_replicas,batch */
};

struct sim_job {
    uint64_t id; /* the trace's id */
    int64_t submit_ms;
    int64_t duration_ms; /* run time when it runs undisturbed */
    int64_t limit_ms;    /* time limit; 0 = none */
    int32_t gpus;        /* in total (1 for a slice or fraction job) */
    int32_t frac_ppm;    /* gpus below 1: millionths of a GPU; 0 = none */
    int32_t nodes;       /* 0 = the engine chooses */
    uint32_t user;       /* names[] index */
    uint32_t project;    /* names[] index */
    int32_t gpu_type;    /* names[] index ("A|B": any of them), -1 = any */
    int32_t slice;       /* names[] index, -1 = whole GPUs */
    uint8_t prio;        /* enum job_priority */
    int32_t cpus;        /* host CPUs per node; 0 = none */
    uint64_t mem;        /* host memory per node, bytes; 0 = none */
};

/* Interned strings of a trace: lib/util/strtab.h. */

struct sim_trace {
    struct sim_job *jobs; /* sorted by (submit, trace order) */
    size_t njobs;
    size_t cap;
    struct strtab names;
    enum sim_format format;
};

/* Parse a format name ("auto", "shoal", "philly", "tiresias", "pollux"). */
int sim_format_parse(const char *name, enum sim_format *out,
                     struct sh_error *err);

/* Read a trace from f (name is used in messages). Errors (SH_EINVAL,
 * SH_ETOOLARGE) name the line and the column. t is initialised here and
 * must be freed with sim_trace_fini() even on failure. */
int sim_trace_read(FILE *f, const char *name, enum sim_format format,
                   struct sim_trace *t, struct sh_error *err);

/* The same from a string, for tests. */
int sim_trace_parse(const char *text, const char *name, enum sim_format format,
                    struct sim_trace *t, struct sh_error *err);

void sim_trace_fini(struct sim_trace *t);

/* Write t in the contract format (for the converter). */
int sim_trace_write(FILE *f, const struct sim_trace *t);

/* ----------------------------------------------------------- clusters */

/* One group of identical nodes. */
struct sim_pool {
    int nodes;
    int gpus; /* per node */
    char model[GPU_MODEL_MAX];
    uint64_t mem_bytes; /* per GPU, from the model name ("-80GB") */
    int group_size;     /* nodes per topology group; 0 = one group */
    char preset[48];    /* slicing preset; "" = whole GPUs */
    int nslices;        /* per GPU, from the preset */
    struct gpu_slice slices[GPU_SLICES_MAX];
    int cpus;          /* host CPUs per node for jobs; 0 = not counted */
    uint64_t host_mem; /* host memory per node for jobs; 0 = not counted */
};

struct sim_cluster {
    struct sim_pool *pools;
    int npools;
    int nodes; /* in total */
    int gpus;  /* in total */
};

/* Parse "NxGxMODEL[/CPUS/MEM][@GROUP][:PRESET]" terms joined by '+', or,
 * when spec
 * names a readable file, that file (one term or more per line, '#'
 * comments). c is initialised here; free with sim_cluster_fini(). */
int sim_cluster_parse(const char *spec, struct sim_cluster *c,
                      struct sh_error *err);
void sim_cluster_fini(struct sim_cluster *c);

/* Describe the cluster's nodes to an engine: nodes "n00001"... with the
 * topology group "g<pool>-<k>". */
int sim_cluster_apply(const struct sim_cluster *c, struct sched *s,
                      struct sh_error *err);

/* Units of a placement entry on this cluster (840 for a whole GPU, the
 * slice's share otherwise). node is the engine node name. */
int64_t sim_cluster_units(const struct sim_cluster *c, const char *node,
                          int gpu, int slice);

/* --------------------------------------------------------------- runs */

/* Called after every engine run of a replay with its decisions (engine
 * job ids are trace positions + 1). s and dec are borrowed for the call;
 * s may be read (sched_job_status(), sched_job_reason()), not changed. */
typedef void (*sim_decisions_f)(void *arg, struct sched *s, int64_t now,
                                const struct sched_decisions *dec);

/* Checkpoint/resume: the jobs of a project ("all": every job) save their
 * progress when told to stop (at the preemption decision, SIGTERM) and,
 * rerun, continue from it after restore_ms; other jobs rerun from the
 * start. */
#define SIM_RESUME_MAX 32
struct sim_resume {
    char who[SCHED_NAME_MAX + 1]; /* a project, or "all" */
    int64_t restore_ms;
};

/* Parse "WHO:DUR" (DUR like 90s, 2m; 0s for none) into r. SH_EINVAL. */
int sim_resume_parse(const char *spec, struct sim_resume *r,
                     struct sh_error *err);

struct sim_options {
    struct sched_config sched; /* policy, backfill, weights, ... */
    int64_t grace_ms;          /* preempted jobs stop after it */
    bool exact_limits;         /* no time limit: use the duration */
    const char *tenants;       /* sim_tenants_apply() text, or NULL */
    const char *tenants_name;  /* its file name, for messages */
    struct sim_resume resume[SIM_RESUME_MAX]; /* checkpointing jobs */
    int nresume;
    sim_decisions_f on_decisions; /* NULL = none (tests, tools) */
    void *on_decisions_arg;
};

void sim_options_init(struct sim_options *o);

/* Teams, projects and users with quotas and limits (sim_tenants.c's
 * format) applied to an engine. text and file borrowed for the call.
 * SH_EINVAL naming the file and line. */
int sim_tenants_apply(const char *text, const char *file, struct sched *s,
                      struct sh_error *err);

struct sim_project {
    const char *name; /* borrowed from the trace */
    size_t jobs;
    double jct_sum_s;
    double gpu_s;     /* GPU-seconds used (all attempts) */
    double speed_sum; /* sum of duration / JCT over its jobs */
};

/* Jobs this large (GPUs in total) get their own wait figure: big gangs are
 * the ones a scheduler starves. */
#define SIM_BIG_GPUS 8

enum sim_outcome_state {
    SIM_COMPLETED = 0,
    SIM_TIMEOUT,    /* ended at its time limit */
    SIM_REJECTED,   /* can never fit the cluster */
    SIM_UNFINISHED, /* still pending or running at the end */
};

/* "completed", "timeout", "rejected", "unfinished". */
const char *sim_outcome_state_name(enum sim_outcome_state s);

/* What became of one job (trace order after sorting). */
struct sim_outcome {
    int64_t first_start_ms; /* -1 when it never started */
    int64_t start_ms;       /* its last attempt */
    int64_t end_ms;         /* -1 when it never finished */
    uint32_t attempts;
    uint32_t nnodes; /* the nodes of its last attempt: */
    size_t nodes_at; /* outcome_nodes[nodes_at .. + nnodes] */
    uint8_t state;   /* enum sim_outcome_state */
};

struct sim_result {
    size_t jobs;       /* completed */
    size_t rejected;   /* can never fit the cluster */
    size_t unfinished; /* still pending or running at the end */
    size_t timeouts;   /* ran into their time limit */
    size_t preemptions;
    size_t resumes; /* attempts that went on from a checkpoint */
    size_t events;
    double wall_s; /* time the replay took */
    double makespan_s;
    double jct_avg_s, jct_p50_s, jct_p95_s, jct_p99_s;
    double wait_avg_s, wait_p99_s;
    size_t big_jobs;       /* completed jobs of >= SIM_BIG_GPUS GPUs */
    double wait_big_p99_s; /* their queueing delay, p99 */
    double utilization;    /* GPU-time used / (GPUs x makespan) */
    double jain;           /* over projects' mean duration/JCT */
    int gpus;
    int nodes;
    enum sched_policy policy;
    struct sim_project *projects; /* by trace name index order */
    size_t nprojects;
    struct sim_outcome *outcomes; /* one per trace job */
    size_t noutcomes;
    uint32_t *outcome_nodes; /* node indexes (names "n%05d") */
    size_t noutcome_nodes;
};

/* Replay t on c. r is filled (free with sim_result_fini()). Fails only on
 * engine errors (SH_EINTERNAL) or a cluster the engine refuses. */
int sim_run(const struct sim_cluster *c, const struct sim_trace *t,
            const struct sim_options *o, struct sim_result *r,
            struct sh_error *err);
void sim_result_fini(struct sim_result *r);

/* Reports: text for people, JSON with the documented fields. */
void sim_report_text(FILE *f, const struct sim_result *r,
                     const struct sim_cluster *c);
int sim_report_json(FILE *f, const struct sim_result *r);
/* One CSV row per job (shoal sim --outcomes): id, submit, first_start,
 * start, end (seconds; empty when it never happened), attempts, state,
 * nodes (';'-separated, of the last attempt). -1 when writing fails. */
int sim_report_outcomes(FILE *f, const struct sim_trace *t,
                        const struct sim_result *r);

#endif
