/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the scheduling engine shared by its files: the state
 * (nodes, GPUs, slices, tenants, jobs), the availability indexes, and the
 * per-run pass state. Not a public header: only src/sched/ includes it.
 *
 * Everything refers to everything else by 32-bit index (jobs, nodes,
 * projects, ...), never by pointer, so arrays may grow and per-job state
 * stays small (the controller keeps 100,000s of pending jobs).
 */
#ifndef SHOAL_SCHED_SCHED_INT_H
#define SHOAL_SCHED_SCHED_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/model/node.h"
#include "lib/util/strtab.h"
#include "sched/sched.h"

#define SCHED_NONE UINT32_MAX
#define SCHED_NONE16 UINT16_MAX
#define SCHED_KMAX GPU_PER_NODE_MAX /* free GPUs per node, 0..64 */
#define SCHED_MEMO_MAX 32
/* Pending queues per project and priority class, by size: jobs needing 1,
 * 2, 3-4, 5-8 and 9+ GPUs per node, and slice/memory jobs; a pass offering
 * a few free GPUs skips the classes that cannot use them. */
#define SCHED_CLASSES 6
#define SCHED_CLASS_SLICE 5
#define SCHED_NQUEUES (JOB_PRIO_COUNT * SCHED_CLASSES) /* per project */
#define SCHED_DUR_BUCKETS 256
#define SCHED_BLOCK_MAX 16
#define SCHED_NCLS 5 /* node-count classes: 1, 2, 3-4, 5-8, 9+ */

/* ------------------------------------------------------------ helpers */

/* Interned names: lib/util/strtab.h. */
#define sched_strtab strtab

/* Job id -> job index, linear probing with backward-shift deletion. */
struct sched_idmap {
    uint64_t *keys;
    uint32_t *vals; /* SCHED_NONE = empty */
    uint32_t cap;   /* power of two */
    uint32_t n;
};

int idmap_put(struct sched_idmap *m, uint64_t key, uint32_t val);
uint32_t idmap_get(const struct sched_idmap *m, uint64_t key);
void idmap_del(struct sched_idmap *m, uint64_t key);
void idmap_fini(struct sched_idmap *m);

static inline void bits_set(uint64_t *w, uint32_t i)
{
    w[i >> 6] |= UINT64_C(1) << (i & 63);
}

static inline void bits_clear(uint64_t *w, uint32_t i)
{
    w[i >> 6] &= ~(UINT64_C(1) << (i & 63));
}

static inline bool bits_test(const uint64_t *w, uint32_t i)
{
    return (w[i >> 6] >> (i & 63)) & 1;
}

/* Set bits of x. Inline: the build targets baseline x86-64 (no POPCNT), where
 * __builtin_popcountll is a call into libgcc's table walk, and GPU masks are
 * counted in the engine's hottest loops (reservations, placement). */
static inline int sched_popcount64(uint64_t x)
{
    x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
    x = (x & UINT64_C(0x3333333333333333)) +
        ((x >> 2) & UINT64_C(0x3333333333333333));
    x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (int)((x * UINT64_C(0x0101010101010101)) >> 56);
}

/* ------------------------------------------------------------- state */

struct slas_slot {
    int64_t until;
    uint8_t key;
};

enum {
    SGPU_SLICED = 1 << 0,
    SGPU_UNFENCED = 1 << 1,
    SGPU_UNSCHED = 1 << 2,
};

struct sslice {
    uint16_t profile;
    uint8_t kind;   /* enum gpu_slice_kind */
    uint32_t units; /* share of the GPU in units */
    uint64_t mem;
    uint32_t job; /* holder, or SCHED_NONE */
};

struct sgpu {
    uint16_t model;
    int16_t nvl; /* NVLink group, -1 */
    uint8_t flags;
    uint8_t nslices;
    uint16_t slice_free;    /* mask of free slices */
    uint32_t job;           /* whole-GPU holder, or SCHED_NONE */
    uint32_t fence_project; /* unfenced: project holding slices */
    uint16_t fence_count;   /* slices held on it */
    uint64_t mem;
    struct sslice *slices;
    /* Reservation made by the last full pass (epoch). */
    int64_t resv_time;
    uint32_t resv_epoch;
    uint32_t resv_job;
};

struct snode_model {
    uint16_t model;
    uint8_t k;     /* row it is indexed under; 0 = not indexed */
    uint64_t mask; /* whole GPUs of this model (schedulable or not) */
};

struct snode_pf {
    uint16_t profile;
    uint16_t free; /* free schedulable slices of it */
};

