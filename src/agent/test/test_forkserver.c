/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: agent/forkserver.c, the helper that forks a shim per run. The
 * built shoal-agent is started as the server; a run folder with a
 * launch.json runs its command, its shim is watched through the pidfd the
 * server passes, and it writes the run's status; a launch description
 * sent in the request runs with no launch.json; a request the server
 * cannot serve is refused without ending it, and one the socket cannot
 * carry is not sent without ending it; a launch.json that is a link or a
 * FIFO is not read; a task starts with every signal at its default,
 * through the server and from an exec'd shim. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/forkserver.h"

/* The runs folder the server serves, as the agent's <state>/runs. */
static char runs_root[64];

static struct forkserver *start_server(void)
{
    snprintf(runs_root, sizeof(runs_root), "/tmp/shoal-test-fs.XXXXXX");
    cr_assert_not_null(mkdtemp(runs_root));
    struct sh_error err;
    struct forkserver *fs = forkserver_start(SHOAL_AGENT_EXE, runs_root, &err);
    cr_assert_not_null(fs, "%s", err.msg);
    return fs;
}

static void make_run(char *dir, size_t size, const char *argv_json)
{
    static int next_id = 1;
    snprintf(dir, size, "%s/%d.0", runs_root, next_id++);
    cr_assert_eq(mkdir(dir, 0700), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/launch.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"argv\": %s, \"env\": [\"PATH=/usr/bin:/bin\"], "
            "\"tasks\": 1, \"node_rank\": 0}",
            argv_json);
    fclose(f);
}

static char *slurp(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void wait_exit(int pidfd)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 30000), 1, "the shim did not end");
}

static void remove_run(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(forkserver, runs_a_shim_and_passes_its_pidfd)
{
    struct sh_error err;
    struct forkserver *fs = start_server();
    for (int i = 0; i < 3; i++) {
        char dir[128];
        make_run(dir, sizeof(dir), "[\"sh\", \"-c\", \"echo hello; exit 3\"]");
        pid_t pid = 0;
        int pidfd = -1;
        unsigned long long start = 0;
        cr_assert_eq(forkserver_spawn(fs, dir, &pid, &pidfd, &start, &err), 0,
                     "%s", err.msg);
        cr_assert_gt(pid, 0);
        cr_assert_geq(pidfd, 0);
        /* The start time the server read is the shim's. */
        cr_assert_eq(start, forkserver_proc_start(pid));
        cr_assert_neq(start, 0);
        wait_exit(pidfd);
        close(pidfd);
        const char *st = slurp(dir, "status.json");
        cr_assert_not_null(st);
        cr_assert(strstr(st, "\"exit_code\":3") != NULL, "status: %s", st);
        const char *out = slurp(dir, "stdout");
        cr_assert_str_eq(out, "hello\n");
        struct stat sb;
        char log[128];
        snprintf(log, sizeof(log), "%s/shim.log", dir);
        cr_assert_eq(stat(log, &sb), 0);
        cr_assert_eq(sb.st_mode & 0777, 0600);
        remove_run(dir);
    }
    forkserver_stop(fs);
    rmdir(runs_root);
}

/* A second shim for the same run folder exits at once: only one runs a
 * run, whatever started the other. */
Test(forkserver, a_second_shim_for_a_run_exits)
{
    struct sh_error err;
    struct forkserver *fs = start_server();
    char dir[128], argv[300], started[128];
    /* The task says it runs (the shim locked the folder before it). */
    snprintf(started, sizeof(started), "%s/started", runs_root);
    snprintf(argv, sizeof(argv),
             "[\"sh\", \"-c\", \"touch %s; exec sleep 30\"]", started);
    make_run(dir, sizeof(dir), argv);
    pid_t pid = 0, pid2 = 0;
    int pidfd = -1, pidfd2 = -1;
    unsigned long long start = 0;
    cr_assert_eq(forkserver_spawn(fs, dir, &pid, &pidfd, &start, &err), 0, "%s",
                 err.msg);
    struct stat sb;
    for (int i = 0; i < 3000 && stat(started, &sb) < 0; i++)
        usleep(10000);
    cr_assert_eq(stat(started, &sb), 0, "the first shim's task did not start");
    cr_assert_eq(forkserver_spawn(fs, dir, &pid2, &pidfd2, &start, &err), 0,
                 "%s", err.msg);
    wait_exit(pidfd2);
    close(pidfd2);
    const char *log = slurp(dir, "shim.log");
    cr_assert(log && strstr(log, "another shim runs it"), "shim.log: %s",
              log ? log : "(none)");
    /* The first is still running its task. */
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 0), 0);
    kill(pid, SIGUSR2); /* the shim's SIGKILL forward to its task */
    wait_exit(pidfd);
    close(pidfd);
    forkserver_stop(fs);
    remove_run(dir);
    unlink(started);
    rmdir(runs_root);
}

