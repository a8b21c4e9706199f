/* SPDX-License-Identifier: Apache-2.0 */
/* The run supervisor (see shim.h). Single-threaded: it is forked by the
 * agent's fork server (forkserver.h) or exec'd fresh by the agent, so
 * forking here is safe. Tasks start with fork, or in the shim's memory
 * when nothing is lost while the shim waits for their exec (start_task). */
#include "agent/shim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <linux/magic.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/mounts.h"
#include "agent/shim_ctr.h"
#include "agent/tools.h"
#include "lib/model/job.h"
#include "lib/util/clock.h"
#include "lib/util/file.h"

#define SHIM_TASKS_MAX 256

struct shim {
    const char *dir;
    int dirfd; /* the run folder, opened before any volume is mounted */
    json_t *launch;
    char **argv;
    char **env; /* NULL-terminated; slots at the end for the per-task
                   RANK, LOCAL_RANK, SLURM_PROCID, SLURM_LOCALID */
    int nenv;
    int nbase; /* env[0..nbase) are borrowed from launch; the rest owned */
    int tasks;
    int node_rank;
    bool switch_user;
    uid_t uid;
    gid_t gid;
    char user[64];
    char home[4096];
    char shell[256];
    char workdir[4096];
    int out_fd;
    int err_fd;
    struct cgroup_ctx *cg;
    struct cgroup_attach att;
    bool attach;
    struct shim_ctr *ctr; /* a run in an image (shim_ctr.h); NULL = bare */
    gid_t groups[256];    /* the user's groups, for the container */
    int ngroups;
    char **ctr_argv; /* the command inside the container */
};

/* What start_task hands the task (task_main). */
struct task_start {
    const struct shim *shim;
    pid_t pgid;              /* the group to join; 0: a group of its own */
    char **argv;             /* the command, or crun's for a run in an image */
    char **envp;             /* the job's environment */
    const char *stdout_path; /* --output, --error: NULL for none */
    const char *stderr_path;
    int errfd; /* the pipe's end: errno if the start fails */
};

/* The tasks' process group, from fork; a stop the agent asked for before
 * it existed. Read by the signal handler. */
static volatile sig_atomic_t task_pgid;
static volatile sig_atomic_t pending_sig;

/* The dispositions the shim changes: ignored (the first four) or caught
 * (on_forward). Every other signal is at its default in the shim (the fork
 * server starts from defaults, shim_main resets what an exec'd shim
 * inherited), so a task resets these alone, not all 64. */
static const int shim_signals[] = {SIGINT,  SIGTERM,       SIGHUP,
                                   SIGPIPE, SHIM_SIG_TERM, SHIM_SIG_KILL};
#define SHIM_NSIGNALS (int)(sizeof(shim_signals) / sizeof(shim_signals[0]))

void shim_reset_signals(void)
{
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
}

/* In a task before its exec: every disposition at its default. */
static void task_default_signals(void)
{
    for (int i = 0; i < SHIM_NSIGNALS; i++)
        signal(shim_signals[i], SIG_DFL);
}

static void on_forward(int sig)
{
    int e = errno;
    int to = sig == SHIM_SIG_KILL ? SIGKILL : SIGTERM;
    /* A KILL asked earlier is not weakened by a later TERM. */
    if (pending_sig != SIGKILL)
        pending_sig = to;
    if (task_pgid > 1)
        kill(-(pid_t)task_pgid, to);
    errno = e;
}

static void write_file(const struct shim *s, const char *name, const char *text)
{
    file_write_atomic_at(s->dirfd, name, text, strlen(text), 0600, true, NULL);
}

static void write_status(const struct shim *s, int code, int sig,
                         const char *error)
{
    json_t *st = json_pack("{s:i, s:i, s:I}", "exit_code", code, "signal", sig,
                           "ended_ms", (json_int_t)clock_wall_ms());
    if (error)
        json_object_set_new(st, "error", json_string(error));
    char *text = json_dumps(st, JSON_COMPACT);
    if (text)
        write_file(s, "status.json", text);
    free(text);
    json_decref(st);
}

/* Tell the job's stderr (what the user reads) and the status why the run
 * could not start; the run ends with code 127. Returns 0. */
static int fail_start(struct shim *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail_start(struct shim *s, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (s->err_fd >= 0)
        dprintf(s->err_fd, "shoal: %s\n", msg);
    write_status(s, 127, 0, msg);
    return 0;
}

static char *dup_env(const char *k, const char *v)
{
    char *kv;
    return asprintf(&kv, "%s=%s", k, v) < 0 ? NULL : kv;
}

static bool env_has(const struct shim *s, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < s->nenv; i++) {
        if (strncmp(s->env[i], key, n) == 0 && s->env[i][n] == '=')
            return true;
    }
    return false;
}