struct snode {
    uint32_t group; /* topology group id, SCHED_NONE = none */
    uint8_t state;  /* enum sched_node_state */
    bool present;
    uint8_t ngpus;
    uint8_t nmodels;
    uint8_t nnvl;
    uint8_t npf;
    bool indexed; /* in the availability indexes (up) */
    struct sgpu *gpus;
    uint64_t whole; /* whole and schedulable GPUs */
    uint64_t free;  /* whole, schedulable and not held */
    struct snode_model *models;
    uint64_t *nvl; /* NVLink group masks (singletons for -1) */
    struct snode_pf *pf;
    uint32_t nheld;      /* GPUs and slices held by jobs */
    uint32_t resv_epoch; /* some GPU here is reserved in this epoch */
    /* Reservation shadow (the future, as running jobs end): the free GPUs,
     * the jobs without GPUs still running, and while the exclusive job
     * here runs (shadow_excl) the GPUs it keeps from others (shadow_held,
     * not in shadow). */
    uint64_t shadow;
    uint64_t shadow_held;
    uint32_t shadow_stamp;
    uint32_t shadow_ncpu;
    uint32_t shadow_excl;
    /* Labels, for jobs' constraints (owned copies). */
    struct node_label *labels;
    int nlabels;
    uint32_t excl;  /* the exclusive job running here, or SCHED_NONE */
    bool shared;    /* recovery found an exclusive job here beside others
                       (kept until no job runs here) */
    uint32_t njobs; /* running jobs with a part here (GPU and CPU) */
    uint32_t ncpu;  /* ... of them without GPUs */
    /* Host CPUs and memory (MiB) jobs may hold (0: not counted), and what
     * running jobs hold; over_ok while a description lowered them under
     * what runs (kept until it fits again). */
    uint32_t cpus;
    uint32_t cpus_used;
    uint32_t mem_mib;
    uint32_t mem_used;
    bool over_ok;
    /* Reservation shadow: the CPUs and memory free as running jobs end. */
    int64_t shadow_cpus;
    int64_t shadow_mem;
};

struct smodel {
    uint64_t mem;     /* largest memory seen for the model */
    uint64_t fit_mem; /* most memory one memory-sized job can get: an
                         unsliced GPU's or a slice's (any GPU's with
                         cfg.reslice) */
    int maxper;      /* most GPUs of it that can be whole on one present node */
    uint32_t nnodes; /* present nodes with it */
    uint32_t atleast[SCHED_KMAX + 1]; /* present nodes with >= k of it */
    int64_t free_gpus;                /* free whole GPUs on indexed nodes */
    uint64_t *by_free; /* (SCHED_KMAX + 1) rows of node bitsets */
    uint32_t cnt[SCHED_KMAX + 1];
};

struct sprofile {
    uint64_t mem_min;  /* smallest slice memory seen (0 = none) */
    int64_t units_max; /* largest share seen, in units */
    uint32_t nexist;   /* slices of it on present nodes */
    int64_t free;      /* free slices on indexed nodes */
    uint64_t *nodes;   /* indexed nodes with a free slice of it */
};

/* Quota entries of a project or team, by model id, plus "any". */
struct squota {
    uint64_t has; /* models with an entry */
    bool has_any;
    int64_t g[SCHED_MODELS_MAX];
    int64_t l[SCHED_MODELS_MAX];
    int64_t g_any;
    int64_t l_any;
};

/* What a project or team holds, by model and in total. */
struct susage {
    int64_t used[SCHED_MODELS_MAX];
    int64_t used_total;
    int64_t claim[SCHED_MODELS_MAX]; /* pledged to pending preemptors */
    int64_t claim_total;
    int64_t stopping[SCHED_MODELS_MAX]; /* held by preempting jobs */
    int64_t stopping_total;
};

struct squeue {
    uint32_t head;
    uint32_t tail;
    uint32_t count;
    bool unsorted; /* an out-of-order insert; sorted before a pass */
};

struct steam {
    struct squota q;
    struct susage u;
    bool over_ok; /* above a limit lowered under its usage */
};

struct sproject {
    uint32_t team;  /* SCHED_NONE = none */
    bool set;       /* configured with sched_project_set() */
    bool over_ok;   /* above a limit lowered under its usage */
    bool borrowing; /* above its guarantee somewhere */
    struct squota q;
    struct susage u;
    double usage; /* decayed unit-ms, as of usage_t */
    int64_t usage_t;
    int64_t running_units;
    int64_t key; /* fair-share score of the last full pass */
    struct squeue queues[JOB_PRIO_COUNT][SCHED_CLASSES];
    uint32_t npending; /* jobs in those queues */
    uint32_t qmask;    /* bit prio*SCHED_CLASSES+class: non-empty */
};

struct suser {
    int64_t max_units;   /* SCHED_UNLIMITED = none */
    int max_jobs;        /* 0 = none */
    int64_t max_time_ms; /* 0 = none */
    bool own;            /* set with sched_user_set() */
    int64_t used_units;
    int running;
    bool over_ok;         /* above a limit lowered under its usage */
    uint32_t cpu_pending; /* pending jobs without GPUs */
};

