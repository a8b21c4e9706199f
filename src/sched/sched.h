/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduling engine: a pure library. The caller (shoald, shoal sim, the
 * tests) tells it about nodes, tenants and jobs, then asks for decisions at a
 * time it passes in. No I/O, no clock, no globals, no logging: everything the
 * engine knows arrives through this header and everything it decides leaves
 * through struct sched_decisions and the job status functions.
 *
 * Time: int64 milliseconds since the Unix epoch (the controller's wall clock;
 * the simulator passes simulated milliseconds). Durations are milliseconds.
 * GPU amounts: fixed-point units, SCHED_UNITS_PER_GPU per whole GPU, so a
 * 1/7 MIG slice is exactly 120 units and a 1/4 time-slice 210.
 *
 * How the controller drives it (see doc/design/sched.md):
 *   1. sched_create(), then describe the world: sched_node_set() per node,
 *      sched_team_set()/sched_project_set() for quotas, sched_user_set() for
 *      per-user limits, sched_usage_seed() from usage history,
 *      sched_job_recover() for jobs found running, sched_job_add() for every
 *      pending job. Rebuilding from scratch is this same sequence.
 *   2. On every change, tell the engine (node events, quota edits, a job
 *      submitted/cancelled/ended) and call sched_run(now). It returns starts
 *      (already applied to the engine's state), preemptions (the caller applies
 *      a grace period, then reports the end with sched_job_end()), and leaves a
 *      reason and estimated start on every pending job it looked at.
 *   3. At submission, sched_job_check() rejects jobs that can never fit and
 *      sched_job_check_limits() those over a run-time or quota limit.
 *   4. If persisting a start fails, throw the engine away and rebuild.
 *
 * Not the engine's business: requeueing (the caller re-adds the job as
 * pending), grace periods, time limits enforcement, talking to agents.
 */
#ifndef SHOAL_SCHED_SCHED_H
#define SHOAL_SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/model/gpu.h"
#include "lib/model/job.h"
#include "lib/model/node.h"
#include "lib/util/error.h"

/* 840 = 2^3 * 3 * 5 * 7: a GPU split in 2..8 parts is a whole number. */
#define SCHED_UNITS_PER_GPU 840
#define SCHED_GPUS(n) ((int64_t)(n)*SCHED_UNITS_PER_GPU)
/* A limit that does not limit. */
#define SCHED_UNLIMITED INT64_C(-1)
/* Deliberate limits of the engine (checked, with errors naming them). */
#define SCHED_MODELS_MAX 64    /* distinct GPU models (a bit mask) */
#define SCHED_PROFILES_MAX 255 /* distinct slice profiles */
#define SCHED_NAME_MAX 64      /* node, project, team, user, group names */
#define SCHED_QUOTAS_MAX 16    /* quota entries per project or team */

struct sched;

/* ---------------------------------------------------------------- config */

enum sched_policy {
    /* Priority, fair share, quotas, backfill; checkpointable jobs also
     * by LAS level first and LAS preemption among them (sched_las.c). */
    SCHED_POLICY_DEFAULT = 0,
    SCHED_POLICY_FIFO, /* submit order; nothing passes the head job */
    /* Least attained service (Tiresias-style, sched_las.c): priority, then
     * the level of the GPU time a job has had, then submit order; backfill
     * and quotas as default; checkpointable jobs of a higher level are
     * preempted for waiting jobs of a lower one. */
    SCHED_POLICY_LAS,
};

/* "default", "fifo", "las"; NULL for a value out of range. */
const char *sched_policy_name(enum sched_policy p);
/* The policy named name: 0, or -1 with SH_EINVAL naming the choices. */
int sched_policy_from_name(const char *name, enum sched_policy *p,
                           struct sh_error *err);

/* LAS levels: at most this many thresholds (levels - 1). */
#define SCHED_LAS_THRESHOLDS_MAX 7

struct sched_config;
/* The LAS thresholds from "DUR[,DUR...]" (GPU time, ascending; a DUR is
 * a whole number with an optional unit s, m, h or d, seconds without)
 * into cfg. 0, or -1 with SH_EINVAL saying what is wrong (cfg unchanged). */
