/* SPDX-License-Identifier: Apache-2.0 */
/* bench-proc-floor: what starting a process costs on this machine, the
 * floor under every per-job figure of bench/job-path.sh and
 * bench/vs-slurm.sh. Runs /bin/true N times each way and prints, per
 * process started, the wall time and the CPU (user + system of this
 * program and its children):
 *   spawn      posix_spawn + wait (what a launcher at its cheapest pays)
 *   fork_exec  fork, exec in the child, wait (a shell running a command)
 *   shim_model fork; the child forks and execs, waits, exits (a
 *              supervisor per job, as shoal-agent's shim or slurmstepd)
 *
 *   bench-proc-floor [N]    (default 300)
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char *const true_argv[] = {"/bin/true", NULL};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU (ms) used so far by this process and its waited-for children. */
static double cpu_ms(void)
{
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    double us = 0;
    const struct rusage *r[] = {&self, &kids};
    for (int i = 0; i < 2; i++)
        us += (double)(r[i]->ru_utime.tv_sec + r[i]->ru_stime.tv_sec) * 1e6 +
              (double)(r[i]->ru_utime.tv_usec + r[i]->ru_stime.tv_usec);
    return us / 1e3;
}

static int wait_ok(pid_t pid)
{
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int run_spawn(void)
{
    pid_t pid;
    if (posix_spawn(&pid, true_argv[0], NULL, NULL, true_argv, environ))
        return -1;
    return wait_ok(pid);
}

static int run_fork_exec(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        execv(true_argv[0], true_argv);
        _exit(127);
    }
    return wait_ok(pid);
}

static int run_shim_model(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(run_fork_exec() == 0 ? 0 : 1);
    return wait_ok(pid);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 300;
    if (n < 1 || n > 1000000) {
        fprintf(stderr, "usage: bench-proc-floor [N: 1..1000000]\n");
        return 2;
    }
    const struct {
        const char *name;
        int (*run)(void);
    } ways[] = {
        {"spawn", run_spawn},
        {"fork_exec", run_fork_exec},
        {"shim_model", run_shim_model},
    };
    for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
        double c0 = cpu_ms(), t0 = now_ms();
        for (long i = 0; i < n; i++) {
            if (ways[w].run() < 0) {
                fprintf(stderr, "bench-proc-floor: %s of %s failed\n",
                        ways[w].name, true_argv[0]);
                return 1;
            }
        }
        double wall = (now_ms() - t0) / (double)n;
        double cpu = (cpu_ms() - c0) / (double)n;
        printf("proc_floor_%s_ms: wall %.2f cpu %.2f\n", ways[w].name, wall,
               cpu);
    }
    return 0;
}