enum sjob_kind {
    SJOB_WHOLE = 0,
    SJOB_SLICE,
    SJOB_FLEX, /* smallest slice or whole GPU with gpu_mem */
    SJOB_CPU,  /* no GPU: a node only (sched_cpu.c) */
};

struct splace {
    uint32_t node;
    uint8_t gpu;
    int8_t slice; /* -1 whole */
};

/* Where a job may run (--nodelist, --exclude, --constraint), with the
 * nodes that qualify as a bitset computed for one node version. */
struct sfilter {
    char *nodelist; /* owned texts, NULL = no wish */
    char *exclude;
    char *constraint;
    uint64_t *allow; /* nodes that qualify, nbits of them */
    uint32_t nbits;
    uint32_t nallow;  /* present nodes that qualify */
    uint32_t version; /* s->nodes_version it was computed for */
};

struct sjob {
    struct sfilter *filter; /* NULL = any node */
    uint64_t id;
    int64_t submit;
    int64_t limit;  /* ms; 0 none */
    int64_t start;  /* running: start time */
    int64_t est;    /* pending: estimated start; running: end */
    uint64_t other; /* reason's other job / preempting-for job */
    /* Model constraint: the allowed model ids (a set), 0 = any. */
    uint64_t models;
    uint32_t user;
    uint32_t project;
    uint32_t next;        /* pending: queue link; free list link */
    uint32_t prev;        /* pending: queue link; running: running[] slot */
    struct splace *place; /* running: placement (owned) */
    uint32_t units;       /* running: units held */
    uint32_t gpus;        /* whole: per node (total when nodes == 0) */
    uint32_t mem_mib;     /* gpu_mem in MiB */
    uint32_t host_cpus;   /* host CPUs per node (0: none) */
    uint32_t host_mem;    /* host memory per node in MiB (0: none) */
    uint32_t wait_arg;    /* reason detail (model id, ...) */
    uint16_t nodes;       /* 0 = auto */
    uint16_t nplace;
    uint16_t model;   /* constraint of one model; SCHED_NONE16 = any or set */
    uint16_t profile; /* slice profile, SCHED_NONE16 */
    uint16_t run_model;
    uint16_t victims; /* preempting jobs this job waits for */
    uint8_t prio;
    uint8_t state; /* enum sched_job_state; 0xff = free slot */
    uint8_t kind;  /* enum sjob_kind */
    uint8_t wait;  /* enum sched_wait */
    uint8_t lb;    /* pending: fewest GPUs it needs on a node */
    uint8_t ncls;  /* pending: class of its fewest nodes */
    bool excl;     /* whole nodes, shared with no other job */
    /* LAS (sched_las.c): service from earlier runs, when it was queued,
     * its level while pending (0 once promoted by the starvation guard),
     * and whether it may be preempted for a lower level. */
    uint8_t las_lvl;
    bool ckpt;
    /* Running: its level (set when it starts and at a pass's start, when
     * due) until las_run_next (INT64_MAX: the top level), for the run
     * that started at las_run_start (sched_las.c). */
    uint8_t las_run_lvl;
    int64_t las_run_next;
    int64_t las_run_start;
    int64_t las_guard_ms; /* promoted by the guard: not preempted by LAS
                             in the first this long of its next run */
    int64_t attained;     /* GPU-ms */
    int64_t queued;
};

#define SJOB_FREE 0xff

/* A failed placement this pass: anything at least as large fails too
 * (free resources only shrink during a pass). */
struct smemo {
    uint8_t kind;
    uint8_t wait; /* RESOURCES or RESERVATION */
    uint16_t profile;
    uint64_t mask;  /* models tried */
    uint32_t nodes; /* shape (resolved per model for auto jobs) */
    uint32_t gpus;
    uint32_t total;
    uint32_t project; /* slices: fences depend on it */
    uint32_t mem_mib;
    uint32_t host_cpus; /* 0 when the failure was for GPUs alone */
    uint32_t host_mem;
    int64_t end; /* the job's estimated end */
    uint64_t other;
};

/* One way to place a job: a kind, a profile and the models it may use. */
struct sopt {
    uint8_t kind; /* SJOB_WHOLE or SJOB_SLICE */
    uint16_t profile;
    uint64_t mask;
    int64_t units; /* units it will hold (max for slices) */
};

/* A found placement: per node a mask of whole GPUs, or one slice. */
struct sfound {
    uint16_t model;
    int nnodes;
    int slice_gpu; /* slice jobs: the GPU and slice; else -1 */
    int slice;
    uint32_t nodes[JOB_NODES_MAX];
    uint64_t masks[JOB_NODES_MAX];
};