int sched_las_levels_parse(const char *spec, struct sched_config *cfg,
                           struct sh_error *err);

/* The controller's settings, which the simulator takes too
 * (sim_options_init), so both decide alike: a full pass every second, and
 * 10 s from SIGTERM to SIGKILL for a preempted job (shoald --kill-grace's
 * default). The engine's own defaults below stay what its scenario tests
 * were written against. */
#define SCHED_FULL_PASS_MS 1000
#define SCHED_PREEMPT_GRACE_MS 10000
/* ... and the short-job credit (below): 10 days for 1-GPU jobs. */
#define SCHED_SHORT_CREDIT_MS (10 * 24 * 3600 * INT64_C(1000))

struct sched_config {
    enum sched_policy policy;
    /* Queue order within a priority class: score = fair_weight x (fair
     * share - usage share, in [-1, 1]) + age_weight x (age in days). */
    int64_t fair_weight;        /* default 1000 */
    int64_t age_weight;         /* default 10 */
    int64_t usage_half_life_ms; /* usage decay; default 7 days */
    /* Small jobs first, inside the fair-share order (least attained
     * service, as Tiresias/LAS, judged by the size asked for): a pending
     * job counts as submitted this much earlier when it needs 1 GPU per
     * node or a slice, half of it for 2 GPUs, a fifth for 3-4, nothing
     * for more. Bounded, so it is its own starvation guard: a job is
     * passed only by jobs submitted less than the difference after it.
     * 0 = off (the engine's default; shoald and shoal sim use
     * SCHED_SHORT_CREDIT_MS). At most 365 days. */
    int64_t short_credit_ms;
    /* Backfill: reservations for the first blocked jobs (1 = EASY). 0
     * disables backfill (nothing passes a blocked job). Default 1. */
    int max_reservations;
    /* Run time assumed for jobs without a time limit, for reservations and
     * estimates only. Default 24 hours. */
    int64_t default_time_limit_ms;
    /* Grace the caller gives a preempted job, for estimates only. Default
     * 30 s. */
    int64_t preempt_grace_ms;
    /* How often sched_run() recomputes the whole order, fair shares,
     * reservations and every pending reason; in between it only offers
     * freed resources down the current order. 0 = every run. Default 60 s. */
    int64_t full_pass_interval_ms;
    /* Give every pending job a fresh reason in every full pass (default
     * true): after its decisions, the pass walks the jobs it did not reach
     * (a walk that decides nothing). false skips that walk: the simulator,
     * which reads no reasons. Decisions never depend on it. */
    bool all_reasons;
    /* Per-user limits for users without their own; SCHED_UNLIMITED or 0
     * jobs (= unlimited). */
    int64_t user_max_units;
    int user_max_jobs;
    int64_t user_max_time_ms; /* 0 = unlimited */
    /* The LAS policy. A job's level is the number of thresholds its
     * attained service (GPU-ms: GPUs x ms run, over all its runs) has
     * reached; lower levels go first. Default 1 and 10 GPU-hours. */
    int las_nthresholds;
    int64_t las_thresholds[SCHED_LAS_THRESHOLDS_MAX]; /* ascending */
    /* Starvation guard: a pending job waiting (since it was last queued)
     * longer than las_starve_factor x its run time so far, or longer than
     * las_starve_max_ms, goes back to level 0. Default 4 and 2 days;
     * factor 0 = only the bound. */
    int64_t las_starve_factor;
    int64_t las_starve_max_ms;
    /* Aging for the jobs that waited longest: a job that has waited
     * (since its submit time, its run time so far not counted) at least
     * this long when it starts is not preempted by the LAS rule for the
     * first half of that wait, if it has at least las_hold_gpus GPUs.
     * Default 14 days and 8 GPUs; 0 days = off. At most 365 days and
     * 1..65536 GPUs. */
    int64_t las_hold_ms;
    int64_t las_hold_gpus;
    /* A running job is preempted for a lower level only after running
     * this long in its current run (and only when checkpointable).
     * Default 10 minutes. */
    int64_t las_quantum_ms;
    /* Whether the caller re-slices idle GPUs for waiting jobs (shoald
     * --reslice-on-demand): then a sliced GPU may still become a whole GPU,
     * and whether a job can ever fit counts every GPU. false (the default,
     * and the simulator's fixed presets): a whole-GPU job can ever fit only
     * on GPUs that are not sliced, a memory-sized job only in a GPU that is
     * not sliced or in a slice, and a job that cannot is rejected by
     * sched_job_check() or waits with a "can never fit" reason. */
    bool reslice;
};

