/* SPDX-License-Identifier: Apache-2.0 */
/* Job cgroups for the node agent: one cgroup per job (per hierarchy on v1)
 * under the agent's parent cgroup, enforcing the job's CPU, memory and
 * process-count request, and the operations the agent needs on it: attach a
 * forked child, signal everything in it, count, read usage, remove.
 * cgroup v2 where a unified hierarchy holds the memory controller, v1
 * otherwise, found by reading mountinfo. Not here: cpusets
 * and namespaces (see "v1 notes" below).
 *
 * Layout. The parent (e.g. "shoal/node1") is created under the ROOT of each
 * hierarchy, not under the agent's own cgroup, and a job "job-17-0" lives in
 *   v2: <mount>/shoal/node1/job-17-0
 *   v1: <mount of memory|cpu|cpuacct|pids|freezer>/shoal/node1/job-17-0
 * (co-mounted v1 controllers share one directory).
 *
 * Limits and their files:
 *             v2                        v1
 *   memory    memory.max, and           memory.limit_in_bytes, and
 *             memory.swap.max = 0       memory.memsw.limit_in_bytes = the
 *             (when present)            same value (when present)
 *   cpu       cpu.max "<m*100> 100000"  cpu.cfs_period_us = 100000,
 *                                       cpu.cfs_quota_us = m*100
 *   pids      pids.max                  pids.max
 * "None" is written as max / -1. A memory request therefore bounds RAM plus
 * swap: a job that outgrows it is OOM-killed instead of swapping.
 *
 * v1 notes. Job cgroups are made in the memory, cpu, cpuacct and pids
 * hierarchies (required) and freezer (used by cgroup_job_kill when mounted).
 * cpuset is deliberately left out: a new v1 cpuset cgroup is unusable until
 * cpuset.cpus and cpuset.mems are copied into it, and no job asks for CPU
 * pinning yet; jobs stay in the agent's cpuset. The devices hierarchy is
 * used when mounted, to keep a job off the GPUs it was not given
 * (cgroup_job_deny_devices); on v2 that would take an eBPF program, which
 * this module does not load yet.
 *
 * A context is read-only after cgroup_ctx_create, so threads may share it.
 * Concurrent operations on one job key are the caller's to serialise.
 *
 * Errors: every function fills err (which may be NULL). SH_EINVAL for a bad
 * key, parent or limit; SH_ENOTFOUND for a job cgroup that does not exist;
 * SH_ECONFLICT for a job that still has processes; SH_EUNAVAILABLE when
 * cgroups cannot be used at all; SH_EINTERNAL for a failed cgroupfs access
 * (the message names the file and the system error).
 */
#ifndef SHOAL_AGENT_CGROUP_H
#define SHOAL_AGENT_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/util/error.h"

/* The longest job key and parent component, and the deepest parent. */
#define CGROUP_KEY_MAX 64
#define CGROUP_PARENT_DEPTH_MAX 8

/* The most hierarchies a job spans (v1: memory, cpu, cpuacct, pids,
 * freezer, devices; v2: one). */
#define CGROUP_HIER_MAX 6

struct cgroup_ctx;

/* What a job may use. Zero in any field means "no limit". */
struct cgroup_limits {
    int64_t cpu_millis; /* 1000 per CPU; 10 .. 10,000,000 or 0 */
    uint64_t mem_bytes; /* at most INT64_MAX, or 0 */
    int64_t pids_max;   /* 1 .. 4194304, or 0 */
};

/* Usage of a job cgroup, including its exited processes. */
struct cgroup_stats {
    uint64_t cpu_usage_ns; /* v1 cpuacct.usage; v2 cpu.stat usage_usec */
    uint64_t mem_current;  /* bytes charged now, page cache included */
    uint64_t mem_peak;     /* high-water mark; 0 where the kernel has none
                              (v2 before Linux 5.19) */
    bool oom_killed;       /* the kernel OOM-killed a process in it (v1 needs
                              Linux 4.13 for the oom_kill counter) */
};

/* Detect the cgroup version from /proc/self/mountinfo and create the
 * agent's parent cgroup `parent` (a relative name such as "shoal/node1":
 * 1..8 components of [A-Za-z0-9._-], none starting with '.') under the root
 * of each hierarchy used. On v2, +cpu +memory +pids are enabled in
 * cgroup.subtree_control of the root and of every component of the parent,
 * so those must hold no processes. Existing directories are reused.
 *
 * Returns a new context (free with cgroup_ctx_destroy), or NULL: SH_EINVAL
 * for a malformed parent; SH_EUNAVAILABLE when cgroups cannot be used here
 * (not mounted, a required controller missing, read-only, not permitted),
 * with a message saying why, so the agent can log it once and run jobs
 * without enforcement. On failure no directory is left behind.
 * parent is borrowed for the call. */