struct sched {
    struct sched_config cfg;
    /* names */
    struct sched_strtab node_names; /* id == node index */
    struct sched_strtab group_names;
    struct sched_strtab model_names;
    struct sched_strtab profile_names;
    struct sched_strtab project_names;
    struct sched_strtab team_names;
    struct sched_strtab user_names;
    uint16_t shared_any; /* the "shared" pseudo-profile */
    /* nodes and indexes */
    struct snode *nodes; /* node_names.n entries */
    uint32_t nodes_cap;
    uint32_t nwords;       /* words per node bitset */
    uint64_t **group_bits; /* per group: its nodes */
    uint32_t ngroup_bits;
    struct smodel *models;     /* model_names.n entries */
    struct sprofile *profiles; /* profile_names.n entries */
    int64_t free_whole;        /* free whole GPUs, all models */
    int64_t free_slices;       /* free slices, all profiles */
    int64_t total_units;       /* schedulable units on up nodes */
    /* tenants */
    struct steam *teams;
    struct sproject *projects;
    struct suser *users;
    bool quotas_on;
    uint32_t nborrowing; /* projects above their guarantee */
    /* jobs */
    struct sjob *jobs;
    uint32_t jobs_cap;
    uint32_t free_job; /* free list head */
    struct sched_idmap ids;
    uint32_t *running; /* running and preempting jobs */
    uint32_t nrunning;
    uint32_t running_cap;
    uint32_t *by_end; /* the same, by (estimated end, id) */
    uint32_t by_end_cap;
    /* LAS, per running[] slot (sched_las.c): the job's part in las_maxlvl
     * (its level when the LAS rule may preempt it, else 0) and until when
     * that and its level hold (INT64_MIN: look at the job again), so that
     * a pass reads only the jobs whose level or eligibility changes. */
    struct slas_slot *las_slots;
    uint32_t las_slots_cap;
    int64_t las_slots_now;    /* the pass time they are for */
    uint64_t las_key_changes; /* bumped when a slot's part changes */
    uint32_t npending;
    uint32_t nunsorted; /* queues marked unsorted */
    /* Pending demand, for stopping an incremental pass early: jobs by the
     * fewest GPUs they need on one node (0: slice-only jobs). */
    uint32_t pend_lb[SCHED_KMAX + 1];
    uint32_t pend_flex; /* memory jobs (slice or whole) */
    /* ... and jobs that may take whole GPUs by their run time (time limit
     * or the default), in quarter-octave buckets of milliseconds. */
    uint32_t pend_dur[SCHED_DUR_BUCKETS];           /* with a time limit */
    uint64_t pend_dur_bits[SCHED_DUR_BUCKETS / 64]; /* non-empty ones */
    uint32_t pend_default; /* ... without: the default */
    /* ... and by the host CPUs and memory (MiB) they ask, plus one, in
     * the same buckets (sched_pend_host_min()): [0] slice-only jobs, [1]
     * the others. */
    uint32_t pend_hcpu[2][SCHED_DUR_BUCKETS];
    uint64_t pend_hcpu_bits[2][SCHED_DUR_BUCKETS / 64];
    uint32_t pend_hmem[2][SCHED_DUR_BUCKETS];
    uint64_t pend_hmem_bits[2][SCHED_DUR_BUCKETS / 64];
    /* ... and by (fewest GPUs per node, class of the fewest nodes). */
    uint32_t pend_shape[SCHED_KMAX + 1][SCHED_NCLS];
    uint64_t pend_version;   /* bumped by any change above */
    uint64_t minrun_version; /* min_pending_run() cache ... */
    int64_t minrun;          /* ... valid for that version */
    bool lb_stale;           /* nodes changed: recount */
    uint64_t *fresh;         /* ids added since the last pass */
    uint32_t nfresh;
    uint32_t fresh_cap;
    struct squeue fifo; /* the FIFO policy's one queue */
    /* Jobs without GPUs (sched_cpu.c): their own queue, in no order
     * (sorted by sched_before() in each pass), not in npending, nor in
     * running[] while they run. */
    struct squeue cpu;
    uint32_t ncpu_pending;
    uint32_t ncpu_excl_pending; /* ... of them exclusive */
    /* Something since the last walk of them may let one start: a new one,
     * a job of a user with some pending ended, a node freed for an
     * exclusive one. Without it an incremental pass skips them (their
     * reasons stand); a full pass always walks them. */
    bool cpu_wake;
    uint32_t *cpu_running; /* running ones; a job's prev is its slot */
    uint32_t ncpu_running;
    uint32_t cpu_running_cap;
    uint32_t *cpu_order; /* this pass: the pending ones in order */
    int64_t *cpu_times;  /* cpu_estimate()'s room: per node, twice */
    uint32_t cpu_times_cap;
    uint32_t cpu_order_cap;
    uint32_t cpu_norder;
    uint32_t cpu_next;     /* the next of them to look at */
    int cpu_plain_want;    /* this pass: the fewest nodes a job without */
    int64_t cpu_plain_est; /* wishes found not, and its estimate */
    uint32_t cpu_plain_cpus, cpu_plain_mem; /* ... and its CPUs, memory */
    /* passes */
    bool dirty; /* next run must be full */
    bool ran;
    int64_t last_now;
    int64_t last_full;
    uint32_t epoch; /* reservations' epoch (full pass) */
    uint32_t stamp; /* shadow stamp */
    int nresv;
    uint64_t *resv_ids; /* jobs holding reservations */
    int nresv_prev;
    uint64_t *resv_prev; /* those of the full pass before */
    /* Preemption plans that failed this pass, per model: any gang at
     * least this large fails too. pfail_pass tags the pass. */
    uint32_t pfail_nodes[SCHED_MODELS_MAX];
    uint32_t pfail_gpus[SCHED_MODELS_MAX];
    size_t pfail_pass[SCHED_MODELS_MAX];
    uint8_t pfail_lvl[SCHED_MODELS_MAX];   /* LAS: level of the failed job */
    uint32_t pfail_cpus[SCHED_MODELS_MAX]; /* ... its host CPUs, memory */
    uint32_t pfail_mem[SCHED_MODELS_MAX];
    /* LAS: the highest level among running jobs the LAS rule may preempt
     * now (0: none), from the pass's start; the next time a pending job
     * is due for promotion (INT64_MAX: none). */
    uint8_t las_maxlvl;
    int64_t las_next_promote;
    /* The default policy: a checkpointable job was added, so the LAS rules
     * are on for checkpointable jobs (sched_las()); never cleared. */
    bool las_ckpt;
    /* LAS without quotas: the preemption candidates of one model, sorted
     * (sched_preempt.c), kept while no running job stops, none becomes a
     * candidate or changes level (las_key_changes), no node is set (and
     * none starts, without a quantum). */
    void *vc_entries;
    size_t vc_n;
    uint64_t vc_key_changes;
    uint32_t vc_nodes_version, vc_node_states_version;
    uint64_t vc_adds, vc_removes;
    uint16_t vc_model;
    uint64_t run_adds, run_removes; /* jobs that started, stopped */
    void *plan_buf; /* preemption plans' scratch (sched_preempt.c) */
    void *merge_heap, *merge_rest; /* a pass's queue cursors (sched_pass.c) */
    uint32_t merge_heap_cap, merge_rest_cap;
    size_t plan_buf_cap;
    size_t full_passes;
    size_t incr_passes;
    /* Estimated starts of the last plan (sched_plan.c), by job slot. */
    int64_t *plan_est;
    uint8_t *plan_why; /* enum sched_est_why */
    uint32_t plan_cap;
    uint64_t plan_key; /* 0: none */
    /* sorted memory options for flexible jobs */
    struct sopt *memopts;
    uint64_t *memopt_mem;
    int nmemopts;
    bool memopts_dirty;
    /* scratch */
    uint32_t *scratch; /* deferred jobs, sorted running */
    size_t scratch_cap;
    uint32_t *scratch2;
    size_t scratch2_cap;
    struct sfound found;
    struct sfound found2;
    /* A placement since this was cleared passed over a node that had the
     * GPUs but not the host CPUs or memory (the memo and reasons). */
    bool room_short;
    uint32_t nodes_version;       /* bumped when a node is set or removed */
    uint32_t node_states_version; /* ... and when one's state is set */
    uint32_t filters_at;          /* nodes_version every filter was fresh for */
};

