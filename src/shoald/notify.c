/* SPDX-License-Identifier: Apache-2.0 */
/* The admin's notification command for --mail-type (notify.h). */
#include "shoald/notify.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/model/job_mail.h"
#include "lib/util/log.h"

int notify_check_submit(const char *program, const struct job_spec *spec,
                        struct sh_error *err)
{
    if (!spec->mail_events && !spec->mail_user)
        return 0;
    if (!program)
        return sh_errorf(err, SH_EINVAL,
                         "mail: this cluster sends no notifications (an "
                         "admin configures a command with shoald "
                         "--mail-program); remove --mail-type/--mail-user "
                         "and follow the job with shoal logs -f");
    return 0;
}

/* The event a change makes, or 0. */
static enum job_mail_event event_of(const struct job *job, enum job_state from)
{
    enum job_state to = job->state;
    if (to == from)
        return 0;
    if (to == JOB_RUNNING)
        return JOB_MAIL_BEGIN;
    if (to == JOB_PENDING)
        return JOB_MAIL_REQUEUE;
    if (!job_state_is_terminal(to))
        return 0;
    if (to == JOB_CANCELLED && job->reason &&
        strncmp(job->reason, "dependency:", 11) == 0 &&
        (job->spec.mail_events & JOB_MAIL_INVALID_DEPEND))
        return JOB_MAIL_INVALID_DEPEND;
    bool failed = to == JOB_FAILED || to == JOB_TIMEOUT || to == JOB_NODE_FAIL;
    if (failed && (job->spec.mail_events & JOB_MAIL_FAIL))
        return JOB_MAIL_FAIL;
    return JOB_MAIL_END;
}

/* Start argv detached: a child that starts the command and exits at once
 * (reaped here), so no zombie is left for the controller. */
static void spawn_detached(char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0) {
        sh_log(LOG_WARNING, "notify", "cannot start %s: fork failed", argv[0]);
        return;
    }
    if (pid == 0) {
        if (fork() == 0) {
            setsid();
            int fd = open("/dev/null", O_RDWR);
            if (fd >= 0) {
                dup2(fd, 0);
                dup2(fd, 1);
                dup2(fd, 2);
            }
            for (int i = 3; i < 1024; i++)
                close(i);
            execv(argv[0], argv);
            _exit(127);
        }
        _exit(0);
    }
    while (waitpid(pid, NULL, 0) < 0)
        ;
}

void notify_transition(const char *program, const struct job *job,
                       enum job_state from)
{
    if (!program || !job->spec.mail_events)
        return;
    enum job_mail_event e = event_of(job, from);
    if (!e || !(job->spec.mail_events & e))
        return;
    char id[32];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)job->id);
    char *const argv[] = {(char *)program,
                          id,
                          job->spec.user,
                          (char *)job_mail_event_name(e),
                          job->spec.mail_user ? job->spec.mail_user
                                              : job->spec.user,
                          (char *)job_state_name(job->state),
                          NULL};
    spawn_detached(argv);
}
