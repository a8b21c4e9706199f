/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: agent/cgroup in two halves.
 * - cgroup_fake: the v2 and v1 code over fake hierarchies in a temporary
 *   directory (a fake mountinfo names them): detection, what is written to
 *   which file, stats parsing, kill through cgroup.kill and through
 *   freeze + signal, refusals, rollback. Runs anywhere, as any user.
 * - cgroup_real: the kernel's cgroups on this host (v1 on the development
 *   and CI machines): limits read back, OOM kill, kill of a process tree,
 *   destroy, adoption, CPU accounting. Needs root and mounted cgroups and
 *   skips with the reason otherwise (set SHOAL_REQUIRE_CGROUPS=1 to make
 *   that a failure). Each test uses the parent "shoal-test-<pid>/t" and its
 *   .fini kills, reaps and removes everything the test made.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cgroup.h"

#define MIB (UINT64_C(1) << 20)
#define MAX_KIDS 8
#define MAX_KEYS 8

/* Per-test state: Criterion runs each test in a process of its own. */
static struct {
    struct cgroup_ctx *ctx;
    char parent[64];
    char tmp[128];  /* fake: the temporary directory */
    char root[192]; /* fake: the v2 mount point (has a space in it) */
    char mountinfo[192];
    pid_t kids[MAX_KIDS];
    int nkids;
    const char *keys[MAX_KEYS];
    int nkeys;
} T;

/* --- helpers ------------------------------------------------------------ */

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void put(const char *path, const char *content)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "fopen %s: %s", path, strerror(errno));
    fputs(content, f);
    cr_assert_eq(fclose(f), 0);
}

static void putf(const char *dir, const char *file, const char *content)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    put(path, content);
}

/* The contents of dir/file ("<missing>" when it cannot be read). */
static const char *get(const char *dir, const char *file)
{
    static char buf[4096];
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return "<missing>";
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void mkdir_ok(const char *path)
{
    cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path,
              strerror(errno));
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* <cgroup_ctx_dir(ctx, controller)>/<key> */
static const char *job_dir(const char *controller, const char *key)
{
    static char buf[4][512];
    static int next;
    const char *dir = cgroup_ctx_dir(T.ctx, controller);
    cr_assert_not_null(dir, "no hierarchy for %s", controller);
    char *out = buf[next++ % 4];
    snprintf(out, sizeof(buf[0]), "%s/%s", dir, key);
    return out;
}

static void forget_kid(pid_t pid)
{
    for (int i = 0; i < T.nkids; i++) {
        if (T.kids[i] == pid)
            T.kids[i] = T.kids[--T.nkids];
    }
}

static void add_kid(pid_t pid)
{
    cr_assert_lt(T.nkids, MAX_KIDS);
    T.kids[T.nkids++] = pid;
}

/* Wait for a child and return its status. */
static int reap(pid_t pid)
{
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid, "waitpid: %s", strerror(errno));
    forget_kid(pid);
    return status;
}

typedef void child_f(void *arg);

/* Fork a child that attaches itself to job `key` the way the agent does
 * (files opened in the parent, the pid written in the child) and runs fn. */
static pid_t spawn_in(const char *key, child_f *fn, void *arg)
{
    struct cgroup_attach att;
    struct sh_error err = {0};

    cr_assert_eq(cgroup_attach_init(&att, T.ctx, key, &err), 0, "%s", err.msg);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (cgroup_attach_move(&att, 0) < 0)
            _exit(126);
        fn(arg);
        _exit(0);
    }
    cgroup_attach_fini(&att);
    add_kid(pid);
    return pid;
}

static void child_sleeps(void *arg)
{
    (void)arg;
    for (;;)
        pause();
}

/* Forks a sleeping grandchild, sends its pid on the pipe, sleeps. */
static void child_forks_sleeper(void *arg)
{
    int fd = *(int *)arg;
    pid_t g = fork();
    if (g == 0) {
        for (;;)
            pause();
    }
    if (write(fd, &g, sizeof(g)) != (ssize_t)sizeof(g))
        _exit(3);
    for (;;)
        pause();
}

/* Forks and exits, over and over, so its pid keeps changing. */
static void child_hops(void *arg)
{
    (void)arg;
    for (;;) {
        if (fork() > 0)
            _exit(0);
    }
}

/* Allocates and touches 256 MiB. */
static void child_hogs_memory(void *arg)
{
    size_t size = 256 * MIB;
    (void)arg;
    volatile char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        _exit(2);
    for (size_t i = 0; i < size; i += 4096)
        p[i] = 1;
    _exit(0);
}

/* Burns 100 ms of its own CPU time. */
static void child_spins(void *arg)
{
    struct timespec ts;
    (void)arg;
    do {
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    } while (ts.tv_sec == 0 && ts.tv_nsec < 100 * 1000000L);
}

/* --- fake hierarchies --------------------------------------------------- */

static const char *const v2_job_files[][2] = {
    {"memory.max", "max\n"},
    {"memory.swap.max", "max\n"},
    {"cpu.max", "max 100000\n"},
    {"pids.max", "max\n"},
    {"cgroup.procs", ""},
    {"cgroup.kill", ""},
    {"cgroup.freeze", "0\n"},
    {"cgroup.events", "populated 1\nfrozen 1\n"},
    {"cpu.stat", "usage_usec 0\n"},
    {"memory.current", "0\n"},
    {"memory.peak", "0\n"},
    {"memory.events", "oom_kill 0\n"},
};