/* ---------------------------------------------- internal functions */

/* sched.c */
struct sjob *sched_job_get(const struct sched *s, uint64_t id);
int sched_grow(void **p, uint32_t *cap, uint32_t need, size_t size);
int sched_project_intern(struct sched *s, const char *name, uint32_t *id);
int sched_user_intern(struct sched *s, const char *name, uint32_t *id);
int sched_model_intern(struct sched *s, const char *name, uint16_t *id);
int sched_profile_intern(struct sched *s, const char *name, uint16_t *id);
/* A job's gpu_type: one model or several separated by '|'. find: the
 * known ones as a mask in *known and how many names are not known in
 * *unknown (either may be NULL); -1 when malformed (an empty or too long
 * name, more than SCHED_MODELS_MAX). intern: all of them as a mask, -1
 * when memory is short or there would be too many models. */
int sched_models_find(const struct sched *s, const char *gpu_type,
                      uint64_t *known, int *unknown);
int sched_models_intern(struct sched *s, const char *gpu_type, uint64_t *mask);
/* The models of mask as "A100-80GB|H100-80GB" (id order), into buf. */
void sched_models_str(const struct sched *s, uint64_t mask, char *buf,
                      size_t size);
void sched_queue_insert(struct sched *s, uint32_t j);
void sched_queue_unlink(struct sched *s, uint32_t j);
/* Append job j to list q, or take it out (its prev/next links and q's
 * count; other counts are the caller's). */