/* The largest launch.json read: the job's environment (JOB_ENV_MAX values
 * of JOB_ENV_VALUE_MAX bytes) and arguments (JOB_ARGV_TOTAL_MAX) with
 * room to spare. */
#define LAUNCH_FILE_MAX (16 << 20)

/* RUN/launch.json, opened under the run folder's descriptor (hostile-path
 * rules, doc/design/security.md): a symbolic link is not followed, a
 * FIFO or device is not opened, a file not of the shim's own user (the
 * agent wrote it) or over LAUNCH_FILE_MAX is not read. The text is wiped
 * once parsed. NULL when it cannot be read. */
static json_t *load_launch_file(int dirfd)
{
    int fd = file_open_regular_at(dirfd, "launch.json");
    if (fd < 0) {
        fprintf(stderr, "shoal-agent --shim: launch.json: %s\n",
                strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || st.st_size <= 0 ||
        st.st_size > LAUNCH_FILE_MAX) {
        fprintf(stderr,
                "shoal-agent --shim: launch.json: not the agent's, empty or "
                "over %d bytes\n",
                LAUNCH_FILE_MAX);
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size;
    char *buf = malloc(cap);
    size_t got = 0;
    while (buf && got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    json_t *launch = buf ? json_loadb(buf, got, 0, NULL) : NULL;
    if (buf)
        explicit_bzero(buf, cap);
    free(buf);
    return launch;
}

/* The launch description: TEXT from the fork server's request, parsed and
 * then wiped at once (it may hold the registry's credentials and the job's
 * environment). What stays in memory is what the shim needs to run the
 * job: the parsed description (registry_auth included, for the pull) for
 * the shim's life, and the freed, unwiped heap blocks of the parser's own
 * copies; the fork server wipes its copy of the request. Without TEXT (no
 * fork server, or a description over FORKSERVER_LAUNCH_MAX) the agent
 * wrote RUN_DIR/launch.json, which is read here. */
static int load(struct shim *s, char *text, size_t len)
{
    json_error_t jerr;
    if (text) {
        s->launch = json_loadb(text, len, 0, &jerr);
        explicit_bzero(text, len);
    } else {
        s->launch = load_launch_file(s->dirfd);
    }
    if (!s->launch)
        return -1;
    /* The registry's credentials stay in memory only, for the pull: the
     * run's file goes on without them. */
    if (!text && json_object_get(s->launch, "registry_auth")) {
        json_t *kept = json_copy(s->launch);
        char *rest = NULL;
        if (kept) {
            json_object_del(kept, "registry_auth");
            rest = json_dumps(kept, JSON_COMPACT);
        }
        json_decref(kept);
        if (!rest ||
            file_write_atomic_at(s->dirfd, "launch.json", rest, strlen(rest),
                                 0600, false, NULL) < 0) {
            free(rest);
            return -1;
        }
        free(rest);
    }
    const json_t *argv = json_object_get(s->launch, "argv");
    const json_t *env = json_object_get(s->launch, "env");
    size_t na = json_array_size(argv), ne = json_array_size(env);
    s->argv = calloc(na + 1, sizeof(char *));
    /* + HOME, USER, LOGNAME, SHELL; the four per-task ranks; NULL. */
    s->env = calloc(ne + 10, sizeof(char *));
    if (!s->argv || !s->env || na == 0)
        return -1;
    for (size_t i = 0; i < na; i++)
        s->argv[i] = (char *)json_string_value(json_array_get(argv, i));
    for (size_t i = 0; i < ne; i++)
        s->env[s->nenv++] = (char *)json_string_value(json_array_get(env, i));
    s->nbase = s->nenv;
    s->tasks = (int)json_integer_value(json_object_get(s->launch, "tasks"));
    s->node_rank =
        (int)json_integer_value(json_object_get(s->launch, "node_rank"));
    /* 0: a batch job's share on a node other than its first, which holds
     * the job's place there until the job ends. */
    if (s->tasks < 0 || s->tasks > SHIM_TASKS_MAX)
        s->tasks = 1;
    return 0;
}

/* A Shoal user name maps straight to a Unix account: root and system
 * accounts (below the agent's minimum uid) run jobs only when the admin
 * named them. */
static bool user_may_run(const struct shim *s, const struct passwd *pw)
{
    json_int_t min = json_integer_value(json_object_get(s->launch, "min_uid"));
    if ((json_int_t)pw->pw_uid >= min)
        return true;
    size_t i;
    const json_t *v;
    json_array_foreach (json_object_get(s->launch, "allow_users"), i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), pw->pw_name) == 0)
            return true;
    }
    return false;
}