Test(forkserver, a_request_it_cannot_serve_is_refused)
{
    struct sh_error err;
    struct forkserver *fs = start_server();
    pid_t pid = 0;
    int pidfd = -1;
    unsigned long long start = 0;
    /* No such run folder: no shim.log to open, no shim. */
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/999.0", runs_root);
    cr_assert_eq(forkserver_spawn(fs, missing, &pid, &pidfd, &start, &err),
                 FORKSERVER_REFUSED);
    cr_assert(strstr(err.msg, "No such file") != NULL, "%s", err.msg);
    /* Anything but <runs>/<id>.<attempt> is refused, not served. */
    char bad[5][160];
    snprintf(bad[0], sizeof(bad[0]), "/tmp");
    snprintf(bad[1], sizeof(bad[1]), "%s/../1.0", runs_root);
    snprintf(bad[2], sizeof(bad[2]), "%s/1.0/x", runs_root);
    snprintf(bad[3], sizeof(bad[3]), "%s/1", runs_root);
    snprintf(bad[4], sizeof(bad[4]), "%sx/1.0", runs_root);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(forkserver_spawn(fs, bad[i], &pid, &pidfd, &start, &err),
                     FORKSERVER_REFUSED, "%s", bad[i]);
        cr_assert(strstr(err.msg, "Invalid argument") != NULL, "%s: %s", bad[i],
                  err.msg);
    }
    /* The server goes on serving. */
    char dir[128];
    make_run(dir, sizeof(dir), "[\"true\"]");
    cr_assert_eq(forkserver_spawn(fs, dir, &pid, &pidfd, &start, &err), 0, "%s",
                 err.msg);
    wait_exit(pidfd);
    close(pidfd);
    const char *st = slurp(dir, "status.json");
    cr_assert_not_null(st);
    cr_assert(strstr(st, "\"exit_code\":0") != NULL, "status: %s", st);
    remove_run(dir);
    forkserver_stop(fs);
    rmdir(runs_root);
}

/* The description in the request: no launch.json is read or written, and
 * the server serves the next run. One over FORKSERVER_LAUNCH_MAX is
 * refused before it is sent. */
Test(forkserver, a_launch_in_the_request_needs_no_file)
{
    struct sh_error err;
    struct forkserver *fs = start_server();
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/77.1", runs_root);
    cr_assert_eq(mkdir(dir, 0700), 0);
    const char *launch =
        "{\"argv\": [\"sh\", \"-c\", \"echo $SECRET; exit 4\"], "
        "\"env\": [\"PATH=/usr/bin:/bin\", \"SECRET=s3\"], "
        "\"tasks\": 1, \"node_rank\": 0}";
    pid_t pid = 0;
    int pidfd = -1;
    unsigned long long start = 0;
    cr_assert_eq(forkserver_spawn_launch(fs, dir, launch, strlen(launch), &pid,
                                         &pidfd, &start, &err),
                 FORKSERVER_OK, "%s", err.msg);
    wait_exit(pidfd);
    close(pidfd);
    const char *st = slurp(dir, "status.json");
    cr_assert_not_null(st);
    cr_assert(strstr(st, "\"exit_code\":4") != NULL, "status: %s", st);
    cr_assert_str_eq(slurp(dir, "stdout"), "s3\n");
    cr_assert_null(slurp(dir, "launch.json"));

    /* Too long: refused here, nothing sent, the server still serves. */
    size_t big = FORKSERVER_LAUNCH_MAX + 1;
    char *text = malloc(big);
    cr_assert_not_null(text);
    memset(text, ' ', big);
    cr_assert_eq(
        forkserver_spawn_launch(fs, dir, text, big, &pid, &pidfd, &start, &err),
        FORKSERVER_REFUSED);
    free(text);
    remove_run(dir);
    char dir2[128];
    make_run(dir2, sizeof(dir2), "[\"true\"]");
    cr_assert_eq(forkserver_spawn(fs, dir2, &pid, &pidfd, &start, &err), 0,
                 "%s", err.msg);
    wait_exit(pidfd);
    close(pidfd);
    st = slurp(dir2, "status.json");
    cr_assert(st && strstr(st, "\"exit_code\":0") != NULL, "status: %s",
              st ? st : "(none)");
    remove_run(dir2);
    forkserver_stop(fs);
    rmdir(runs_root);
}