void sched_list_append(struct sched *s, struct squeue *q, uint32_t j);
void sched_list_unlink(struct sched *s, struct squeue *q, uint32_t j);
int sched_queues_sort(struct sched *s);
int sched_running_reserve(struct sched *s, uint32_t more);
void sched_running_add(struct sched *s, uint32_t j);
void sched_by_end_insert(struct sched *s, uint32_t j);
void sched_by_end_remove(struct sched *s, uint32_t j);
void sched_pending_count(struct sched *s, uint32_t j, int sign);
uint8_t sched_job_lb(const struct sched *s, const struct sjob *j);

/* The size class of a pending job (its queue) from its kind and lb. */
static inline uint32_t sched_job_class(const struct sjob *j)
{
    if (j->kind != SJOB_WHOLE)
        return SCHED_CLASS_SLICE;
    return j->lb <= 1   ? 0
           : j->lb == 2 ? 1
           : j->lb <= 4 ? 2
           : j->lb <= 8 ? 3
                        : 4;
}
uint32_t sched_dur_bucket(int64_t ms);
int64_t sched_dur_floor(uint32_t bucket);
/* The least host CPUs or memory any pending GPU job (of a kind) asks, as
 * a lower bound from the non-empty buckets bits (INT64_MAX: none). */
int64_t sched_pend_host_min(const uint64_t *bits);
struct squeue *sched_job_queue(struct sched *s, const struct sjob *j);
int64_t sched_job_duration(const struct sched *s, const struct sjob *j);

/* sched_filter.c: jobs' node wishes. Refresh the bitset when nodes
 * changed (-1 out of memory: the old one stays); whether node n qualifies
 * for job j (its filter, and exclusivity both ways). */
int filter_set(struct sched *s, struct sjob *j, const struct sched_job_desc *d);
void filter_free(struct sjob *j);
int filter_refresh(struct sched *s, struct sjob *j);
int filter_refresh_all(struct sched *s);
/* filter_refresh_all() when nodes changed since it last ran. */
int sched_filters_fresh(struct sched *s);
/* The wishes as text for reasons ("constraint \"a100\"", "nodelist a,b"). */
void filter_text(const struct sjob *j, char *buf, size_t size);

static inline bool sched_node_ok(const struct sched *s, const struct sjob *j,
                                 uint32_t n)
{
    const struct snode *nd = &s->nodes[n];
    uint32_t self = (uint32_t)(j - s->jobs);
    if (nd->excl != SCHED_NONE && nd->excl != self)
        return false;
    if (j->excl && nd->excl != self && (nd->nheld > 0 || nd->ncpu > 0))
        return false;
    if (!j->filter)
        return true;
    return n < j->filter->nbits && bits_test(j->filter->allow, n);
}

/* Host CPUs and memory (sched_node.c): whether node nd has them free for
 * job j now (nodes and jobs without figures always do); hold or give back
 * j's share on a node (sign +1/-1). */
static inline bool node_room_now(const struct snode *nd, const struct sjob *j)
{
    return (nd->cpus == 0 || nd->cpus_used + j->host_cpus <= nd->cpus) &&
           (nd->mem_mib == 0 || nd->mem_used + j->host_mem <= nd->mem_mib);
}
void node_room_take(struct snode *nd, const struct sjob *j, int sign);
/* Whether nd would stay within its CPUs and memory: used within the
 * totals, or over_ok. */
static inline bool node_room_sane(const struct snode *nd)
{
    return nd->over_ok || ((nd->cpus == 0 || nd->cpus_used <= nd->cpus) &&
                           (nd->mem_mib == 0 || nd->mem_used <= nd->mem_mib));
}

/* sched_node.c */
void node_index_remove(struct sched *s, uint32_t n);
void node_index_add(struct sched *s, uint32_t n);
void node_free_changed(struct sched *s, uint32_t n);
int node_hold(struct sched *s, uint32_t j, const struct splace *p, int np);
void node_release(struct sched *s, uint32_t j);
/* Job j, ending, no longer holds node n exclusive: another exclusive job
 * recovery left there does, or none. */
void node_excl_drop(struct sched *s, uint32_t n, uint32_t j);
/* After a recovery of job j: mark its nodes shared where it runs beside
 * an exclusive job, or exclusive beside others; over_ok where it runs
 * beyond the node's CPUs or memory. */
void node_mark_shared(struct sched *s, uint32_t j);
void node_recount_models(struct sched *s);
/* For sched_check_invariants(): the figures node_recount_models() keeps
 * equal a recount. 0, or -1 with SH_EINTERNAL. */
int node_check_models(const struct sched *s, struct sh_error *err);
int sched_ensure_words(struct sched *s, uint32_t nnodes);

/* sched_quota.c */
enum qclass { QC_IN = 0, QC_BORROW, QC_PROJECT_LIMIT, QC_TEAM_LIMIT };
enum qclass quota_class(const struct sched *s, uint32_t project, uint16_t m,
                        int64_t units);