struct cgroup_ctx *cgroup_ctx_create(const char *parent, struct sh_error *err);

/* The same, reading mounts from `mountinfo`, a file in the format of
 * /proc/self/mountinfo. Lets tests point the module at a fake hierarchy in
 * a temporary directory (the interface files must then already exist, since
 * only cgroupfs creates them). mountinfo is borrowed for the call. */
struct cgroup_ctx *cgroup_ctx_create_mountinfo(const char *mountinfo,
                                               const char *parent,
                                               struct sh_error *err);

/* Free the context. Job cgroups and the parent stay. NULL-safe; preserves
 * errno. */
void cgroup_ctx_destroy(struct cgroup_ctx *ctx);

/* 1 or 2. */
int cgroup_version(const struct cgroup_ctx *ctx);

/* The parent cgroup's directory in the hierarchy that holds `controller`
 * ("memory", "cpu", "cpuacct", "pids", "freezer"; on v2 all name the same
 * directory), or NULL for another name or a hierarchy not in use. A job's
 * files are in <dir>/<key>/. Borrowed: valid until cgroup_ctx_destroy. */
const char *cgroup_ctx_dir(const struct cgroup_ctx *ctx,
                           const char *controller);

/* Remove the parent cgroup, and then each of its ancestors that this leaves
 * empty (stopping at the first that is not), in every hierarchy. For
 * decommissioning a node and for tests. SH_ECONFLICT, removing nothing,
 * while job cgroups remain under the parent. */
int cgroup_ctx_prune(struct cgroup_ctx *ctx, struct sh_error *err);

/* Check a job key: 1..64 characters of [A-Za-z0-9._-], not starting with
 * '.', with no "..". 0, or -1 with SH_EINVAL. */
int cgroup_key_check(const char *key, struct sh_error *err);

/* Create the job cgroup `key` in every hierarchy and write `limits`.
 * Idempotent: for an existing job cgroup (the agent restarted and adopts
 * running jobs) the limits are written again, and its processes stay. In
 * job cgroups this call made (the kernel's interface files in place), a
 * value that is the kernel's default for a new cgroup (no limit, the
 * 100 ms CPU period, thawed) is not written. The job is left thawed. Lowering memory below current usage may fail on v1
 * (the kernel cannot reclaim enough) and OOM-kill on v2.
 * SH_EINVAL for a bad key or limit. On failure, directories created by this
 * call are removed again. key and limits are borrowed for the call. */
int cgroup_job_create(struct cgroup_ctx *ctx, const char *key,
                      const struct cgroup_limits *limits, struct sh_error *err);

/* Attaching a forked child before exec without allocating in the child:
 *
 *     struct cgroup_attach att;
 *     if (cgroup_attach_init(&att, ctx, key, err) < 0)   // parent
 *         return -1;
 *     pid_t pid = fork();
 *     if (pid == 0) {
 *         if (cgroup_attach_move(&att, 0) < 0)            // child
 *             _exit(126);   // or report errno on the exec-status pipe
 *         execve(...);
 *     }
 *     cgroup_attach_fini(&att);                           // parent
 *
 * The alternative, attaching from the parent with cgroup_job_attach(ctx,
 * key, pid, err) while the child waits on a pipe before exec, works as
 * well; either way nothing the job runs ever starts outside its cgroup.
 */
struct cgroup_attach {
    int fd[CGROUP_HIER_MAX]; /* cgroup.procs of the job in each hierarchy */
    int nfd;
};

/* Open the job's cgroup.procs in every hierarchy (close-on-exec, so the job
 * does not inherit them). SH_ENOTFOUND when the job cgroup does not exist.
 * On failure att holds nothing to free. att is caller-allocated and owned by
 * the caller until cgroup_attach_fini; key is borrowed for the call. */
int cgroup_attach_init(struct cgroup_attach *att, struct cgroup_ctx *ctx,
                       const char *key, struct sh_error *err);

/* Move process `pid` (0: the calling process) into the job in every
 * hierarchy. Async-signal-safe: only getpid(2) and write(2), no allocation
 * and no locks, so a forked child of a threaded agent may call it. Returns
 * 0, or -1 with errno set (it cannot format a message safely); the process
 * may then be in some hierarchies and not others, so the child should exit. */