static void fake_init(void)
{
    memset(&T, 0, sizeof(T));
    snprintf(T.tmp, sizeof(T.tmp), "/tmp/shoal-cgroup-XXXXXX");
    cr_assert_not_null(mkdtemp(T.tmp));
    snprintf(T.root, sizeof(T.root), "%s/cg root", T.tmp);
    snprintf(T.mountinfo, sizeof(T.mountinfo), "%s/mountinfo", T.tmp);
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void fake_fini(void)
{
    cgroup_ctx_destroy(T.ctx);
    for (int i = 0; i < T.nkids; i++) {
        kill(T.kids[i], SIGKILL);
        waitpid(T.kids[i], NULL, 0);
    }
    nftw(T.tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(cgroup_fake, .init = fake_init, .fini = fake_fini, .timeout = 10);

/* A v2 cgroup directory with the interface files the module touches. */
static void fake_v2_dir(const char *dir, const char *controllers)
{
    mkdir_ok(dir);
    putf(dir, "cgroup.controllers", controllers);
    putf(dir, "cgroup.subtree_control", "");
}

/* Write the fake mountinfo: some ordinary mounts and the given lines. */
static void fake_mountinfo(const char *lines)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/root rw\n"
             "25 22 0:5 / /proc rw,nosuid - proc proc rw\n"
             "%s",
             lines);
    put(T.mountinfo, buf);
}

/* A v2 hierarchy at T.root (whose name has a space, escaped as \040 in
 * mountinfo) with shoal/node1 and, if key, that job's files. */
static void fake_v2(const char *key, bool ro)
{
    char dir[512];
    char line[512];

    mkdir_ok(T.root);
    fake_v2_dir(T.root, "cpuset cpu io memory hugetlb pids rdma misc\n");
    snprintf(dir, sizeof(dir), "%s/shoal", T.root);
    fake_v2_dir(dir, "cpu memory pids\n");
    snprintf(dir, sizeof(dir), "%s/shoal/node1", T.root);
    fake_v2_dir(dir, "cpu memory pids\n");
    if (key) {
        snprintf(dir, sizeof(dir), "%s/shoal/node1/%s", T.root, key);
        mkdir_ok(dir);
        for (size_t i = 0; i < sizeof(v2_job_files) / sizeof(*v2_job_files);
             i++)
            putf(dir, v2_job_files[i][0], v2_job_files[i][1]);
    }
    snprintf(line, sizeof(line),
             "30 22 0:26 / %s/cg\\040root %s,nosuid,relatime shared:4 - "
             "cgroup2 cgroup2 rw,nsdelegate\n",
             T.tmp, ro ? "ro" : "rw");
    fake_mountinfo(line);
}

static struct cgroup_ctx *fake_ctx(void)
{
    struct sh_error err = {0};
    T.ctx = cgroup_ctx_create_mountinfo(T.mountinfo, "shoal/node1", &err);
    cr_assert_not_null(T.ctx, "%s", err.msg);
    return T.ctx;
}

Test(cgroup_fake, v2_detected_and_subtree_controllers_enabled_along_path)
{
    char dir[512];

    fake_v2(NULL, false);
    fake_ctx();
    cr_assert_eq(cgroup_version(T.ctx), 2);
    snprintf(dir, sizeof(dir), "%s/shoal/node1", T.root);
    cr_assert_str_eq(cgroup_ctx_dir(T.ctx, "memory"), dir);
    cr_assert_str_eq(cgroup_ctx_dir(T.ctx, "cpu"), dir);
    cr_assert_null(cgroup_ctx_dir(T.ctx, "devices"));
    cr_assert_str_eq(get(T.root, "cgroup.subtree_control"),
                     "+cpu +memory +pids");
    cr_assert_str_eq(get(dir, "cgroup.subtree_control"), "+cpu +memory +pids");
    snprintf(dir, sizeof(dir), "%s/shoal", T.root);
    cr_assert_str_eq(get(dir, "cgroup.subtree_control"), "+cpu +memory +pids");
}

Test(cgroup_fake, v2_already_enabled_controllers_are_not_rewritten)
{
    fake_v2(NULL, false);
    putf(T.root, "cgroup.subtree_control", "cpuset cpu io memory pids\n");
    fake_ctx();
    cr_assert_str_eq(get(T.root, "cgroup.subtree_control"),
                     "cpuset cpu io memory pids\n");
}

Test(cgroup_fake, v2_limits_written_and_rewritten_on_adopt)
{
    struct sh_error err = {0};
    struct cgroup_limits lim = {
        .cpu_millis = 1500, .mem_bytes = 64 * MIB, .pids_max = 100};

    fake_v2("job-17-0", false);
    fake_ctx();
    cr_assert_eq(cgroup_job_create(T.ctx, "job-17-0", &lim, &err), 0, "%s",
                 err.msg);
    const char *job = job_dir("memory", "job-17-0");
    cr_assert_str_eq(get(job, "memory.max"), "67108864");
    cr_assert_str_eq(get(job, "memory.swap.max"), "0");
    cr_assert_str_eq(get(job, "cpu.max"), "150000 100000");
    cr_assert_str_eq(get(job, "pids.max"), "100");
    cr_assert_str_eq(get(job, "cgroup.freeze"), "0");

    struct cgroup_limits none = {0};
    cr_assert_eq(cgroup_job_create(T.ctx, "job-17-0", &none, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(get(job, "memory.max"), "max");
    cr_assert_str_eq(get(job, "memory.swap.max"), "max");
    cr_assert_str_eq(get(job, "cpu.max"), "max 100000");
    cr_assert_str_eq(get(job, "pids.max"), "max");

    /* Without memory.swap.max (no swap accounting) it is simply skipped. */
    char path[512];
    snprintf(path, sizeof(path), "%s/memory.swap.max", job);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(cgroup_job_create(T.ctx, "job-17-0", &lim, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(get(job, "memory.max"), "67108864");
}

Test(cgroup_fake, v2_failed_create_leaves_no_directory)
{
    struct sh_error err = {0};

    fake_v2(NULL, false);
    fake_ctx();
    /* The fake's new directory has no interface files: writing fails. */
    cr_assert_eq(cgroup_job_create(T.ctx, "job-1", NULL, &err), -1);
    cr_assert_eq(err.code, SH_EINTERNAL);
    cr_assert(strstr(err.msg, "memory.max"), "%s", err.msg);
    cr_assert_not(is_dir(job_dir("memory", "job-1")));
}

Test(cgroup_fake, v2_attach_writes_the_pid_to_cgroup_procs)
{
    struct sh_error err = {0};
    struct cgroup_attach att;
    char want[32];

    fake_v2("job-1", false);
    fake_ctx();
    cr_assert_eq(cgroup_attach_init(&att, T.ctx, "job-1", &err), 0, "%s",
                 err.msg);
    cr_assert_eq(att.nfd, 1);
    cr_assert_eq(cgroup_attach_move(&att, 0), 0);
    cgroup_attach_fini(&att);
    cgroup_attach_fini(NULL);
    snprintf(want, sizeof(want), "%d\n", (int)getpid());
    cr_assert_str_eq(get(job_dir("memory", "job-1"), "cgroup.procs"), want);

    putf(job_dir("memory", "job-1"), "cgroup.procs", "");
    cr_assert_eq(cgroup_job_attach(T.ctx, "job-1", 4242, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(get(job_dir("memory", "job-1"), "cgroup.procs"), "4242\n");

    cr_assert_eq(cgroup_attach_init(&att, T.ctx, "job-2", &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
    cr_assert_eq(att.nfd, 0);
    cr_assert_eq(cgroup_job_attach(T.ctx, "job-1", -5, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
}

/* The shim's way in: the agent's paths, no mount scan. */
Test(cgroup_fake, v2_attach_by_the_agents_paths)
{
    struct sh_error err = {0};
    struct cgroup_attach att;
    char path[4096], want[32];
    const char *paths[1] = {path};

    fake_v2("job-1", false);
    fake_ctx();
    cr_assert_eq(cgroup_nhier(T.ctx), 1);
    cr_assert_eq(cgroup_job_procs_path(T.ctx, 0, "job-1", path, sizeof(path)),
                 0);
    cr_assert_eq(cgroup_job_procs_path(T.ctx, 1, "job-1", path, sizeof(path)),
                 -1);
    cr_assert_eq(cgroup_job_procs_path(T.ctx, 0, "../x", path, sizeof(path)),
                 -1);
    cr_assert_eq(cgroup_job_procs_path(T.ctx, 0, "job-1", path, sizeof(path)),
                 0);
    cr_assert_eq(cgroup_attach_paths(&att, paths, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(cgroup_attach_move(&att, 0), 0);
    cgroup_attach_fini(&att);
    snprintf(want, sizeof(want), "%d\n", (int)getpid());
    cr_assert_str_eq(get(job_dir("memory", "job-1"), "cgroup.procs"), want);

    /* Only absolute cgroup.procs paths. */
    const char *bad[] = {"cgroup.procs", "/etc/passwd", NULL};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cgroup_attach_paths(&att, &bad[i], 1, &err), -1);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert_eq(att.nfd, 0);
    }
    cr_assert_eq(cgroup_attach_paths(&att, paths, 0, &err), -1);
    /* A job cgroup that is gone. */
    cr_assert_eq(cgroup_job_procs_path(T.ctx, 0, "job-2", path, sizeof(path)),
                 0);
    cr_assert_eq(cgroup_attach_paths(&att, paths, 1, &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
}

Test(cgroup_fake, v2_stats_parsed)
{
    struct sh_error err = {0};
    struct cgroup_stats st;

    fake_v2("job-1", false);
    fake_ctx();
    const char *job = job_dir("memory", "job-1");
    putf(job, "cpu.stat",
         "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n"
         "nr_periods 0\n");
    putf(job, "memory.current", "4096\n");
    putf(job, "memory.peak", "8192\n");
    putf(job, "memory.events",
         "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n");
    cr_assert_eq(cgroup_job_stats(T.ctx, "job-1", &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.cpu_usage_ns, 1500000);
    cr_assert_eq(st.mem_current, 4096);
    cr_assert_eq(st.mem_peak, 8192);
    cr_assert(st.oom_killed);

    /* Before Linux 5.19 there is no memory.peak: reported as 0. */
    char path[512];
    snprintf(path, sizeof(path), "%s/memory.peak", job);
    cr_assert_eq(unlink(path), 0);
    putf(job, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
    cr_assert_eq(cgroup_job_stats(T.ctx, "job-1", &st, &err), 0, "%s", err.msg);
    cr_assert_eq(st.mem_peak, 0);
    cr_assert_not(st.oom_killed);

    putf(job, "memory.current", "lots\n");
    cr_assert_eq(cgroup_job_stats(T.ctx, "job-1", &st, &err), -1);
    cr_assert_eq(err.code, SH_EINTERNAL);
    cr_assert_eq(cgroup_job_stats(T.ctx, "job-2", &st, &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
}

Test(cgroup_fake, v2_usage_is_cpu_time_and_peak)
{
    struct sh_error err = {0};
    uint64_t cpu = 1, peak = 1;

    fake_v2("job-1", false);
    fake_ctx();
    const char *job = job_dir("memory", "job-1");
    putf(job, "cpu.stat", "usage_usec 2500\nuser_usec 2000\n");
    putf(job, "memory.peak", "12288\n");
    cr_assert_eq(cgroup_job_usage(T.ctx, "job-1", &cpu, &peak, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(cpu, 2500000);
    cr_assert_eq(peak, 12288);

    /* Before Linux 5.19 there is no memory.peak: 0, as in the stats. */
    char path[512];
    snprintf(path, sizeof(path), "%s/memory.peak", job);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(cgroup_job_usage(T.ctx, "job-1", &cpu, &peak, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(cpu, 2500000);
    cr_assert_eq(peak, 0);

    putf(job, "cpu.stat", "usage_usec lots\n");
    cr_assert_eq(cgroup_job_usage(T.ctx, "job-1", &cpu, &peak, &err), -1);
    cr_assert_eq(cgroup_job_usage(T.ctx, "job-2", &cpu, &peak, &err), -1);
    cr_assert_eq(cgroup_job_usage(T.ctx, "../job-1", &cpu, &peak, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
}

Test(cgroup_fake, v2_sigkill_goes_through_cgroup_kill)
{
    struct sh_error err = {0};

    fake_v2("job-1", false);
    fake_ctx();
    cr_assert_eq(cgroup_job_kill(T.ctx, "job-1", SIGKILL, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(get(job_dir("memory", "job-1"), "cgroup.kill"), "1");
    cr_assert_eq(cgroup_job_kill(T.ctx, "job-2", SIGKILL, &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
    cr_assert_eq(cgroup_job_kill(T.ctx, "job-1", 0, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
}

Test(cgroup_fake, v2_other_signals_freeze_signal_each_process_and_thaw)
{
    struct sh_error err = {0};
    char procs[64];

    fake_v2("job-1", false);
    fake_ctx();
    pid_t a = fork();
    cr_assert_geq(a, 0);
    if (a == 0)
        child_sleeps(NULL);
    add_kid(a);
    pid_t b = fork();
    cr_assert_geq(b, 0);
    if (b == 0)
        child_sleeps(NULL);
    add_kid(b);
    snprintf(procs, sizeof(procs), "%d\n%d\n", (int)a, (int)b);
    const char *job = job_dir("memory", "job-1");
    putf(job, "cgroup.procs", procs);

    int n = -1;
    cr_assert_eq(cgroup_job_count(T.ctx, "job-1", &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 2);
    cr_assert_eq(cgroup_job_kill(T.ctx, "job-1", SIGTERM, &err), 0, "%s",
                 err.msg);
    int status = reap(a);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    status = reap(b);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    cr_assert_str_eq(get(job, "cgroup.freeze"), "0");
    cr_assert_str_eq(get(job, "cgroup.kill"), "");
}

Test(cgroup_fake, v2_destroy_refuses_with_processes_and_ignores_absent)
{
    struct sh_error err = {0};

    fake_v2("job-1", false);
    fake_ctx();
    putf(job_dir("memory", "job-1"), "cgroup.procs", "12\n34\n");
    cr_assert_eq(cgroup_job_destroy(T.ctx, "job-1", &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    cr_assert(is_dir(job_dir("memory", "job-1")));
    cr_assert_eq(cgroup_job_destroy(T.ctx, "job-9", &err), 0, "%s", err.msg);
    cr_assert_eq(cgroup_ctx_prune(T.ctx, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
}

Test(cgroup_fake, v2_failed_ctx_create_leaves_no_directory)
{
    struct sh_error err = {0};
    char dir[512];
    char line[512];

    /* Only the root exists: "shoal" is made, then has no
     * cgroup.subtree_control (only cgroupfs makes those), so it fails. */
    mkdir_ok(T.root);
    fake_v2_dir(T.root, "cpu memory pids\n");
    snprintf(line, sizeof(line),
             "30 22 0:26 / %s/cg\\040root rw - cgroup2 cgroup2 rw\n", T.tmp);
    fake_mountinfo(line);
    T.ctx = cgroup_ctx_create_mountinfo(T.mountinfo, "shoal/node1", &err);
    cr_assert_null(T.ctx);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    snprintf(dir, sizeof(dir), "%s/shoal", T.root);
    cr_assert_not(is_dir(dir), "%s left behind", dir);
}

Test(cgroup_fake, unusable_cgroups_are_unavailable_with_a_reason)
{
    struct sh_error err = {0};
    char line[512];

    fake_mountinfo("");
    cr_assert_null(
        cgroup_ctx_create_mountinfo(T.mountinfo, "shoal/node1", &err));
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, "memory controller"), "%s", err.msg);

    fake_v2(NULL, true);
    cr_assert_null(
        cgroup_ctx_create_mountinfo(T.mountinfo, "shoal/node1", &err));
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, "read-only"), "%s", err.msg);

    fake_v2(NULL, false);
    putf(T.root, "cgroup.controllers", "cpu memory\n");
    cr_assert_null(
        cgroup_ctx_create_mountinfo(T.mountinfo, "shoal/node1", &err));
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, "pids"), "%s", err.msg);

    snprintf(line, sizeof(line), "%s/nothing", T.tmp);
    cr_assert_null(cgroup_ctx_create_mountinfo(line, "shoal/node1", &err));
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
}

Test(cgroup_fake, bad_parents_and_keys_are_invalid)
{
    struct sh_error err = {0};
    static const char *const parents[] = {
        "",         "/shoal",  "shoal/", "shoal//n",          "../x",
        "shoal/..", ".hidden", "a b",    "1/2/3/4/5/6/7/8/9",
    };
    for (size_t i = 0; i < sizeof(parents) / sizeof(*parents); i++) {
        err.code = SH_OK;
        cr_assert_null(
            cgroup_ctx_create_mountinfo("/nonexistent", parents[i], &err),
            "parent \"%s\"", parents[i]);
        cr_assert_eq(err.code, SH_EINVAL, "parent \"%s\"", parents[i]);
    }

    fake_v2("job-1", false);
    fake_ctx();
    char long_key[CGROUP_KEY_MAX + 2];
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    const char *const keys[] = {
        "..", "a/b", "", long_key, ".", ".hidden", "a..b", "job 1", "jöb",
    };
    struct cgroup_stats st;
    struct cgroup_attach att;
    int n;
    for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
        const char *k = keys[i];
        cr_assert_eq(cgroup_key_check(k, &err), -1, "key \"%s\"", k);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert_eq(cgroup_job_create(T.ctx, k, NULL, &err), -1);
        cr_assert_eq(err.code, SH_EINVAL, "key \"%s\"", k);
        cr_assert_eq(cgroup_attach_init(&att, T.ctx, k, &err), -1);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert_eq(cgroup_job_attach(T.ctx, k, 0, &err), -1);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert_eq(cgroup_job_kill(T.ctx, k, SIGKILL, &err), -1);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert_eq(cgroup_job_count(T.ctx, k, &n, &err), -1);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert_eq(cgroup_job_stats(T.ctx, k, &st, &err), -1);
        cr_assert_eq(err.code, SH_EINVAL);
        cr_assert_eq(cgroup_job_destroy(T.ctx, k, &err), -1);
        cr_assert_eq(err.code, SH_EINVAL);
    }
    cr_assert_eq(cgroup_key_check("job-17-0.x_Y", &err), 0);
    long_key[CGROUP_KEY_MAX] = '\0';
    cr_assert_eq(cgroup_key_check(long_key, &err), 0);
}

Test(cgroup_fake, bad_limits_are_invalid)
{
    struct sh_error err = {0};
    const struct cgroup_limits bad[] = {
        {.cpu_millis = -1},        {.cpu_millis = 5}, {.cpu_millis = 10000001},
        {.mem_bytes = UINT64_MAX}, {.pids_max = -1},  {.pids_max = 4194305},
    };

    fake_v2("job-1", false);
    fake_ctx();
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        cr_assert_eq(cgroup_job_create(T.ctx, "job-1", &bad[i], &err), -1,
                     "case %zu", i);
        cr_assert_eq(err.code, SH_EINVAL, "case %zu", i);
    }
    /* Nothing was written. */
    cr_assert_str_eq(get(job_dir("memory", "job-1"), "memory.max"), "max\n");
}

/* v1 with cpu and cpuacct co-mounted, a cgroup2 mount without memory (as on
 * hybrid hosts), and mounts listed twice. */
static void fake_v1(void)
{
    static const char *const names[] = {"cpu,cpuacct", "memory", "pids",
                                        "freezer", "unified"};
    char dir[512];
    char buf[2048];
    size_t len = 0;

    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        snprintf(dir, sizeof(dir), "%s/%s", T.tmp, names[i]);
        mkdir_ok(dir);
        if (strcmp(names[i], "unified") == 0)
            len +=
                (size_t)snprintf(buf + len, sizeof(buf) - len,
                                 "%zu 22 0:%zu / %s rw - cgroup2 cgroup2 rw\n",
                                 40 + i, 40 + i, dir);
        else
            len += (size_t)snprintf(
                buf + len, sizeof(buf) - len,
                "%zu 22 0:%zu /sub %s/x rw - cgroup cgroup rw,%s\n"
                "%zu 22 0:%zu / %s rw - cgroup cgroup rw,%s\n",
                50 + i, 40 + i, dir, names[i], 40 + i, 40 + i, dir, names[i]);
    }
    snprintf(dir, sizeof(dir), "%s/unified", T.tmp);
    putf(dir, "cgroup.controllers", "hugetlb\n");
    fake_mountinfo(buf);
}

Test(cgroup_fake, v1_comounted_controllers_share_a_directory)
{
    struct sh_error err = {0};
    char dir[512];

    fake_v1();
    fake_ctx();
    cr_assert_eq(cgroup_version(T.ctx), 1);
    snprintf(dir, sizeof(dir), "%s/cpu,cpuacct/shoal/node1", T.tmp);
    cr_assert_str_eq(cgroup_ctx_dir(T.ctx, "cpu"), dir);
    cr_assert_str_eq(cgroup_ctx_dir(T.ctx, "cpuacct"), dir);
    snprintf(dir, sizeof(dir), "%s/memory/shoal/node1", T.tmp);
    cr_assert_str_eq(cgroup_ctx_dir(T.ctx, "memory"), dir);
    cr_assert(is_dir(dir));

    /* The new job directories have no interface files: create fails and
     * removes what it made. */
    cr_assert_eq(cgroup_job_create(T.ctx, "job-1", NULL, &err), -1);
    cr_assert_not(is_dir(job_dir("memory", "job-1")));
    cr_assert_not(is_dir(job_dir("cpu", "job-1")));

    static const char *const files[][2] = {
        {"memory", "memory.limit_in_bytes"},
        {"memory", "memory.memsw.limit_in_bytes"},
        {"memory", "cgroup.procs"},
        {"cpu", "cpu.cfs_period_us"},
        {"cpu", "cpu.cfs_quota_us"},
        {"cpu", "cgroup.procs"},
        {"pids", "pids.max"},
        {"pids", "cgroup.procs"},
        {"freezer", "freezer.state"},
        {"freezer", "cgroup.procs"},
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
        mkdir_ok(job_dir(files[i][0], "job-1"));
        putf(job_dir(files[i][0], "job-1"), files[i][1], "");
    }
    putf(job_dir("memory", "job-1"), "memory.limit_in_bytes",
         "9223372036854771712\n");
    struct cgroup_limits lim = {
        .cpu_millis = 1500, .mem_bytes = 64 * MIB, .pids_max = 100};
    cr_assert_eq(cgroup_job_create(T.ctx, "job-1", &lim, &err), 0, "%s",
                 err.msg);
    const char *mem = job_dir("memory", "job-1");
    const char *cpu = job_dir("cpu", "job-1");
    cr_assert_str_eq(get(mem, "memory.limit_in_bytes"), "67108864");
    cr_assert_str_eq(get(mem, "memory.memsw.limit_in_bytes"), "67108864");
    cr_assert_str_eq(get(cpu, "cpu.cfs_period_us"), "100000");
    cr_assert_str_eq(get(cpu, "cpu.cfs_quota_us"), "150000");
    cr_assert_str_eq(get(job_dir("pids", "job-1"), "pids.max"), "100");
    cr_assert_str_eq(get(job_dir("freezer", "job-1"), "freezer.state"),
                     "THAWED");

    struct cgroup_attach att;
    cr_assert_eq(cgroup_attach_init(&att, T.ctx, "job-1", &err), 0, "%s",
                 err.msg);
    cr_assert_eq(att.nfd, 4, "one file per distinct hierarchy");
    cgroup_attach_fini(&att);

    struct cgroup_limits none = {0};
    cr_assert_eq(cgroup_job_create(T.ctx, "job-1", &none, &err), 0, "%s",
                 err.msg);
    cr_assert_str_eq(get(mem, "memory.limit_in_bytes"), "-1");
    cr_assert_str_eq(get(mem, "memory.memsw.limit_in_bytes"), "-1");
    cr_assert_str_eq(get(cpu, "cpu.cfs_quota_us"), "-1");
    cr_assert_str_eq(get(job_dir("pids", "job-1"), "pids.max"), "max");

    /* prune refuses while the job is there, then removes the parents. */
    cr_assert_eq(cgroup_ctx_prune(T.ctx, &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", job_dir(files[i][0], "job-1"),
                 files[i][1]);
        unlink(path);
    }
    cr_assert_eq(cgroup_job_destroy(T.ctx, "job-1", &err), -1,
                 "the fake has no cgroup.procs any more");
    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++)
        rmdir(job_dir(files[i][0], "job-1"));
    cr_assert_eq(cgroup_ctx_prune(T.ctx, &err), 0, "%s", err.msg);
    snprintf(dir, sizeof(dir), "%s/memory/shoal", T.tmp);
    cr_assert_not(is_dir(dir));
    snprintf(dir, sizeof(dir), "%s/cpu,cpuacct/shoal", T.tmp);
    cr_assert_not(is_dir(dir));
}

Test(cgroup_fake, v1_usage_reads_cpuacct_usage_and_max_usage_only)
{
    struct sh_error err = {0};
    char path[512];

    fake_v1();
    fake_ctx();
    char cpu[512], mem[512];
    snprintf(cpu, sizeof(cpu), "%s", job_dir("cpuacct", "job-1"));
    snprintf(mem, sizeof(mem), "%s", job_dir("memory", "job-1"));
    mkdir_ok(cpu);
    mkdir_ok(mem);
    /* No memory.usage_in_bytes nor memory.oom_control, which the whole
     * stats read: what a run's end records needs only these two. */
    putf(cpu, "cpuacct.usage", "123456789\n");
    putf(mem, "memory.max_usage_in_bytes", "4096000\n");
    uint64_t cpu_ns = 0, peak = 0;
    cr_assert_eq(cgroup_job_usage(T.ctx, "job-1", &cpu_ns, &peak, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(cpu_ns, 123456789);
    cr_assert_eq(peak, 4096000);
    struct cgroup_stats st;
    cr_assert_eq(cgroup_job_stats(T.ctx, "job-1", &st, &err), -1);

    snprintf(path, sizeof(path), "%s/memory.max_usage_in_bytes", mem);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(cgroup_job_usage(T.ctx, "job-1", &cpu_ns, &peak, &err), -1);
    cr_assert_eq(err.code, SH_EINTERNAL);
    snprintf(path, sizeof(path), "%s/cpuacct.usage", cpu);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(cgroup_job_usage(T.ctx, "job-1", &cpu_ns, &peak, &err), -1);
    cr_assert_eq(rmdir(cpu), 0);
    cr_assert_eq(rmdir(mem), 0);
}

/* --- the kernel's cgroups ----------------------------------------------- */

static void real_init(void)
{
    memset(&T, 0, sizeof(T));
    snprintf(T.parent, sizeof(T.parent), "shoal-test-%d/t", (int)getpid());
}

/* Wait (bounded) until the job has `want` processes, reaping zombies. */
static int wait_count(const char *key, int want)
{
    struct sh_error err = {0};
    int n = -1;

    for (int i = 0; i < 600; i++) {
        pid_t r;
        while ((r = waitpid(-1, NULL, WNOHANG)) > 0)
            forget_kid(r);
        if (cgroup_job_count(T.ctx, key, &n, &err) < 0)
            return -1;
        if (n == want)
            break;
        sleep_ms(5);
    }
    return n;
}

static void real_fini(void)
{
    struct sh_error err = {0};

    for (int i = 0; i < T.nkids; i++)
        kill(T.kids[i], SIGKILL);
    for (int i = 0; i < T.nkids; i++)
        waitpid(T.kids[i], NULL, 0);
    if (!T.ctx)
        return;
    for (int i = 0; i < T.nkeys; i++) {
        cgroup_job_kill(T.ctx, T.keys[i], SIGKILL, NULL);
        wait_count(T.keys[i], 0);
        if (cgroup_job_destroy(T.ctx, T.keys[i], &err) < 0)
            fprintf(stderr, "cleanup: %s\n", err.msg);
    }
    if (cgroup_ctx_prune(T.ctx, &err) < 0)
        fprintf(stderr, "cleanup: %s\n", err.msg);
    cgroup_ctx_destroy(T.ctx);
}

TestSuite(cgroup_real, .init = real_init, .fini = real_fini, .timeout = 20);

/* Create the context on this host's cgroups, or skip saying why. */
static void need_cgroups(void)
{
    struct sh_error err = {0};
    bool required = getenv("SHOAL_REQUIRE_CGROUPS") != NULL;

    if (geteuid() != 0) {
        if (required)
            cr_assert_fail(
                "SHOAL_REQUIRE_CGROUPS is set but not running as root");
        cr_skip_test("needs root to create cgroups");
    }
    T.ctx = cgroup_ctx_create(T.parent, &err);
    if (!T.ctx) {
        if (required)
            cr_assert_fail("cgroups unusable: %s", err.msg);
        cr_skip_test("cgroups unusable: %s", err.msg);
    }
}

static void make_job(const char *key, const struct cgroup_limits *lim)
{
    struct sh_error err = {0};

    cr_assert_lt(T.nkeys, MAX_KEYS);
    T.keys[T.nkeys++] = key;
    cr_assert_eq(cgroup_job_create(T.ctx, key, lim, &err), 0, "%s", err.msg);
}

static int count(const char *key)
{
    struct sh_error err = {0};
    int n = -1;
    cr_assert_eq(cgroup_job_count(T.ctx, key, &n, &err), 0, "%s", err.msg);
    return n;
}

Test(cgroup_real, limits_read_back_as_documented)
{
    struct cgroup_limits lim = {
        .cpu_millis = 1500, .mem_bytes = 64 * MIB, .pids_max = 100};
    struct cgroup_limits none = {0};

    need_cgroups();
    make_job("job-17-0", &lim);
    const char *mem = job_dir("memory", "job-17-0");
    const char *cpu = job_dir("cpu", "job-17-0");
    const char *pids = job_dir("pids", "job-17-0");
    if (cgroup_version(T.ctx) == 1) {
        char memsw[600];
        snprintf(memsw, sizeof(memsw), "%s/memory.memsw.limit_in_bytes", mem);
        cr_assert_str_eq(get(mem, "memory.limit_in_bytes"), "67108864\n");
        if (access(memsw, F_OK) == 0)
            cr_assert_str_eq(get(mem, "memory.memsw.limit_in_bytes"),
                             "67108864\n");
        cr_assert_str_eq(get(cpu, "cpu.cfs_period_us"), "100000\n");
        cr_assert_str_eq(get(cpu, "cpu.cfs_quota_us"), "150000\n");
        cr_assert_str_eq(get(pids, "pids.max"), "100\n");
        cr_assert(is_dir(job_dir("cpuacct", "job-17-0")));
    } else {
        cr_assert_str_eq(get(mem, "memory.max"), "67108864\n");
        cr_assert_str_eq(get(cpu, "cpu.max"), "150000 100000\n");
        cr_assert_str_eq(get(pids, "pids.max"), "100\n");
    }

    /* Lowering (on v1 the memsw limit must follow the memory limit down). */
    struct cgroup_limits less = {.mem_bytes = 32 * MIB};
    make_job("job-17-0", &less);
    const char *file =
        cgroup_version(T.ctx) == 1 ? "memory.limit_in_bytes" : "memory.max";
    cr_assert_str_eq(get(mem, file), "33554432\n");
    if (cgroup_version(T.ctx) == 1 &&
        strcmp(get(mem, "memory.memsw.limit_in_bytes"), "<missing>") != 0)
        cr_assert_str_eq(get(mem, "memory.memsw.limit_in_bytes"), "33554432\n");

    make_job("job-17-0", &none);
    if (cgroup_version(T.ctx) == 1) {
        uint64_t v = strtoull(get(mem, "memory.limit_in_bytes"), NULL, 10);
        cr_assert_gt(v, UINT64_C(1) << 60, "memory unlimited, got %" PRIu64, v);
        cr_assert_str_eq(get(cpu, "cpu.cfs_quota_us"), "-1\n");
    } else {
        cr_assert_str_eq(get(mem, "memory.max"), "max\n");
        cr_assert_str_eq(get(cpu, "cpu.max"), "max 100000\n");
    }
    cr_assert_str_eq(get(pids, "pids.max"), "max\n");
}

Test(cgroup_real, parent_sits_under_the_hierarchy_root)
{
    struct sh_error err = {0};
    char want[256];

    need_cgroups();
    make_job("job-1", NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        child_sleeps(NULL);
    add_kid(pid);
    /* Attached from the parent this time. */
    cr_assert_eq(cgroup_job_attach(T.ctx, "job-1", pid, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(count("job-1"), 1);

    char path[64];
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    const char *cg = get(path, "cgroup");
    if (cgroup_version(T.ctx) == 1)
        snprintf(want, sizeof(want), ":memory:/%s/job-1\n", T.parent);
    else
        snprintf(want, sizeof(want), "0::/%s/job-1\n", T.parent);
    cr_assert(strstr(cg, want), "want %s in\n%s", want, cg);
}

Test(cgroup_real, memory_hog_is_oom_killed_and_reported)
{
    struct sh_error err = {0};
    struct cgroup_limits lim = {.mem_bytes = 64 * MIB};
    struct cgroup_stats st;

    need_cgroups();
    make_job("job-oom", &lim);
    pid_t pid = spawn_in("job-oom", child_hogs_memory, NULL);
    int status = reap(pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
              "status 0x%x: the hog was not OOM-killed", status);
    cr_assert_eq(cgroup_job_stats(T.ctx, "job-oom", &st, &err), 0, "%s",
                 err.msg);
    cr_assert(st.oom_killed);
    cr_assert_leq(st.mem_peak, 64 * MIB);
}

Test(cgroup_real, kill_stops_a_process_and_its_forked_grandchild)
{
    struct sh_error err = {0};
    int fds[2];
    pid_t g = 0;

    need_cgroups();
    /* Orphaned grandchildren come to us, so they can be reaped here. */
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    make_job("job-tree", NULL);
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = spawn_in("job-tree", child_forks_sleeper, &fds[1]);
    cr_assert_eq(read(fds[0], &g, sizeof(g)), (ssize_t)sizeof(g));
    add_kid(g);
    close(fds[0]);
    close(fds[1]);
    cr_assert_eq(wait_count("job-tree", 2), 2);

    cr_assert_eq(cgroup_job_kill(T.ctx, "job-tree", SIGKILL, &err), 0, "%s",
                 err.msg);
    int status = reap(pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    status = reap(g);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    cr_assert_eq(wait_count("job-tree", 0), 0);
}

Test(cgroup_real, one_sigkill_catches_a_process_that_keeps_forking)
{
    struct sh_error err = {0};
    struct cgroup_limits lim = {.pids_max = 32};

    need_cgroups();
    if (cgroup_version(T.ctx) == 1 && !cgroup_ctx_dir(T.ctx, "freezer"))
        cr_skip_test("v1 without a freezer cannot promise this");
    cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    make_job("job-hop", &lim);
    for (int i = 0; i < 8; i++)
        spawn_in("job-hop", child_hops, NULL);
    sleep_ms(20);
    cr_assert_eq(cgroup_job_kill(T.ctx, "job-hop", SIGKILL, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(wait_count("job-hop", 0), 0);
}

Test(cgroup_real, kill_with_sigterm_reaches_every_process)
{
    struct sh_error err = {0};

    need_cgroups();
    make_job("job-term", NULL);
    pid_t a = spawn_in("job-term", child_sleeps, NULL);
    pid_t b = spawn_in("job-term", child_sleeps, NULL);
    cr_assert_eq(wait_count("job-term", 2), 2);
    cr_assert_eq(cgroup_job_kill(T.ctx, "job-term", SIGTERM, &err), 0, "%s",
                 err.msg);
    int status = reap(a);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    status = reap(b);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    if (cgroup_version(T.ctx) == 1 && cgroup_ctx_dir(T.ctx, "freezer"))
        cr_assert_str_eq(get(job_dir("freezer", "job-term"), "freezer.state"),
                         "THAWED\n");
}

Test(cgroup_real, destroy_refuses_while_processes_remain)
{
    struct sh_error err = {0};

    need_cgroups();
    make_job("job-busy", NULL);
    pid_t pid = spawn_in("job-busy", child_sleeps, NULL);
    cr_assert_eq(wait_count("job-busy", 1), 1);
    cr_assert_eq(cgroup_job_destroy(T.ctx, "job-busy", &err), -1);
    cr_assert_eq(err.code, SH_ECONFLICT);
    cr_assert(is_dir(job_dir("memory", "job-busy")));
    cr_assert(is_dir(job_dir("cpu", "job-busy")));

    kill(pid, SIGKILL);
    reap(pid);
    cr_assert_eq(cgroup_job_destroy(T.ctx, "job-busy", &err), 0, "%s", err.msg);
    cr_assert_not(is_dir(job_dir("memory", "job-busy")));
    cr_assert_not(is_dir(job_dir("cpu", "job-busy")));
    cr_assert_not(is_dir(job_dir("pids", "job-busy")));
    cr_assert_eq(cgroup_job_destroy(T.ctx, "job-busy", &err), 0, "%s", err.msg);
    int n;
    cr_assert_eq(cgroup_job_count(T.ctx, "job-busy", &n, &err), -1);
    cr_assert_eq(err.code, SH_ENOTFOUND);
}

Test(cgroup_real, recreate_adopts_running_processes_and_new_limits)
{
    struct sh_error err = {0};
    struct cgroup_limits lim = {.mem_bytes = 64 * MIB, .pids_max = 50};
    struct cgroup_limits more = {.mem_bytes = 128 * MIB, .pids_max = 60};

    need_cgroups();
    make_job("job-adopt", &lim);
    spawn_in("job-adopt", child_sleeps, NULL);
    cr_assert_eq(wait_count("job-adopt", 1), 1);

    /* A restarted agent: a new context on the same parent. */
    cgroup_ctx_destroy(T.ctx);
    T.ctx = cgroup_ctx_create(T.parent, &err);
    cr_assert_not_null(T.ctx, "%s", err.msg);
    cr_assert_eq(cgroup_job_create(T.ctx, "job-adopt", &more, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(count("job-adopt"), 1);
    cr_assert_str_eq(get(job_dir("pids", "job-adopt"), "pids.max"), "60\n");
    const char *mem = job_dir("memory", "job-adopt");
    cr_assert_str_eq(get(mem, cgroup_version(T.ctx) == 1
                                  ? "memory.limit_in_bytes"
                                  : "memory.max"),
                     "134217728\n");
}

Test(cgroup_real, cpu_usage_grows_after_a_busy_loop)
{
    struct sh_error err = {0};
    struct cgroup_stats before;
    struct cgroup_stats after;

    need_cgroups();
    make_job("job-cpu", NULL);
    cr_assert_eq(cgroup_job_stats(T.ctx, "job-cpu", &before, &err), 0, "%s",
                 err.msg);
    pid_t pid = spawn_in("job-cpu", child_spins, NULL);
    int status = reap(pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cr_assert_eq(cgroup_job_stats(T.ctx, "job-cpu", &after, &err), 0, "%s",
                 err.msg);
    /* The child used 100 ms of CPU by its own clock. */
    cr_assert_gt(after.cpu_usage_ns, before.cpu_usage_ns);
    cr_assert_geq(after.cpu_usage_ns - before.cpu_usage_ns, UINT64_C(50000000),
                  "%" PRIu64, after.cpu_usage_ns - before.cpu_usage_ns);
    cr_assert_not(after.oom_killed);
}