/* Who runs the tasks, and where. */
static int resolve_user(struct shim *s)
{
    const char *user = json_string_value(json_object_get(s->launch, "user"));
    struct passwd *pw = user ? getpwnam(user) : getpwuid(getuid());
    if (!pw)
        return fail_start(s, "user %s does not exist on this node",
                          user ? user : "of the agent");
    if (user && !user_may_run(s, pw))
        return fail_start(
            s,
            "user %s (uid %u) may not run jobs on this node: accounts below "
            "uid %lld (root and system accounts) are refused unless the "
            "cluster admin allows them (shoal-agent --min-job-uid, "
            "--allow-job-user)",
            pw->pw_name, (unsigned)pw->pw_uid,
            (long long)json_integer_value(
                json_object_get(s->launch, "min_uid")));
    s->switch_user = user != NULL && pw->pw_uid != getuid();
    s->uid = pw->pw_uid;
    s->gid = pw->pw_gid;
    snprintf(s->user, sizeof(s->user), "%s", pw->pw_name);
    snprintf(s->home, sizeof(s->home), "%s", pw->pw_dir);
    snprintf(s->shell, sizeof(s->shell), "%s",
             pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh");
    const char *wd = json_string_value(json_object_get(s->launch, "workdir"));
    snprintf(s->workdir, sizeof(s->workdir), "%s", wd ? wd : s->home);
    if (s->switch_user && initgroups(s->user, s->gid) < 0)
        return fail_start(s, "cannot set the groups of %s: %s", s->user,
                          strerror(errno));
    /* The usual login variables unless the job set its own. */
    if (!env_has(s, "HOME"))
        s->env[s->nenv++] = dup_env("HOME", s->home);
    if (!env_has(s, "USER"))
        s->env[s->nenv++] = dup_env("USER", s->user);
    if (!env_has(s, "LOGNAME"))
        s->env[s->nenv++] = dup_env("LOGNAME", s->user);
    if (!env_has(s, "SHELL"))
        s->env[s->nenv++] = dup_env("SHELL", s->shell);
    return 1;
}

static int open_output(struct shim *s, const char *name)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/%s", s->dir, name);
    /* The agent's file (the tasks write through the descriptor), never
     * anything a link points to. */
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                0600);
}

/* The script belongs to the job's user, read and execute only, in the
 * agent's run folder: the user reaches it and can change nothing around
 * it. A file or link planted under its name is removed, never written
 * through. */
static int write_script(struct shim *s)
{
    const char *script =
        json_string_value(json_object_get(s->launch, "script"));
    if (!script)
        return 1;
    char path[4300];
    snprintf(path, sizeof(path), "%s/script", s->dir);
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(path, flags, 0700);
    if (fd < 0 && errno == EEXIST && unlink(path) == 0)
        fd = open(path, flags, 0700);
    size_t len = strlen(script);
    if (fd < 0 || write(fd, script, len) != (ssize_t)len) {
        if (fd >= 0)
            close(fd);
        return fail_start(s, "cannot write the job script %s: %s", path,
                          strerror(errno));
    }
    if ((s->switch_user && fchown(fd, s->uid, s->gid) < 0) ||
        fchmod(fd, 0500) < 0) {
        close(fd);
        return fail_start(s, "cannot give the script %s to its user: %s", path,
                          strerror(errno));
    }
    close(fd);
    return 1;
}

/* The user's groups (s->groups, s->ngroups), for what is opened or made
 * with the user's rights. A user in more than fit (256) keeps the first
 * 256, the primary group first, which getgrouplist leaves in the array:
 * none at all would take away from the walk rights the user has through
 * every one of them. */
static void user_groups(struct shim *s)
{
    int cap = (int)(sizeof(s->groups) / sizeof(s->groups[0]));
    s->ngroups = cap;
    if (getgrouplist(s->user, s->gid, s->groups, &s->ngroups) < 0) {
        if (s->ngroups > cap) {
            s->ngroups = cap;
        } else {
            s->groups[0] = s->gid;
            s->ngroups = 1;
        }
    }
}

/* The job's volumes, in a mount namespace of the shim's own that its tasks
 * inherit. */
static int mount_volumes(struct shim *s)
{
    char why[512];
    const char *stages =
        json_string_value(json_object_get(s->launch, "stages_dir"));
    const char *key = strrchr(s->dir, '/');
    user_groups(s);
    struct user_creds u = {.uid = s->uid,
                           .gid = s->gid,
                           .groups = s->groups,
                           .ngroups = s->ngroups};
    struct mount_user mu = {.creds = s->switch_user ? &u : NULL,
                            .scratch = s->dir};
    /* Root's tools are found now, before anything covers a folder of
     * PATH: the image's pull and crun run in the job's namespace. */
    tools_pin(NULL);
    if (mounts_enter(json_object_get(s->launch, "mounts"), stages,
                     key ? key + 1 : s->dir, &mu, why, sizeof(why)) < 0)
        return fail_start(s, "%s", why);
    return 1;
}