int cgroup_attach_move(const struct cgroup_attach *att, pid_t pid);

/* The hierarchies in use (1 on v2). */
int cgroup_nhier(const struct cgroup_ctx *ctx);

/* The path of job `key`'s cgroup.procs in hierarchy h (0 .. nhier-1):
 * what the agent hands the shim. 0, or -1 when it does not fit. */
int cgroup_job_procs_path(const struct cgroup_ctx *ctx, int h, const char *key,
                          char *buf, size_t size);

/* cgroup_attach_init from the job's cgroup.procs paths (absolute, ending in
 * "/cgroup.procs"), as cgroup_job_procs_path gave them: no mount scan and
 * no parent walk, for the shim of each job. */
int cgroup_attach_paths(struct cgroup_attach *att, const char *const *paths,
                        int n, struct sh_error *err);

/* Close the files. Caller-allocated: att may be initialised again. NULL-safe;
 * preserves errno. */
void cgroup_attach_fini(struct cgroup_attach *att);

/* Move `pid` (0: the calling process) into the job cgroup in every
 * hierarchy: cgroup_attach_init, _move and _fini in one call. Not
 * async-signal-safe. SH_ENOTFOUND when the job cgroup does not exist. */
int cgroup_job_attach(struct cgroup_ctx *ctx, const char *key, pid_t pid,
                      struct sh_error *err);

/* Send `sig` (1.._NSIG-1) to every process in the job cgroup.
 *   v2: SIGKILL through cgroup.kill where the kernel has it (5.14);
 *       otherwise freeze (cgroup.freeze), signal each process in
 *       cgroup.procs, thaw.
 *   v1: freeze with the freezer hierarchy, signal each process in its
 *       cgroup.procs, thaw. Without a freezer the list is walked three times.
 * While frozen no process can fork, so nothing escapes a SIGKILL. Without a
 * freezer a process forking fast may survive one call: repeat until
 * cgroup_job_count reports 0. Processes are gone only once they have been
 * reaped (their parent, the agent for the job's first process, still has to
 * wait for it; zombies are not counted). SH_ENOTFOUND when the job cgroup
 * does not exist; SH_EINVAL for a bad signal. key is borrowed. */
int cgroup_job_kill(struct cgroup_ctx *ctx, const char *key, int sig,
                    struct sh_error *err);

/* Count the processes in the job cgroup (v1: in its freezer hierarchy if
 * mounted, else memory) into *nprocs. SH_ENOTFOUND when it does not exist. */
int cgroup_job_count(struct cgroup_ctx *ctx, const char *key, int *nprocs,
                     struct sh_error *err);

/* Read the job's usage into *stats. SH_ENOTFOUND when the job cgroup does
 * not exist. */
int cgroup_job_stats(struct cgroup_ctx *ctx, const char *key,
                     struct cgroup_stats *stats, struct sh_error *err);

/* Only the job's CPU time and memory high-water mark (as cgroup_job_stats
 * reads them), what a run's end records: two files where the whole of
 * cgroup_job_stats reads four and looks for the job first. -1 when the job
 * cgroup or one of the files cannot be read. */
int cgroup_job_usage(struct cgroup_ctx *ctx, const char *key, uint64_t *cpu_ns,
                     uint64_t *mem_peak, struct sh_error *err);

/* Remove the job cgroup from every hierarchy. An absent one is not an
 * error. SH_ECONFLICT while any hierarchy still lists a process in it (kill
 * and reap first): every hierarchy is checked before anything is removed,
 * so only a process attached during the call can leave it half removed
 * (calling again finishes the job). */
int cgroup_job_destroy(struct cgroup_ctx *ctx, const char *key,
                       struct sh_error *err);

/* A character device (major:minor). */
struct cgroup_device {
    unsigned major;
    unsigned minor;
};

/* True when jobs' device access can be restricted (v1 with the devices
 * hierarchy mounted). */
bool cgroup_has_devices(const struct cgroup_ctx *ctx);

/* Forbid the job to open (read, write) or create (mknod) each of the ndevs
 * character devices: an open then fails with EPERM, whatever the file's
 * permissions. Everything else stays allowed. SH_EUNAVAILABLE where
 * cgroup_has_devices is false (nothing is enforced then); SH_ENOTFOUND for
 * a job cgroup that does not exist. */
int cgroup_job_deny_devices(struct cgroup_ctx *ctx, const char *key,
                            const struct cgroup_device *devs, int ndevs,
                            struct sh_error *err);

#endif