/* Fill cfg with the documented defaults. */
void sched_config_init(struct sched_config *cfg);

/* ---------------------------------------------------------- lifecycle */

/* Create an engine. cfg is copied (NULL = defaults). NULL with err filled
 * (SH_EINVAL for a bad setting, SH_EINTERNAL when memory is short). */
struct sched *sched_create(const struct sched_config *cfg,
                           struct sh_error *err);

/* Free the engine and everything it owns. NULL-safe; preserves errno. */
void sched_destroy(struct sched *s);

/* --------------------------------------------------------------- nodes */

enum sched_node_state {
    SCHED_NODE_UP = 0,
    SCHED_NODE_DOWN,
    SCHED_NODE_DRAINING,
    SCHED_NODE_DRAINED,
};

/* One GPU as the engine sees it. slices == NULL / nslices == 0: a whole
 * GPU. Otherwise the GPU is divided: MIG slices (kind GPU_SLICE_MIG,
 * profile "1g.10gb") or time-slices (GPU_SLICE_SHARED, profile "shared/4").
 * Each slice's share_num/share_den must give a whole number of units. */
struct sched_gpu_desc {
    const char *model;  /* "H100-80GB"; required */
    uint64_t mem_bytes; /* whole-GPU memory */
    int nvlink_group;   /* GPUs with one group id share NVLink; -1 */
    bool unfenced;      /* time-sliced without MPS: one project only */
    bool unschedulable; /* waiting to be re-sliced: nothing new */
    int nslices;
    const struct gpu_slice *slices;
};

struct sched_node_desc {
    const char *name;  /* the controller's node name */
    const char *group; /* topology group (e.g. the "switch" label) */
    enum sched_node_state state;
    int ngpus;
    const struct sched_gpu_desc *gpus;
    /* Labels jobs' constraints match (borrowed for the call; may be 0). */
    const struct node_label *labels;
    int nlabels;
    /* Host CPUs and memory jobs may be given (what the node has less its
     * reserve for the system); 0 = not counted (any amount fits). */
    int cpus;
    uint64_t mem; /* bytes */
};

/* Fill d from what the agent reported (gpu.h). The strings and slices stay
 * borrowed from info. */
void sched_gpu_desc_from_info(const struct gpu_info *info,
                              struct sched_gpu_desc *d);

/* Add a node or replace its description (state, group, GPUs, slices).
 * A GPU or slice that a running job holds must keep its kind, profile and
 * share (SH_ECONFLICT otherwise); anything else may change. desc is
 * borrowed for the call. SH_EINVAL for a malformed description. */
int sched_node_set(struct sched *s, const struct sched_node_desc *desc,
                   struct sh_error *err);

/* Change only the state of a node (down, draining, ...). SH_ENOTFOUND. */
int sched_node_set_state(struct sched *s, const char *name,
                         enum sched_node_state state, struct sh_error *err);

/* Forget a node. SH_ECONFLICT while jobs hold GPUs on it. */
int sched_node_remove(struct sched *s, const char *name, struct sh_error *err);

/* ------------------------------------------------------------- tenants */

/* One quota entry: model NULL means any GPU model. Amounts in units;
 * limit SCHED_UNLIMITED for none. For a job on model m, the entries that
 * apply are m's and "any": the job is within the guarantee when all of
 * them have room ("160 guaranteed, of which 80 H100"), and every one caps
 * usage with its limit. No entry that applies: no guarantee, no limit. */
struct sched_quota {
    const char *model;
    int64_t guaranteed;
    int64_t limit;
};

/* Create or replace a team's quotas. q (n entries, n may be 0) borrowed. */
int sched_team_set(struct sched *s, const char *team,
                   const struct sched_quota *q, int n, struct sh_error *err);

