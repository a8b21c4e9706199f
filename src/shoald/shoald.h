/* SPDX-License-Identifier: Apache-2.0 */
/* The controller's context: every subsystem of shoald hangs off one
 * struct shoald, created in main.c and passed to each module (the flux
 * job-manager pattern). One thread, the event loop's, owns all of it: no
 * locks around the model.
 *
 * The order of every change: validate -> add the store write to the open
 * batch and update memory -> commit the batch before the loop sleeps (group
 * commit) -> answer. If a commit fails, memory is reloaded from the store
 * and every request of that batch is answered 503, so a refused change
 * changes nothing.
 */
#ifndef SHOAL_SHOALD_SHOALD_H
#define SHOAL_SHOALD_SHOALD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/util/error.h"

struct loop;
struct store;
struct store_batch;
struct api;
struct commit;
struct jobtab;
struct nodetab;
struct auth;
struct cluster;
struct tenancy;
struct logs;
struct slices;
struct volumes;
struct partitions;
struct secrets;
struct ha;
struct node;
struct job;

struct shoald_config {
    const char *state_dir;     /* holds the database, tokens and the URL */
    const char *store_url;     /* NULL = sqlite:<state_dir>/shoal.db */
    const char *listen_addr;   /* "127.0.0.1" */
    const char *advertise_url; /* URL other controllers send clients to;
                                  NULL = the listen URL (d->url) */
    int port;                  /* 0 = any free port */
    const char *admin_user;    /* first cluster admin, created at init */
    const char *tls_cert;      /* PEM files; both NULL = plain HTTP */
    const char *tls_key;
    size_t max_body;               /* bytes of one request body */
    int max_conns_per_address;     /* open connections from one IP; 0 = any */
    int max_pending_per_user;      /* pending jobs one user may have; 0 = any */
    int request_timeout_s;         /* silence allowed before a whole request */
    int keepalive_timeout_s;       /* ...and after one with a valid token */
    int request_deadline_s;        /* a whole request after its request line;
                                  0 = none */
    int heartbeat_timeout_s;       /* a node without heartbeats is down after */
    int64_t keep_finished_ms;      /* finished jobs stay in memory this long */
    int64_t keep_output_ms;        /* retention.h: 0 = output kept forever */
    uint64_t keep_output_size;     /* ...bytes of all output; 0 = no cap */
    int64_t keep_history_ms;       /* ...the store's jobs; 0 = forever */
    int64_t retention_interval_ms; /* between retention passes */
    int kill_grace_s;              /* SIGTERM to SIGKILL on cancel/timeout */
    const char *mail_program;      /* --mail-program: run for --mail-type
                                  events (notify.h); NULL = none */
    int idle_threshold_pct;        /* a job's GPUs all under this are idle... */
    int64_t idle_after_ms;         /* ...when it lasts this long */
    int idle_policy;               /* enum acct_idle_policy: the default */
    bool reslice_on_demand;        /* re-slice idle GPUs for waiting jobs */
    int64_t reslice_hold_ms;       /* a re-sliced GPU is left alone this long */
    int64_t leader_lease_ms;       /* HA: a silent leader is taken over after */
    int policy;                    /* enum sched_policy: the queue order */
    const char *las_levels;        /* --las-levels as given; NULL = default */
    int64_t las_quantum_ms;        /* -1 = the engine's default */
    int64_t las_hold_ms;           /* -1 = the engine's default */
    int64_t las_starve_factor;     /* -1 = the engine's default */
    int64_t las_starve_max_ms;     /* -1 = the engine's default */
    int64_t las_hold_gpus;         /* -1 = the engine's default */
    /* Jobs' host CPUs and memory when they ask none (resources.c); 0 =
     * from the nodes' shares. */
    int default_cpus_per_gpu;
    uint64_t default_mem_per_gpu;
    int default_cpus; /* jobs without GPUs (1) */
    uint64_t default_mem_per_cpu;
};

struct shoald {
    struct shoald_config cfg;
    struct loop *loop;
    struct store *store;
    struct commit *commit;
    struct api *api;
    struct auth *auth;
    struct tenancy *tenancy; /* teams, projects, members, quotas */
    struct jobtab *jobs;
    struct nodetab *nodes;
    struct cluster *cluster;
    struct logs *logs;
    struct slices *slices;
    struct steps *steps;     /* srun's steps inside batch jobs (steps.h) */
    struct volumes *volumes; /* storage jobs mount by name */
    struct partitions *partitions; /* partitions and QOS (Slurm's -p, --qos) */
    struct secrets *secrets;       /* e.g. volumes' credentials, sealed */
    struct ha *ha;                 /* leader or follower (ha.h) */
    struct retention *retention;   /* output and history pruning */
    char url[300];                 /* the URL clients use */
    char cluster_id[33];           /* random hex, made once (state.c) */
    bool stopping;
    bool schedule_pending; /* a pass is due before the loop sleeps
                              (shoald_schedule_soon; the engine runs it) */
    bool wake_registered;  /* a commit_after for agent polls is queued
                              (nodework.c) */
    /* Answer node n's held work poll with its work, or with err when not
     * NULL. The HTTP layer's (api_agent_answer_poll), wired by
     * shoald_create (shoald_setup.c), so that the cluster wakes agents
     * without calling into it; NULL: nothing to wake. */
    void (*wake_agent)(struct shoald *d, const struct node *n,
                       const struct sh_error *err);
    /* The job lifecycle's entry: move job to state to (reason shown, or
     * NULL) and act on it: jobs_transition, wired by shoald_create
     * (shoald_setup.c), so that the cluster posts a start, a preemption
     * or a dependency that can never be met without calling into it. */
    int (*job_transition)(struct shoald *d, struct job *job, int to,
                          const char *reason, struct sh_error *err);
};

/* The helpers below are shoald.c's, the bottom of src/shoald: they call
 * no module but the group commit. Creating, wiring and destroying a whole
 * controller is shoald_setup.h's. */

/* The open batch of the current loop iteration; every durable change is
 * added here. Borrowed. */
struct store_batch *shoald_batch(struct shoald *d);

/* Wall-clock now in epoch ms. */
int64_t shoald_now_ms(const struct shoald *d);

/* Ask for a scheduling pass before the loop next sleeps. */
void shoald_schedule_soon(struct shoald *d);

#endif