/* The descriptors of this process that are sockets, as a bit set. */
static void sockets_open(unsigned char *set, int max)
{
    memset(set, 0, (size_t)max);
    for (int fd = 0; fd < max; fd++) {
        struct stat sb;
        if (fstat(fd, &sb) == 0 && S_ISSOCK(sb.st_mode))
            set[fd] = 1;
    }
}

/* A request over the socket's send buffer (as with a small
 * net.core.wmem_max) fails with EMSGSIZE: NOT_SENT, no shim, and the
 * server serves the next request. */
Test(forkserver, a_request_over_the_send_buffer_keeps_the_server)
{
    struct sh_error err;
    unsigned char before[1024], after[1024];
    sockets_open(before, 1024);
    struct forkserver *fs = start_server();
    sockets_open(after, 1024);
    int sock = -1;
    for (int fd = 0; fd < 1024; fd++) {
        if (after[fd] && !before[fd])
            sock = fd;
    }
    cr_assert_geq(sock, 0, "the server's socket not found");
    int small = 4096;
    cr_assert_eq(setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)),
                 0);
    char dir[128];
    snprintf(dir, sizeof(dir), "%s/78.1", runs_root);
    cr_assert_eq(mkdir(dir, 0700), 0);
    /* A valid description padded with spaces to the longest sent. */
    size_t len = FORKSERVER_LAUNCH_MAX;
    char *text = malloc(len);
    cr_assert_not_null(text);
    memset(text, ' ', len);
    const char *launch = "{\"argv\": [\"true\"], \"env\": [], \"tasks\": 1}";
    memcpy(text, launch, strlen(launch));
    pid_t pid = 0;
    int pidfd = -1;
    unsigned long long start = 0;
    cr_assert_eq(
        forkserver_spawn_launch(fs, dir, text, len, &pid, &pidfd, &start, &err),
        FORKSERVER_NOT_SENT, "%s", err.msg);
    cr_assert(strstr(err.msg, "too long") != NULL, "%s", err.msg);
    free(text);
    cr_assert_null(slurp(dir, "shim.log"), "a shim was started");
    remove_run(dir);
    /* The run folder alone fits: served. */
    make_run(dir, sizeof(dir), "[\"true\"]");
    cr_assert_eq(forkserver_spawn(fs, dir, &pid, &pidfd, &start, &err), 0, "%s",
                 err.msg);
    wait_exit(pidfd);
    close(pidfd);
    const char *st = slurp(dir, "status.json");
    cr_assert(st && strstr(st, "\"exit_code\":0") != NULL, "status: %s",
              st ? st : "(none)");
    remove_run(dir);
    forkserver_stop(fs);
    rmdir(runs_root);
}

/* The shim reads launch.json under its run folder's descriptor: a link
 * (to a description that would run) is not followed and a FIFO does not
 * block it; neither runs anything. */
