/* SPDX-License-Identifier: Apache-2.0 */
/* The job: what a user asked for (struct job_spec) and what became of it
 * (struct job). This module owns the limits on every field, validation, and
 * the job state machine. It does no I/O.
 *
 * Job lifecycle. Every state change goes through job_transition(), the one
 * place that knows which changes are legal:
 *
 *              job_transition(RUNNING)
 *  PENDING ─────────────────────────────▶ RUNNING
 *    │  ▲                                   │
 *    │  │ requeue (spec.requeue only)       ├──▶ COMPLETED   exit code 0
 *    │  └──────────── PREEMPTED ◀───────────┤
 *    │  └──────────── NODE_FAIL ◀───────────┤
 *    │                                      ├──▶ FAILED      exit != 0 / signal
 *    │                                      ├──▶ TIMEOUT     time limit reached
 *    └──────────────▶ CANCELLED ◀───────────┘
 *
 * Besides, any end goes back to PENDING when a user asked for it (`shoal
 * requeue` sets job.requeue_asked; the requeue clears it).
 *
 * Invariants (checked by job_check_invariants):
 *  PENDING   no placement, start_ms == 0 (or from a previous run: requeues > 0)
 *  RUNNING   placement of spec.nodes nodes (>= 1 with gpus_total), start_ms >= submit_ms, end_ms == 0
 *  terminal  end_ms >= start_ms; COMPLETED/FAILED carry an exit status.
 * A job in a terminal state may still hold its GPUs (job.releasing) until
 * the agent confirms its processes are gone; the scheduler counts them busy.
 */
#ifndef SHOAL_MODEL_JOB_H
#define SHOAL_MODEL_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/model/job_container.h"
#include "lib/util/error.h"

/* Limits on what a job may ask for. Each is enforced by job_spec_validate()
 * and named in its error messages. */
#define JOB_NAME_MAX 128 /* bytes */
#define JOB_IDENT_MAX 64 /* user, project, gpu type, volume names */
#define JOB_SLICE_MAX 32 /* slice profile name */
#define JOB_NODES_MAX 1024
#define JOB_GPUS_PER_NODE_MAX 64
#define JOB_GPUS_TOTAL_MAX (JOB_NODES_MAX * JOB_GPUS_PER_NODE_MAX)
#define JOB_CPUS_MAX 4096
#define JOB_TASKS_PER_NODE_MAX 256
#define JOB_ARGC_MAX 1024
#define JOB_ARG_MAX 65536         /* bytes in one argument */
#define JOB_ARGV_TOTAL_MAX 262144 /* bytes in all arguments together */
#define JOB_ENV_MAX 256           /* entries */
#define JOB_ENV_VALUE_MAX 32768   /* bytes in one value */
#define JOB_PATH_MAX 4096
#define JOB_VOLUMES_MAX 32
#define JOB_REASON_MAX 256
#define JOB_SCRIPT_MAX 262144 /* bytes of a batch script */

enum job_state {
    JOB_PENDING = 0,
    JOB_RUNNING,
    JOB_COMPLETED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_PREEMPTED,
    JOB_TIMEOUT,
    JOB_NODE_FAIL,
    JOB_STATE_COUNT,
};

enum job_priority {
    JOB_PRIO_HIGH = 0,
    JOB_PRIO_NORMAL = 1,
    JOB_PRIO_LOW = 2,
    JOB_PRIO_COUNT,
};

struct job_env {
    char *key;
    char *value;
};

struct job_dep;

struct job_volume {
    char *name;    /* a volume the project may use */
    char *path;    /* absolute mount point inside the job */
    bool readonly; /* mounted read-only even when the volume is not */
};