/* A run in an image: the bundle, its rootfs, the command inside. */
static int prepare_container(struct shim *s)
{
    if (!json_object_get(s->launch, "container"))
        return 1;
    char why[1024];
    const char *key = strrchr(s->dir, '/');
    s->ctr = shim_ctr_prepare(s->launch, s->dir, s->dirfd,
                              key ? key + 1 : s->dir, why, sizeof(why));
    if (!s->ctr)
        return fail_start(s, "%s", why);
    user_groups(s);
    if (shim_ctr_check_mounts(s->ctr, s->uid, s->gid, s->groups, s->ngroups,
                              why, sizeof(why)) < 0)
        return fail_start(s, "%s", why);
    /* A script without "#!" runs with the image's shell, as sh(1) would. */
    const char *script =
        json_string_value(json_object_get(s->launch, "script"));
    int n = 0;
    while (s->argv[n])
        n++;
    s->ctr_argv = calloc((size_t)n + 2, sizeof(char *));
    if (!s->ctr_argv)
        return fail_start(s, "out of memory");
    int k = 0;
    if (script && strncmp(script, "#!", 2) != 0)
        s->ctr_argv[k++] = "/bin/sh";
    for (int i = 0; i < n; i++)
        s->ctr_argv[k++] = s->argv[i];
    return 1;
}

static void setup_cgroup(struct shim *s)
{
    const char *parent =
        json_string_value(json_object_get(s->launch, "cgroup_parent"));
    const char *key =
        json_string_value(json_object_get(s->launch, "cgroup_key"));
    struct sh_error err = {0};
    const json_t *procs = json_object_get(s->launch, "cgroup_procs");
    if (json_is_array(procs)) {
        /* The agent's paths: the cgroups are made, nothing to scan. */
        const char *paths[CGROUP_HIER_MAX];
        size_t n = json_array_size(procs);
        for (size_t i = 0; i < n && i < CGROUP_HIER_MAX; i++)
            paths[i] = json_string_value(json_array_get(procs, i));
        if (n > CGROUP_HIER_MAX)
            sh_errorf(&err, SH_EINVAL, "%zu cgroup paths, at most %d", n,
                      CGROUP_HIER_MAX);
        else if (cgroup_attach_paths(&s->att, paths, (int)n, &err) == 0) {
            s->attach = true;
            return;
        }
        dprintf(s->err_fd, "shoal: running without CPU and memory limits: %s\n",
                err.msg);
        return;
    }
    if (!parent || !key)
        return;
    s->cg = cgroup_ctx_create(parent, &err);
    if (s->cg && cgroup_attach_init(&s->att, s->cg, key, &err) == 0) {
        s->attach = true;
        return;
    }
    dprintf(s->err_fd, "shoal: running without CPU and memory limits: %s\n",
            err.msg);
}

/* ---- a task, from its start to its exec ----
 *
 * A task starts one of two ways (start_task):
 * - fork, in general: the shim runs on while the task prepares, so a stop
 *   asked while the task waits before its exec (an open of a FIFO named as
 *   its --output, a chdir on a hung mount, a SIGSTOP) is passed on (sec-009);
 * - clone(CLONE_VM | CLONE_VFORK) where what waiting for its exec costs is
 *   bounded and sharing the shim's memory is safe (task_may_share): the
 *   task runs in the shim's memory on a stack of its own (task_stack)
 *   while the shim waits for its exec, so no page table is copied and the
 *   task takes no copy-on-write fault (fork was a third of a `true` job's
 *   CPU on the guests we measure on, where a page fault costs ~12 us:
 *   bench/HISTORY.md, round 6).
 *
 * Both run task_main, which keeps vfork's rules: no malloc and no stdio
 * (messages are formatted on its stack, task_say; the command is looked up
 * with a buffer on the stack, exec_on_path), nothing of the shim's written
 * but its own stack and errno (the shim is suspended meanwhile), every
 * signal blocked at its start and the shim's handlers reset before any is
 * unblocked, so no handler of the shim runs in it. */

#define TASK_STACK_SIZE (256 * 1024)

/* The stack of a task started in the shim's memory: mapped at the first
 * such task, below it a page no access (an overflow faults, never writes
 * into the shim's memory). The shim resumes only once the task has exec'd
 * or ended, so the next task reuses it; unmapped when every task is
 * reaped. */
static char *task_stack;
static size_t task_stack_len;

static int task_stack_map(void)
{
    if (task_stack)
        return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = TASK_STACK_SIZE + page;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    if (mprotect(m, page, PROT_NONE) < 0) {
        munmap(m, len);
        return -1;
    }
    task_stack = m;
    task_stack_len = len;
    return 0;
}