Test(forkserver, a_launch_json_link_or_fifo_is_not_read)
{
    struct sh_error err;
    struct forkserver *fs = start_server();
    char real[128], ran[128];
    snprintf(real, sizeof(real), "%s/real-launch.json", runs_root);
    snprintf(ran, sizeof(ran), "%s/ran", runs_root);
    FILE *f = fopen(real, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"argv\": [\"touch\", \"%s\"], \"env\": "
            "[\"PATH=/usr/bin:/bin\"], \"tasks\": 1, \"node_rank\": 0}",
            ran);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        char dir[128], path[192];
        snprintf(dir, sizeof(dir), "%s/%d.0", runs_root, 80 + i);
        cr_assert_eq(mkdir(dir, 0700), 0);
        snprintf(path, sizeof(path), "%s/launch.json", dir);
        if (i == 0)
            cr_assert_eq(symlink(real, path), 0);
        else
            cr_assert_eq(mkfifo(path, 0600), 0);
        pid_t pid = 0;
        int pidfd = -1;
        unsigned long long start = 0;
        cr_assert_eq(forkserver_spawn(fs, dir, &pid, &pidfd, &start, &err), 0,
                     "%s", err.msg);
        wait_exit(pidfd); /* a FIFO opened for reading would block here */
        close(pidfd);
        const char *log = slurp(dir, "shim.log");
        cr_assert(log && strstr(log, "launch.json"), "shim.log: %s",
                  log ? log : "(none)");
        struct stat sb;
        cr_assert_neq(stat(ran, &sb), 0, "the linked description ran");
        remove_run(dir);
    }
    unlink(real);
    forkserver_stop(fs);
    rmdir(runs_root);
}

/* Runs LAUNCH (JSON text) in a new run folder of the server and waits
 * for its shim; the folder's path in DIR. */
static void run_launch(struct forkserver *fs, char *dir, size_t size,
                       const char *launch)
{
    static int next_id = 100;
    struct sh_error err;
    snprintf(dir, size, "%s/%d.0", runs_root, next_id++);
    cr_assert_eq(mkdir(dir, 0700), 0);
    pid_t pid = 0;
    int pidfd = -1;
    unsigned long long start = 0;
    cr_assert_eq(forkserver_spawn_launch(fs, dir, launch, strlen(launch), &pid,
                                         &pidfd, &start, &err),
                 FORKSERVER_OK, "%s", err.msg);
    wait_exit(pidfd);
    close(pidfd);
}

/* The task's ignored and caught signals from its /proc/self/status (the
 * run's stdout), as masks; the standard signals (1 to 31) only for the
 * ignored ones: glibc keeps its own two real-time signals from being
 * reset, whatever ignored them. */
static void task_signals(const char *dir, unsigned long long *ign,
                         unsigned long long *cgt)
{
    const char *out = slurp(dir, "stdout");
    cr_assert_not_null(out);
    const char *i = strstr(out, "SigIgn:"), *c = strstr(out, "SigCgt:");
    cr_assert(i && c, "stdout: %s", out);
    *ign = strtoull(i + 7, NULL, 16) & 0x7fffffffULL;
    *cgt = strtoull(c + 7, NULL, 16);
}

/* A task starts with every signal at its default, though the agent that
 * started the server (and an exec'd shim) ignored some: the tasks reset
 * only what the shim itself changed. */
Test(forkserver, a_task_starts_with_every_signal_at_its_default)
{
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_quit, old_usr1;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGQUIT, &ign, &old_quit);
    sigaction(SIGUSR1, &ign, &old_usr1);
    struct forkserver *fs = start_server();
    const char *launch =
        "{\"argv\": [\"cat\", \"/proc/self/status\"], "
        "\"env\": [\"PATH=/usr/bin:/bin\"], \"tasks\": 1, \"node_rank\": 0}";
    char dir[128];
    unsigned long long ignored, caught;
    run_launch(fs, dir, sizeof(dir), launch);
    task_signals(dir, &ignored, &caught);
    cr_assert_eq(ignored, 0, "ignored: %llx", ignored);
    cr_assert_eq(caught, 0, "caught: %llx", caught);
    remove_run(dir);
    forkserver_stop(fs);

    /* `shoal-agent --shim RUN_DIR`, exec'd as the agent does without a
     * server, with the same signals ignored. */
    make_run(dir, sizeof(dir), "[\"cat\", \"/proc/self/status\"]");
    pid_t pid = fork();
    if (pid == 0) {
        execl(SHOAL_AGENT_EXE, SHOAL_AGENT_EXE, "--shim", dir, (char *)NULL);
        _exit(127);
    }
    int status = -1;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    task_signals(dir, &ignored, &caught);
    cr_assert_eq(ignored, 0, "ignored: %llx", ignored);
    cr_assert_eq(caught, 0, "caught: %llx", caught);
    remove_run(dir);
    rmdir(runs_root);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGUSR1, &old_usr1, NULL);
}