/* What the user asked for. Plain data; job_spec_fini() frees the strings. */
struct job_spec {
    char *name;       /* optional; NULL when not given */
    char *user;       /* set by the controller from the caller's identity */
    char *project;    /* NULL until the controller fills the default */
    char *partition;  /* an admin's partition (shoald/partitions.h): its
                        nodes, time limits and projects; NULL = none */
    char *qos;        /* an admin's QOS: its priority and limits; NULL */
    int qos_max_gpus; /* the QOS's GPUs per user, running (copied at
                         submission: shoald/gate.c holds the job back past
                         it); 0 = no limit */
    int mail_events;  /* lib/model/job_mail.h: events to notify; 0 none */
    char *mail_user;  /* who is told (--mail-user); NULL = the user */
    enum job_priority priority;
    int nodes;           /* >= 1; 0 with gpus_total */
    int gpus_per_node;   /* 0..JOB_GPUS_PER_NODE_MAX; 1 for a slice job;
                            0 with gpus_total */
    int gpus_total;      /* > 0: this many GPUs in all, and the engine picks
                            nodes x GPUs per node (the fewest nodes that
                            hold them, the same count on each); nodes and
                            gpus_per_node are then 0, and the shape it ran
                            with is its placement's. 0 = not given */
    char *gpu_type;      /* model constraint, e.g. "H100-80GB"; NULL = any */
    char *slice;         /* slice profile ("1g.10gb", "shared"); NULL = whole */
    uint64_t gpu_mem;    /* bytes of GPU memory wanted per GPU; 0 = any */
    int cpus;            /* per node; 0 = no request */
    uint64_t mem;        /* bytes per node; 0 = no request */
    int64_t time_limit;  /* seconds; 0 = none given */
    int tasks_per_node;  /* >= 1 */
    bool requeue;        /* back to pending after preemption or node failure */
    bool checkpointable; /* saves its state on SIGTERM and goes on from it
                            when started again: the LAS policy may preempt
                            it (needs requeue) */
    char *script;        /* a batch script's text, or NULL; the agent runs
                           it as a file (its #! line picks the interpreter)
                           with argv as its arguments */
    char **argv;         /* argc strings, then NULL; with a script, its
                           arguments (may be empty), else the command */
    bool batch;          /* "launch": "batch": run once, on the first node
                            (Slurm's batch step; srun starts the tasks);
                            false = "tasks": tasks_per_node tasks on every
                            node */
    char *submit_dir;    /* where the job was submitted from (absolute), for
                            SLURM_SUBMIT_DIR; NULL = not given */
    int argc;
    struct job_env *env;
    int nenv;
    char *workdir; /* absolute; NULL = the user's home on the node */
    struct job_volume *volumes;
    int nvolumes;
    struct job_dep *deps; /* lib/model/job_deps.h: run after these */
    int ndeps;
    bool hold;   /* submitted held: waits for `shoal release` */
    char *array; /* lib/model/job_array.h: "0-99%8"; one job per task */
    /* Where it may run (lib/model/job_place.h); NULL = anywhere. */
    char *nodelist;   /* "a,b": exactly these nodes (as many as nodes) */
    char *exclude;    /* "c": never these */
    char *constraint; /* on node labels: "a100", "a100&ib|h100" */
    bool exclusive;   /* whole nodes: shares them with no other job */
    int64_t begin_ms; /* not eligible before (epoch ms); 0 = at once */
    struct job_container container; /* job_container.h; image NULL = bare */
    /* Files for the tasks' stdout / stderr (lib/model/job_output.h
     * patterns, relative to workdir); NULL = kept for shoal logs. Without
     * error, stderr goes to output too. */
    char *output;
    char *error;
};

/* The attempts a job keeps: the last JOB_ATTEMPTS_KEPT ended runs before
 * the current one (older ones are dropped, so a job requeued forever
 * keeps a bounded record; their numbers say which remain). */
#define JOB_ATTEMPTS_KEPT 32

/* One earlier attempt of a requeued job, as it ended. */
struct job_attempt {
    int attempt;          /* 0 for the first run, +1 per requeue */
    int64_t start_ms;     /* 0: it never started (ended while pending) */
    int64_t end_ms;       /* 0 unknown */
    char *nodes;          /* "n1,n2" it ran on; NULL when none */
    enum job_state state; /* how it ended */
    int exit_code;        /* -1 unknown */
    int exit_signal;      /* 0 none */
    char *reason;         /* how it ended, or NULL */
};

/* One node's share of a running job. */
struct job_alloc {
    char *node;  /* node name */
    char **gpus; /* GPU or slice UUIDs assigned on that node */
    int ngpus;
    double share;    /* GPUs held here, slices as their share */
    bool done;       /* its processes on this node are gone */
    int exit_code;   /* of this node's part; -1 unknown */
    int exit_signal; /* 0 none */
    bool reported;   /* its node reported this attempt's run (in memory
                        only): its work needs no registry credentials */
};

struct job {
    uint64_t id;
    struct job_spec spec;
    enum job_state state;
    int64_t submit_ms;  /* wall clock, epoch ms */
    int64_t queued_ms;  /* when it last entered the queue (submission or
                          requeue): its age in the queue order */
    int64_t start_ms;   /* 0 until it first runs */
    int64_t end_ms;     /* 0 until terminal */
    int exit_code;      /* -1 when unknown */
    int exit_signal;    /* 0 when none */
    int requeues;       /* times it went back to pending */
    bool releasing;     /* terminal, but its GPUs are not yet confirmed free */
    bool held;          /* pending, kept out of scheduling until released */
    bool requeue_asked; /* shoal requeue: back to pending once it ended */
    uint64_t array_id;  /* a task of this array (its first job's id); 0 */
    int array_task;     /* its index in the array */
    int array_max;      /* the array's %M: tasks running or queued at once */
    bool array_counted; /* (in memory) counted against array_max */
    char *reason;       /* why pending / how it ended; may be NULL */
    int64_t est_start_ms; /* estimated start for pending jobs; 0 = unknown */
    int master_port;      /* MASTER_PORT for distributed launchers; 0 none */
    /* The digest its image reference resolved to on its first node, this
     * attempt ("sha256:HEX", checked); every other node pulls that. NULL
     * until known; cleared when it goes back to the queue (a requeued
     * job resolves its reference again). */
    char *image_digest;
    /* The submission's Idempotency-Key (job_idem_key_valid), kept so that
     * a retried submission finds this job instead of making another, on
     * any controller; NULL when none was given. */
    char *idem_key;
    struct job_alloc *alloc;
    int nalloc;
    /* Accounting and idle detection, kept by the controller. */
    char *gpu_model;         /* model of its GPUs when it started; NULL */
    double util_sum;         /* GPU utilization % x ms, summed over samples */
    int64_t util_ms;         /* ms the samples cover */
    int64_t idle_since_ms;   /* all its GPUs below the idle threshold since */
    bool idle;               /* flagged idle (its project's policy acts) */
    uint64_t cpu_ns;         /* CPU time its processes used (cgroups) */
    uint64_t mem_peak;       /* the most memory it used on one node */
    int64_t attained_gpu_ms; /* GPU time of its earlier runs (the LAS
                                policy's attained service; stored) */
    /* Its earlier attempts, oldest first (at most JOB_ATTEMPTS_KEPT);
     * the current one is the fields above. Stored. */
    struct job_attempt *past;
    int npast;
};