static void task_stack_unmap(void)
{
    if (task_stack)
        munmap(task_stack, task_stack_len);
    task_stack = NULL;
}

/* A line on the task's stderr (the run's stderr, or its --error file),
 * formatted on the task's stack. */
__attribute__((format(printf, 1, 2))) static void task_say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line))
        n = (int)sizeof(line) - 1;
    if (write(2, line, (size_t)n) < 0) {
        /* nowhere else to say it */
    }
}

/* strerror without a locale's lookup (it may lock or allocate). */
static const char *task_strerror(int e)
{
    const char *d = strerrordesc_np(e);
    return d ? d : "unknown error";
}

/* execve PATH; a file that is not an executable format (a script without
 * "#!") runs with /bin/sh, as execvp would. Returns on failure, errno set. */
static void exec_or_sh(const char *path, char *const argv[], char *const envp[])
{
    execve(path, argv, envp);
    if (errno != ENOEXEC)
        return;
    char *shargv[JOB_ARGC_MAX + 2];
    int n = 0;
    shargv[n++] = "/bin/sh";
    shargv[n++] = (char *)path;
    for (int i = 1; argv[i]; i++) {
        if (n >= JOB_ARGC_MAX + 1) {
            errno = E2BIG;
            return;
        }
        shargv[n++] = argv[i];
    }
    shargv[n] = NULL;
    execve("/bin/sh", shargv, envp); /* its error goes on, as execvp's */
}

/* The value of PATH in ENVP, or NULL. */
static const char *env_path(char *const envp[])
{
    for (int i = 0; envp[i]; i++) {
        if (strncmp(envp[i], "PATH=", 5) == 0)
            return envp[i] + 5;
    }
    return NULL;
}

/* execvp with ENVP for the program and the folders of PATH searched (a
 * colon-separated list): glibc's execvpe searches the caller's PATH, and
 * setting environ would write the shim's memory. A name with a slash runs
 * as it is; an empty entry of PATH is the working directory; PATH NULL is
 * "/bin:/usr/bin" (execvp's). As
 * execvp: a folder where the file is missing or not a folder is skipped,
 * one refusing access too but EACCES is then the answer, any other error
 * ends the search. Returns on failure, errno set. */
static void exec_on_path(char *const argv[], char *const envp[],
                         const char *path)
{
    const char *file = argv[0];
    if (!*file) {
        errno = ENOENT;
        return;
    }
    if (strchr(file, '/')) {
        exec_or_sh(file, argv, envp);
        return;
    }
    size_t flen = strlen(file);
    if (flen > NAME_MAX) {
        errno = ENAMETOOLONG;
        return;
    }
    if (!path)
        path = "/bin:/usr/bin";
    bool denied = false;
    char full[PATH_MAX];
    for (const char *p = path;;) {
        const char *end = strchrnul(p, ':');
        size_t dlen = (size_t)(end - p);
        if (dlen + 1 + flen < sizeof(full)) {
            size_t at = 0;
            if (dlen > 0) {
                memcpy(full, p, dlen);
                full[dlen] = '/';
                at = dlen + 1;
            }
            memcpy(full + at, file, flen + 1);
            exec_or_sh(full, argv, envp);
            if (errno == EACCES)
                denied = true;
            else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE &&
                     errno != ENODEV && errno != ETIMEDOUT)
                return;
        }
        if (!*end)
            break;
        p = end + 1;
    }
    errno = denied ? EACCES : ENOENT;
}

/* --output / --error, in the task after it became the job's user: the
 * files are opened with the user's rights only (never root's, so no link
 * or path a job planted makes root write anywhere), relative to the
 * working directory, appended to (tasks of one run share them). Without
 * an error file, stderr goes to the output file too. On failure the
 * message goes to the run's own stderr (shoal logs shows it). */
static int redirect_output(const struct task_start *ts)
{
    const char *paths[2] = {ts->stdout_path, ts->stderr_path ? ts->stderr_path
                                                             : ts->stdout_path};
    for (int i = 0; i < 2; i++) {
        if (!paths[i])
            continue;
        int fd = open(paths[i], O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0 || dup2(fd, i + 1) < 0) {
            int e = errno;
            task_say("shoal: cannot open the %s file %s: %s\n",
                     i == 0 ? "output" : "error", paths[i], task_strerror(e));
            errno = e;
            return -1;
        }
        close(fd);
    }
    return 0;
}

/* The task's side of the fork or clone: become the task and exec; on
 * failure the errno goes to the shim through ts->errfd and the task ends
 * with 127. */