/* Create or replace a project: its team (NULL = none) and its quotas.
 * Projects named by jobs but never set have no quota entries. While no
 * project and no team has any entry, quotas are off: nothing borrows and
 * nothing is preempted. */
int sched_project_set(struct sched *s, const char *project, const char *team,
                      const struct sched_quota *q, int n, struct sh_error *err);

/* Per-user limits: running units (SCHED_UNLIMITED = none), running jobs
 * (0 = none), longest time limit in ms (0 = none). */
int sched_user_set(struct sched *s, const char *user, int64_t max_units,
                   int max_jobs, int64_t max_time_ms, struct sh_error *err);

/* Add usage from history: unit_ms GPU-unit-milliseconds consumed at time
 * at_ms (decayed to each pass's now with the configured half-life). */
int sched_usage_seed(struct sched *s, const char *project, double unit_ms,
                     int64_t at_ms, struct sh_error *err);

/* ---------------------------------------------------------------- jobs */

/* A job's request. Exactly one of the shapes:
 *  - whole GPUs: slice NULL, gpus >= 1; nodes >= 1 fixes the gang (nodes x
 *    gpus per node); nodes == 0 lets the engine pick the fewest nodes for
 *    gpus in total (one node when one node can hold them, else an even
 *    split). gpu_mem > 0 keeps only models with that much memory.
 *  - a slice: slice = "1g.10gb" (a MIG slice of that profile) or "shared"
 *    (any time-slice) or an exact profile ("shared/4"); gpus 1, nodes <= 1.
 *  - a minimum memory: slice NULL, gpus 1, nodes <= 1, gpu_mem > 0 and
 *    flexible = true: the smallest slice or whole GPU with that memory. */
struct sched_job_desc {
    uint64_t id;
    const char *user;    /* required */
    const char *project; /* required */
    enum job_priority priority;
    int nodes;
    int gpus;
    /* NULL = any model; a model ("H100-80GB"); or a set of models
     * separated by '|' ("A100-80GB|H100-80GB"): the job runs on any one
     * of them that the cluster has, all its GPUs of one model. */
    const char *gpu_type;
    const char *slice; /* NULL = whole GPUs */
    uint64_t gpu_mem;  /* bytes; 0 = any */
    bool flexible;     /* see "a minimum memory" above */
    int64_t submit_ms;
    int64_t time_limit_ms; /* 0 = none */
    /* Where it may run (lib/model/job_place.h; NULL = no wish): only the
     * nodes of nodelist, none of exclude, those whose labels match
     * constraint. A job with any of them, or exclusive, never preempts
     * others (it waits) and is never memoised with other jobs. */
    const char *nodelist;
    const char *exclude;
    const char *constraint;
    /* Whole nodes: only on nodes where nothing else runs, and nothing else
     * starts there while it runs. Whole-GPU jobs only. */
    bool exclusive;
    /* The job saves its state when told to stop and goes on from it when
     * started again: the LAS policy may preempt it. */
    bool checkpointable;
    /* GPU-ms of service it had in earlier runs (a requeued job), for the
     * LAS level; 0 for a new job. */
    int64_t attained_gpu_ms;
    /* When it was (re)queued, for the LAS starvation guard; 0 = submit_ms. */
    int64_t queued_ms;
    /* Host CPUs and memory (bytes) it needs on each of its nodes; 0 = none.
     * Counted against the nodes' cpus and mem (when they give them). */
    int cpus;
    uint64_t mem;
};

/* Whether the job could ever run on the cluster as it is now described
 * (the model exists, the slice profile exists, enough nodes, enough GPUs
 * per node, enough memory; a node with its host CPUs and memory; for a
 * job without GPUs only the last). 0, or -1 with SH_EINVAL saying why.
 * Read-only. */
int sched_job_check(const struct sched *s, const struct sched_job_desc *d,
                    struct sh_error *err);

/* Whether some node could ever hold the job's host CPUs and memory (its
 * cpus and mem per node; the GPU request is not looked at: a job without
 * GPUs too). 0, or -1 with SH_EINVAL naming the largest node's figures
 * ("needs 500G memory on a node but the largest node has 23.6G").
 * sched_job_check() checks this as well. Read-only. */
int sched_job_check_host(const struct sched *s, const struct sched_job_desc *d,
                         struct sh_error *err);