/* Names as users see them ("pending", "node_fail", "high"). */
const char *job_state_name(enum job_state s);
int job_state_from_name(const char *name, enum job_state *out);
const char *job_priority_name(enum job_priority p);
int job_priority_from_name(const char *name, enum job_priority *out);

/* True for completed, failed, cancelled, timeout, and for preempted and
 * node_fail (which are final unless requeued). */
bool job_state_is_terminal(enum job_state s);

/* True when a name is a valid identifier for users, projects, teams, volumes
 * and nodes: 1..JOB_IDENT_MAX of [A-Za-z0-9._-], not starting with '-' or
 * '.'. */
bool job_ident_valid(const char *s);

/* An Idempotency-Key: 1..JOB_IDEM_KEY_MAX of A-Z a-z 0-9 '-' '_' '.'
 * ':'. */
#define JOB_IDEM_KEY_MAX 64
bool job_idem_key_valid(const char *key);

/* Initialise a spec with the defaults: 1 node, 0 GPUs, normal priority,
 * 1 task per node. */
void job_spec_init(struct job_spec *spec);
void job_spec_fini(struct job_spec *spec);

/* Check every field against the limits above. The controller calls it after
 * filling user and project. Borrowed for the call. */
int job_spec_validate(const struct job_spec *spec, struct sh_error *err);

/* Deep copy of src into dst (which is overwritten). -1 on out of memory. */
int job_spec_copy(struct job_spec *dst, const struct job_spec *src);

/* Whether the job asks for GPUs (whole, slices or a total). */
bool job_spec_uses_gpus(const struct job_spec *spec);

/* Total GPUs the job asks for (nodes x GPUs per node, or gpus_total). */
int job_spec_total_gpus(const struct job_spec *spec);

/* Heap-allocate a job; takes ownership of *spec's contents (spec is left
 * initialised and empty). state = PENDING. NULL on out of memory. */
struct job *job_create(uint64_t id, struct job_spec *spec, int64_t submit_ms);
void job_destroy(struct job *job);

/* Whether from -> to is legal for this job (requeue only with
 * spec.requeue). Fills err with SH_ECONFLICT naming both states when not. */
int job_transition_check(const struct job *job, enum job_state to,
                         struct sh_error *err);

/* Perform a legal transition at time now_ms: sets timestamps, clears the
 * placement on requeue, counts requeues. Fails (and changes nothing) when
 * job_transition_check() does. */
int job_transition(struct job *job, enum job_state to, int64_t now_ms,
                   struct sh_error *err);

/* Replace the reason (copied; NULL clears). -1 on out of memory. */
int job_set_reason(struct job *job, const char *reason);

/* The attempt number of the current run: 0 for the first, +1 per requeue.
 * Agents name a run by (id, attempt) so a requeued job never runs twice. */
int job_attempt(const struct job *job);

/* Whether the current attempt has started (its start_ms is this
 * attempt's, not a previous run's). */
bool job_attempt_started(const struct job *job);

/* Append an earlier attempt (taking ownership of its strings), dropping the
 * oldest beyond JOB_ATTEMPTS_KEPT. job_transition() calls it on requeue;
 * the store's reader too. -1 on out of memory (the strings are freed). */
int job_attempt_push(struct job *job, struct job_attempt *a);
void job_attempt_fini(struct job_attempt *a);

/* The nodes of the placement as "n1,n2", or NULL when none or out of
 * memory. The caller frees it. */
char *job_alloc_nodes(const struct job *job);

/* True while some node's part of the job has not confirmed its end. */
bool job_parts_active(const struct job *job);

/* Replace the placement. Takes ownership of alloc (an array of n entries). */
void job_set_alloc(struct job *job, struct job_alloc *alloc, int n);
void job_alloc_free(struct job_alloc *alloc, int n);

/* GPU-seconds of the current run until now_ms (or its end): each node's
 * share (whole GPUs 1, a slice its share) times the run time. */
double job_gpu_seconds(const struct job *job, int64_t now_ms);

/* Average GPU utilization over the job's life in %, or -1 unknown. */
double job_util_avg(const struct job *job);

/* Assert-style self check for tests; returns 0 or -1 with err filled. */
int job_check_invariants(const struct job *job, struct sh_error *err);

#endif