void quota_account(struct sched *s, uint32_t j, int sign);
void quota_stopping(struct sched *s, uint32_t j, int sign);
void quota_claim(struct sched *s, uint32_t project, uint16_t m, int64_t units,
                 int sign);
void quota_refresh_on(struct sched *s);
bool quota_project_borrowing(const struct sched *s, uint32_t p, uint16_t m);
bool quota_team_borrowing(const struct sched *s, uint32_t t, uint16_t m);
bool quota_has_room(const struct sched *s, uint32_t p, uint64_t models,
                    int64_t units);
bool quota_within(const struct squota *q, const struct susage *u);
bool quota_user_within(const struct suser *u);
void quota_excuse(struct sched *s);
void usage_advance(struct sched *s, uint32_t p, int64_t now);
void usage_keys(struct sched *s, int64_t now);

/* sched_place.c */
bool job_shape(const struct sched *s, const struct sjob *j, uint16_t m,
               uint32_t *nodes, uint32_t *gpn);
bool place_whole(struct sched *s, const struct sjob *j, uint64_t mask,
                 int64_t end, bool ignore_resv, struct sfound *f);
bool place_slice(struct sched *s, const struct sjob *j, uint16_t profile,
                 uint64_t mask, struct sfound *f);
/* When place_slice() finds nothing only because every free slice that
 * would do is on an unfenced GPU another project holds: those projects
 * (up to max ids into projects; max + 1 returned when there are more),
 * else 0. For the reason text. */
int place_slice_fenced(const struct sched *s, const struct sjob *j,
                       uint16_t profile, uint64_t mask, uint32_t *projects,
                       int max);
uint64_t nvl_pick(const struct snode *nd, uint64_t usable, uint32_t g);
/* node_room_now(), and for a job ending at end >= 0 (backfill) also the
 * CPUs and memory of the live reservations on the node that start before
 * end left free. */
bool node_room(const struct sched *s, const struct snode *nd,
               const struct sjob *j, int64_t end);
uint64_t node_usable(const struct sched *s, const struct snode *nd, uint16_t m,
                     int64_t end, uint32_t self);
uint64_t model_mask_for(const struct sched *s, const struct sjob *j);
/* Call fn once for each node of each running job (GPU jobs, then jobs
 * without GPUs: cpu), for the invariant checks. */
void sched_each_running_node(const struct sched *s,
                             void (*fn)(const struct sched *s, uint32_t node,
                                        const struct sjob *x, bool cpu,
                                        void *arg),
                             void *arg);
bool static_fit(const struct sched *s, const struct sjob *j,
                struct sh_error *err);
/* Whether some present node could hold j's host CPUs and memory (true
 * with no node at all); else false with err saying the largest node's. */
bool sched_fit_host(const struct sched *s, const struct sjob *j,
                    struct sh_error *err);
int sched_memopts_build(struct sched *s);

bool gang_choose(struct sched *s, const uint32_t *elig, const uint64_t *usable,
                 uint32_t ne, uint32_t nn, uint32_t g, struct sfound *f);

/* Whether job a comes before job b in the queue order (sched_pass.c):
 * priority class, fair-share score plus age, submit time, id. */
bool sched_before(const struct sched *s, const struct sjob *a,
                  const struct sjob *b);
/* qsort_r comparator of job indexes in that order (arg: the engine). */
int sched_order_cmp(const void *a, const void *b, void *arg);
/* Room in d for one more start with nplaces more places (sched_pass.c);
 * -1 when memory is short (d unchanged but possibly grown). */
int sched_decisions_reserve(struct sched_decisions *d, size_t nplaces);

/* Whether a GPU's reservation holds against job x (an index): it belongs to
 * a job still waiting for it that comes before x in the order. A job ahead
 * of the holder (say a new high-priority job between full passes) may use
 * the GPU. */
/* Whether slice sl is of profile (any time-slice for the "shared"
 * pseudo-profile). */
static inline bool slice_is(const struct sched *s, const struct sslice *sl,
                            uint16_t profile)
{
    return profile == s->shared_any ? sl->kind == GPU_SLICE_SHARED
                                    : sl->profile == profile;
}

/* The GPUs of node nd that can ever serve a whole-GPU job: every GPU when
 * the caller re-slices on demand (cfg.reslice), else those not sliced now. */
static inline uint64_t node_can_be_whole(const struct sched *s,
                                         const struct snode *nd)
{
    uint64_t mask = 0;
    for (int g = 0; g < nd->ngpus; g++) {
        if (s->cfg.reslice || !(nd->gpus[g].flags & SGPU_SLICED))
            mask |= UINT64_C(1) << g;
    }
    return mask;
}

/* Whether a job may get slices of GPU gp: a sliced, schedulable GPU of an
 * allowed model (mask), fence aside. */
static inline bool gpu_serves_slices(const struct sgpu *gp, uint64_t mask)
{
    return (gp->flags & SGPU_SLICED) && !(gp->flags & SGPU_UNSCHED) &&
           ((mask >> gp->model) & 1);
}