/* The submission-time limits the controller enforces: the user's longest
 * run time and whether the job is larger than its user's, project's or
 * team's limit. 0, or -1 with SH_EQUOTA naming the limit. Read-only. */
int sched_job_check_limits(const struct sched *s,
                           const struct sched_job_desc *d,
                           struct sh_error *err);

/* Add a pending job (also a requeued one: after sched_job_end() the id may
 * be added again). Does not check fit. SH_ECONFLICT when the id is known,
 * SH_EINVAL for a malformed request. d borrowed for the call. */
int sched_job_add(struct sched *s, const struct sched_job_desc *d,
                  struct sh_error *err);

/* One GPU (slice < 0) or one slice of a job's placement. */
struct sched_place {
    const char *node; /* borrowed from the engine until the node goes */
    int gpu;          /* index within the node */
    int slice;        /* index within the GPU; -1 for a whole GPU */
};

/* Add a job already running (restart recovery) with its placement (n
 * entries, borrowed). The GPUs/slices must exist and be free: SH_ECONFLICT
 * otherwise. Limits, quotas and exclusivity are not checked (it already
 * runs), so the order jobs are recovered in does not matter. */
int sched_job_recover(struct sched *s, const struct sched_job_desc *d,
                      int64_t start_ms, const struct sched_place *places, int n,
                      struct sh_error *err);

/* A pending job was cancelled/removed, or a running job's record is
 * dropped. For a running job prefer sched_job_end(). SH_ENOTFOUND. */
int sched_job_remove(struct sched *s, uint64_t id, struct sh_error *err);

/* A running (or preempting) job ended at now: its GPUs are free. The job
 * is forgotten. SH_ENOTFOUND when unknown, SH_ECONFLICT when pending. */
int sched_job_end(struct sched *s, uint64_t id, int64_t now,
                  struct sh_error *err);

/* ----------------------------------------------------------- decisions */

enum sched_preempt_reason {
    SCHED_PREEMPT_RECLAIM = 1, /* an owner's in-quota job needs its share */
    SCHED_PREEMPT_LAS,         /* LAS: a job of a lower level needs its GPUs */
};

struct sched_start {
    uint64_t job;
    size_t first; /* index of its first entry in places[] */
    int nplaces;  /* GPUs or slices, grouped by node in node order */
    int nnodes;
};

struct sched_preempt {
    uint64_t job;     /* the job to stop */
    uint64_t for_job; /* the pending job that needs its GPUs */
    enum sched_preempt_reason reason;
};

/* Caller-allocated; sched_run() fills it (emptying it first). */
struct sched_decisions {
    struct sched_start *starts;
    size_t nstarts;
    size_t starts_cap;
    struct sched_place *places;
    size_t nplaces;
    size_t places_cap;
    struct sched_preempt *preempts;
    size_t npreempts;
    size_t preempts_cap;
    bool full_pass; /* this run recomputed every pending job */
    size_t visited; /* pending jobs looked at */
};

void sched_decisions_init(struct sched_decisions *d);
void sched_decisions_fini(struct sched_decisions *d);

/* Decide at time now (ms, >= the previous run's now). Starts are applied to
 * the engine before it returns; preempted jobs keep their GPUs (state
 * "preempting") until sched_job_end(). A full pass runs when forced (full),
 * after any change to nodes, tenants or config, or when
 * full_pass_interval_ms passed; otherwise an incremental pass offers the
 * free resources down the current order and stops when nothing more can
 * start. out (borrowed for the call; its arrays are reused) is emptied
 * and refilled. -1 with SH_EINTERNAL only when memory is short: the starts
 * and preemptions already in out were applied to the engine; persist them
 * or rebuild the engine. */
int sched_run(struct sched *s, int64_t now, bool full,
              struct sched_decisions *out, struct sh_error *err);

/* -------------------------------------------------------- job status */

enum sched_job_state {
    SCHED_JOB_PENDING = 0,
    SCHED_JOB_RUNNING,
    SCHED_JOB_PREEMPTING, /* running, told to stop */
};