static int task_main(void *arg)
{
    const struct task_start *ts = arg;
    const struct shim *s = ts->shim;
    int e;
    /* Every signal came blocked (start_task): the shim's dispositions go
     * first, so none of its handlers ever runs here (a job's user may
     * signal the task once it has their uid). */
    task_default_signals();
    setpgid(0, ts->pgid);
    /* The task takes SIGTERM from here on, also before its exec (an open
     * of a FIFO as its output can wait there); one sent since the clone is
     * pending and comes now. */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_UNBLOCK, &term, NULL);
    if (s->attach && cgroup_attach_move(&s->att, 0) < 0)
        goto fail;
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(s->out_fd, 1) < 0 ||
        dup2(s->err_fd, 2) < 0)
        goto fail;
    sigset_t none;
    sigemptyset(&none);
    if (s->ctr) {
        /* crun, as root: it switches to the job's user inside. */
        static char *const crun_env[] = {
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            NULL};
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (chdir("/") < 0)
            goto fail;
        /* crun makes the GPUs' device nodes under its umask: 0 keeps
         * their 0666 (the config gives the job 022). */
        umask(0);
        /* crun as pinned in the node's namespace (tools.h), never looked
         * up in the job's, where a volume may cover a folder of PATH. */
        tools_exec(ts->argv, crun_env);
        e = errno;
        task_say("shoal: cannot run crun: %s\n", task_strerror(e));
        errno = e;
        goto fail;
    }
    if (s->switch_user && (setgid(s->gid) < 0 || setuid(s->uid) < 0))
        goto fail;
    if (chdir(s->workdir) < 0) {
        e = errno;
        task_say("shoal: cannot enter the working directory %s: %s\n",
                 s->workdir, task_strerror(e));
        errno = e;
        goto fail;
    }
    if (redirect_output(ts) < 0)
        goto fail;
    sigprocmask(SIG_SETMASK, &none, NULL);
    exec_on_path(ts->argv, ts->envp, env_path(ts->envp));
    e = errno;
    task_say("shoal: cannot run %s: %s\n", ts->argv[0], task_strerror(e));
    errno = e;
fail:
    e = errno;
    if (write(ts->errfd, &e, sizeof(e)) < 0) {
        /* nothing more to tell */
    }
    _exit(127);
}

/* Whether the file PATH starts with "0" (a sysctl); false when it cannot
 * be read. */
static bool file_says_zero(const char *path)
{
    char c = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, &c, 1) : -1;
    if (fd >= 0)
        close(fd);
    return n == 1 && c == '0';
}

/* Whether no cgroup v2 the job's tasks join has memory.oom.group set, on
 * it or on a cgroup above it: the OOM killer then kills every process of
 * that group and every process sharing a victim's memory, a vfork child's
 * shim included. cgroup v1 has no such setting. Walks up from the job's
 * cgroup while the file exists (every cgroup below the root has it where
 * the memory controller is on). */
static bool no_oom_group(const struct shim *s)
{
    const json_t *procs = json_object_get(s->launch, "cgroup_procs");
    if (!json_is_array(procs))
        return false;
    size_t i;
    const json_t *v;
    json_array_foreach (procs, i, v) {
        const char *path = json_string_value(v);
        struct statfs fs;
        if (!path || statfs(path, &fs) < 0)
            return false;
        if (fs.f_type != CGROUP2_SUPER_MAGIC)
            continue;
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
            return false;
        for (char *slash = strrchr(dir, '/'); slash && slash > dir;
             slash = strrchr(dir, '/')) {
            *slash = '\0';
            char file[PATH_MAX + 32];
            snprintf(file, sizeof(file), "%s/memory.oom.group", dir);
            char c = 0;
            int fd = open(file, O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                if (errno == ENOENT)
                    break; /* the root cgroup, or no memory controller */
                return false;
            }
            ssize_t n = read(fd, &c, 1);
            close(fd);
            if (n != 1 || c != '0')
                return false;
        }
    }
    return true;
}

/* A task may start in the shim's memory (CLONE_VM | CLONE_VFORK) only
 * where what it costs is bounded. While the shim waits for the task's
 * exec it cannot pass a stop on, so:
 * - only the run's first task: no task of the run is running yet, whose
 *   checkpointing SIGTERM would wait;
 * - no --output or --error to open before exec (a FIFO there holds the
 *   task; sec-009 wants the cancel's SIGTERM to reach it at once);
 * - the task in the job's cgroup: one held before exec anyway (a chdir
 *   or an exec on a hung mount, a SIGSTOP from the job's user) still gets
 *   the agent's SIGKILL at the end of the kill grace through the cgroup,
 *   where with fork the SIGTERM would have ended it at once;
 * - not in an image (crun's start stays as it was).
 * And where sharing the root shim's memory is safe:
 * - fs.suid_dumpable 0: after its setuid the task's memory (the shim's)
 *   is not dumpable, so the job's user can neither trace it nor reach it
 *   through /proc until the exec;
 * - a vfork child is never the OOM killer's victim (a CLONE_VM child
 *   without CLONE_VFORK is, and the kernel kills every process sharing a
 *   victim's memory: bench/HISTORY.md, round 6), except through
 *   vm.oom_kill_allocating_task or a cgroup v2 memory.oom.group, which
 *   must be off. */