/* Whether an unfenced GPU (time-sliced without MPS) is held by another
 * project than `project`, so it serves none of its jobs. */
static inline bool gpu_fenced_off(const struct sgpu *gp, uint32_t project)
{
    return (gp->flags & SGPU_UNFENCED) && gp->fence_count > 0 &&
           gp->fence_project != project;
}

static inline bool resv_live(const struct sched *s, const struct sgpu *gp,
                             uint32_t x)
{
    const struct sjob *j = &s->jobs[gp->resv_job];
    return j->state == SCHED_JOB_PENDING && j->wait == SCHED_WAIT_RESERVED &&
           gp->resv_job != x && sched_before(s, j, &s->jobs[x]);
}

/* sched_plan.c: the last plan's estimate for job slot j, false when
 * there is none or something changed since. */
bool sched_plan_get(const struct sched *s, uint32_t j, int64_t *est,
                    enum sched_est_why *why);

/* sched_resv.c */
int resv_compute(struct sched *s, uint32_t j, uint64_t mask, int64_t now);

/* sched_las.c */
/* Whether the LAS rules are on: the LAS policy, or the default policy
 * once a checkpointable job was added (levels, guard, hold and the LAS
 * preemption, for checkpointable jobs only; sched_las.c). */
static inline bool sched_las(const struct sched *s)
{
    return s->cfg.policy == SCHED_POLICY_LAS || s->las_ckpt;
}
/* Whether job j's attained service gives it a level: every job in the
 * LAS policy, only checkpointable ones in the default. */
static inline bool las_leveled(const struct sched *s, const struct sjob *j)
{
    return s->cfg.policy == SCHED_POLICY_LAS || j->ckpt;
}
/* GPU-ms of service of a job at now: earlier runs plus the current one. */
int64_t las_attained(const struct sched *s, const struct sjob *j, int64_t now);
/* The level of an amount of service. */
uint8_t las_level(const struct sched *s, int64_t attained);
/* Start of a pass: promote pending jobs due by the starvation guard (a
 * full pass) and find the highest preemptible running level. */
void las_pass_begin(struct sched *s, int64_t now, bool full);
/* Whether running job v may be preempted by the LAS rule for pending job
 * j on model m: checkpointable, a higher level than j's, past its quantum,
 * and not within a guarantee j's project would take. */
bool las_victim_ok(const struct sched *s, const struct sjob *j,
                   const struct sjob *v, uint16_t m);
/* Record a new pending job's LAS state (level, next promotion). */
void las_job_added(struct sched *s, struct sjob *j);
/* A job starts at now (its units held): the hold (las_hold_ms). */
void las_job_started(const struct sched *s, struct sjob *j, int64_t now);

/* sched_cpu.c: jobs without GPUs. */
static inline bool sched_job_cpu(const struct sjob *j)
{
    return j->kind == SJOB_CPU;
}
/* A new pending CPU job j joins its queue; leaves it (removed). */
void cpu_queue_add(struct sched *s, uint32_t j);
void cpu_queue_remove(struct sched *s, uint32_t j);
/* Hold nodes p (np entries, one per node, owned by the job from now on)
 * for CPU job j and count it as running; -1 when memory is short or a
 * node is not free for it (p is not taken then). */
int cpu_hold(struct sched *s, uint32_t j, struct splace *p, int np,
             bool recover);
/* A running CPU job stops: its nodes and its user's count free. */
void cpu_release(struct sched *s, uint32_t j);
/* A pass: the pending CPU jobs in order (cpu_pass_begin()); then, as
 * phase 1 walks the GPU jobs, cpu_pass_upto() starts those that come
 * before GPU job `before` (SCHED_NONE: all the rest) and can, and gives
 * the others a reason and estimate. blocked_head: the job nothing passes
 * (FIFO, no backfill), or SCHED_NONE. -1 when memory is short. */
int cpu_pass_begin(struct sched *s, bool full);
/* Running job j is about to stop: wake the CPU jobs it may let start. */
void cpu_note_stop(struct sched *s, const struct sjob *j);
int cpu_pass_upto(struct sched *s, int64_t now, uint32_t before,
                  uint32_t blocked_head, struct sched_decisions *out);
/* When the CPU jobs running on node n end at the latest (0: none). */
int64_t cpu_node_busy_until(const struct sched *s, uint32_t n);
/* sched_check_invariants() for CPU jobs: queue, counts, node counts. */
int cpu_check(const struct sched *s, struct sh_error *err);

/* sched_preempt.c */
int preempt_plan(struct sched *s, uint32_t j, const struct sopt *o,
                 uint64_t in_mask, int64_t now, struct sched_decisions *out);

/* sched_pass.c */
int decisions_add_preempt(struct sched_decisions *d, uint64_t job,
                          uint64_t for_job, enum sched_preempt_reason why);

#endif