/* Why a pending job waits. Kept as a code plus numbers; text on demand. */
enum sched_wait {
    SCHED_WAIT_NEW = 0,       /* not yet looked at by a pass */
    SCHED_WAIT_QUOTA_PROJECT, /* project limit reached */
    SCHED_WAIT_QUOTA_TEAM,    /* team limit reached */
    SCHED_WAIT_USER_GPUS,     /* user's running GPU limit */
    SCHED_WAIT_USER_JOBS,     /* user's running job limit */
    SCHED_WAIT_RESOURCES,     /* not enough free GPUs of the right kind */
    SCHED_WAIT_RESERVED,      /* holds a reservation; waits for it */
    SCHED_WAIT_RESERVATION,   /* would delay another job's reservation */
    SCHED_WAIT_PRIORITY,      /* behind higher-priority jobs */
    SCHED_WAIT_PREEMPTING,    /* waits for preempted jobs to stop */
    SCHED_WAIT_NEVER,         /* cannot fit the cluster as it is now */
};

/* Why a pending job has no estimated start (sched_plan_estimates()). */
enum sched_est_why {
    SCHED_EST_OK = 0,  /* it has one */
    SCHED_EST_LIMITS,  /* waits for a quota or user limit */
    SCHED_EST_NEVER,   /* can never fit */
    SCHED_EST_NO_ROOM, /* not even once every running job has ended */
    SCHED_EST_FAR,     /* beyond the first SCHED_PLAN_MAX of the order */
    SCHED_EST_STALE,   /* no plan since the last change */
};

/* Jobs planned per plan (the rest of the order: SCHED_EST_FAR). */
#define SCHED_PLAN_MAX 2000
#define SCHED_PLAN_MAX_TEXT "2000"

struct sched_job_status {
    enum sched_job_state state;
    enum sched_wait wait;       /* pending only */
    int64_t est_start_ms;       /* pending: 0 when unknown */
    enum sched_est_why est_why; /* pending: why est_start_ms is 0 */
    int64_t start_ms;           /* running */
    uint64_t other_job;         /* the reservation holder / preempting-for */
};

/* Status of a job. SH_ENOTFOUND when the engine does not know it. */
int sched_job_status(const struct sched *s, uint64_t id,
                     struct sched_job_status *st, struct sh_error *err);

/* Plan an estimated start for every pending job: the queue order, each
 * job at the earliest time its shape fits once the jobs before it and the
 * running ones hold their GPUs until their time limits (reservation
 * holders and preemptors keep the engine's own estimate). Decides nothing.
 * Cheap when nothing changed since the last plan; sched_job_status() reads
 * it until the next change. Fails only out of memory. */
int sched_plan_estimates(struct sched *s, int64_t now, struct sh_error *err);

/* "no estimate: ..." for a status's est_why ("" for SCHED_EST_OK). */
const char *sched_est_why_text(enum sched_est_why why);

/* The pending reason as text a person reads, e.g.
 * "quota: project vision 8/8 H100-80GB guaranteed, limit 12 reached".
 * Formatted from the current state into buf (truncated to size). Returns
 * buf; "" for a job that is not pending or unknown. */
const char *sched_job_reason(const struct sched *s, uint64_t id, char *buf,
                             size_t size);

/* The placement of a running job: fills up to max entries and returns how
 * many it has (which may exceed max); -1 when not running. */
int sched_job_placement(const struct sched *s, uint64_t id,
                        struct sched_place *out, int max);

/* --------------------------------------------------- figures and checks */

struct sched_stats {
    size_t nodes;
    size_t gpus;
    size_t pending;
    size_t running;
    int64_t free_units; /* schedulable and free, whole and sliced */
    int64_t used_units;
    size_t full_passes;
    size_t incremental_passes;
};

void sched_stats_get(const struct sched *s, struct sched_stats *st);

/* Recompute every count, index and owner from the placements and compare:
 * no GPU or slice given twice, gangs whole, usage within limits, unfenced
 * GPUs single-project, accounting totals consistent. 0, or -1 with
 * SH_EINTERNAL describing the first inconsistency. For tests. */
int sched_check_invariants(const struct sched *s, struct sh_error *err);

/* Names used in reasons and tools. */
const char *sched_wait_name(enum sched_wait w);

#endif