/* A sanitizer build starts every task with fork: AddressSanitizer keeps
 * the poisoning of a function's stack redzones in shadow memory, which a
 * task that execs in the middle of task_main's callees would leave behind
 * in the shim's (it handles vfork() itself, not a clone on a stack of our
 * own). */
#if defined(__SANITIZE_ADDRESS__)
#define SHIM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHIM_SANITIZED 1
#endif
#endif
#ifndef SHIM_SANITIZED
#define SHIM_SANITIZED 0
#endif

static bool task_may_share(const struct shim *s, int t)
{
    return !SHIM_SANITIZED && t == 0 && s->attach && !s->ctr &&
           !json_object_get(s->launch, "stdout_path") &&
           !json_object_get(s->launch, "stderr_path") &&
           file_says_zero("/proc/sys/fs/suid_dumpable") &&
           file_says_zero("/proc/sys/vm/oom_kill_allocating_task") &&
           no_oom_group(s);
}

static pid_t start_task(struct shim *s, int t, pid_t pgid, int *exec_errno)
{
    char rank[32], local[32], procid[40], localid[40];
    int r = s->node_rank * s->tasks + t;
    snprintf(rank, sizeof(rank), "RANK=%d", r);
    snprintf(local, sizeof(local), "LOCAL_RANK=%d", t);
    /* The same for scripts written for Slurm. */
    snprintf(procid, sizeof(procid), "SLURM_PROCID=%d", r);
    snprintf(localid, sizeof(localid), "SLURM_LOCALID=%d", t);
    s->env[s->nenv] = rank;
    s->env[s->nenv + 1] = local;
    s->env[s->nenv + 2] = procid;
    s->env[s->nenv + 3] = localid;
    s->env[s->nenv + 4] = NULL;
    struct task_start ts = {
        .shim = s,
        .pgid = pgid,
        .argv = s->argv,
        .envp = s->env,
        .stdout_path =
            json_string_value(json_object_get(s->launch, "stdout_path")),
        .stderr_path =
            json_string_value(json_object_get(s->launch, "stderr_path")),
    };
    if (s->ctr) {
        /* In an image the task is crun, its command line says the rest. */
        char why[512];
        struct container_proc proc = {
            .argv = s->ctr_argv,
            .env = s->env,
            .uid = s->uid,
            .gid = s->gid,
            .groups = s->groups,
            .ngroups = s->ngroups,
        };
        ts.argv = shim_ctr_task_argv(s->ctr, t, &proc, why, sizeof(why));
        if (!ts.argv) {
            dprintf(s->err_fd, "shoal: %s\n", why);
            return -1;
        }
    }
    bool share = task_may_share(s, t) && task_stack_map() == 0;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    ts.errfd = p[1];
    /* Every signal blocked across the start: the task starts so
     * (task_main); the shim's handler runs only once the task is in the
     * group (a stop forwarded before would miss it, and the read below
     * would wait for an exec that a task held before it never makes). */
    sigset_t all, old_mask;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old_mask);
    pid_t pid;
    if (share) {
        pid = clone(task_main, task_stack + task_stack_len,
                    CLONE_VM | CLONE_VFORK | SIGCHLD, &ts);
    } else {
        pid = fork();
        if (pid == 0) {
            close(p[0]);
            task_main(&ts);
        }
    }
    /* Both sides set the group, so it is in place whichever runs first. */
    if (pid > 0) {
        setpgid(pid, pgid ? pgid : pid);
        if (pgid == 0)
            task_pgid = pid;
        /* A stop asked before this task existed reaches it too; one asked
         * from here on (the handler runs at the unblock below, or while the
         * read waits for the exec) reaches its group. */
        if (pending_sig)
            kill(pid, pending_sig);
    }
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    close(p[1]);
    *exec_errno = 0;
    ssize_t n;
    do {
        n = pid > 0 ? read(p[0], exec_errno, sizeof(int)) : 0;
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(int))
        *exec_errno = 0;
    else if (*exec_errno == 0)
        *exec_errno = EIO; /* a start that failed always says so */
    close(p[0]);
    return pid;
}

static bool is_task(const pid_t *pids, int n, pid_t pid)
{
    for (int i = 0; i < n; i++) {
        if (pids[i] == pid)
            return true;
    }
    return false;
}

/* A batch job's share on a node other than its first: no task; the run
 * holds its GPUs and cgroup until the agent stops it (the job ended). */
static int hold_until_stopped(struct shim *s)
{
    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SHIM_SIG_TERM);
    sigaddset(&mask, SHIM_SIG_KILL);
    sigprocmask(SIG_BLOCK, &mask, &old);
    while (!pending_sig)
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    write_status(s, 0, 0, NULL);
    return 0;
}

static int run_tasks(struct shim *s)
{
    if (s->tasks == 0)
        return hold_until_stopped(s);
    pid_t pids[SHIM_TASKS_MAX];
    pid_t pgid = 0;
    int started = 0;
    int exec_errno = 0;
    for (int t = 0; t < s->tasks; t++) {
        /* A stop asked meanwhile: the run starts no more tasks (start_task
         * sent it to each one started). */
        if (t > 0 && pending_sig)
            break;
        pids[t] = start_task(s, t, pgid, &exec_errno);
        if (pids[t] < 0)
            break;
        started++;
        if (pgid == 0) {
            pgid = pids[t];
            task_pgid = pgid;
        }
        if (exec_errno)
            break;
    }
    int code = 0, sig = 0;
    bool failed = false;
    for (int left = started; left > 0;) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (!is_task(pids, started, pid))
            continue; /* an s3fs the shim started for a volume's stage */
        left--;
        int c = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
        int g = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        if (!failed && (c != 0 || g != 0)) {
            failed = true;
            code = c;
            sig = g;
            /* One task failed: the run has failed; stop its siblings. */
            if (s->tasks > 1 && pgid > 0)
                kill(-pgid, SIGTERM);
        }
    }
    /* Every task reaped: none runs on the stack any more. */
    task_stack_unmap();
    if (started < s->tasks && !failed) {
        code = 127;
        failed = true;
    }
    char msg[300] = "";
    if (exec_errno)
        snprintf(msg, sizeof(msg), "cannot start %s: %s", s->argv[0],
                 strerror(exec_errno));
    write_status(s, code, sig, msg[0] ? msg : NULL);
    return 0;
}

/* Whatever the agent held open without close-on-exec (a connection to the
 * controller, say) must not reach the job: every descriptor above stderr
 * closes at exec. */
static void cloexec_inherited(void)
{
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
        return;
    DIR *dir = opendir("/proc/self/fd"); /* kernels before 5.11 */
    struct dirent *e;
    while (dir && (e = readdir(dir)) != NULL) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != dirfd(dir))
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    if (dir)
        closedir(dir);
}

int shim_main(const char *run_dir)
{
    /* Exec'd by the agent: whatever it ignored (SIGPIPE, what its own
     * parent ignored) is ignored here too until reset. */
    shim_reset_signals();
    return shim_main_launch(run_dir, NULL, 0);
}

int shim_main_launch(const char *run_dir, char *launch, size_t len)
{
    struct shim s;
    cloexec_inherited();
    memset(&s, 0, sizeof(s));
    s.dir = run_dir;
    s.out_fd = -1;
    s.err_fd = -1;
    s.dirfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* One shim per run: a second one started for this folder (by whatever
     * mistake) leaves it to the first. The lock goes with the shim. */
    if (s.dirfd >= 0 && flock(s.dirfd, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr, "shoal-agent --shim: %s: another shim runs it\n",
                run_dir);
        close(s.dirfd);
        s.dirfd = -1;
    }
    if (s.dirfd < 0) {
        if (launch)
            explicit_bzero(launch, len);
        return 1;
    }
    /* The agent stops a run by signalling its tasks, never the shim. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_forward;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SHIM_SIG_TERM);
    sigaddset(&sa.sa_mask, SHIM_SIG_KILL);
    sa.sa_flags = SA_RESTART;
    sigaction(SHIM_SIG_TERM, &sa, NULL);
    sigaction(SHIM_SIG_KILL, &sa, NULL);
    if (load(&s, launch, len) < 0) {
        write_status(&s, 127, 0, "the run's launch description is unreadable");
        return 1;
    }
    s.err_fd = open_output(&s, "stderr");
    if (resolve_user(&s) > 0) {
        s.out_fd = open_output(&s, "stdout");
        if (s.out_fd < 0 || s.err_fd < 0) {
            fail_start(&s, "cannot open the output files in %s: %s", s.dir,
                       strerror(errno));
        } else if (write_script(&s) > 0 && mount_volumes(&s) > 0 &&
                   prepare_container(&s) > 0) {
            setup_cgroup(&s);
            run_tasks(&s);
        }
    }
    shim_ctr_destroy(s.ctr);
    free(s.ctr_argv);
    if (s.attach)
        cgroup_attach_fini(&s.att);
    cgroup_ctx_destroy(s.cg);
    close(s.dirfd);
    json_decref(s.launch);
    free(s.argv);
    for (int i = s.nbase; s.env && i < s.nenv; i++)
        free(s.env[i]);
    free(s.env);
    return 0;
}
