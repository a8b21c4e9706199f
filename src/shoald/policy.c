/* SPDX-License-Identifier: Apache-2.0 */
/* Permission rules (see policy.h).
 *   cluster admin   everything
 *   user            submits to any project, sees every job, cancels own jobs
 */
#include "shoald/policy.h"

#include <string.h>

int policy_can_submit(struct shoald *d, const struct api_caller *caller,
                      const char *project, struct sh_error *err)
{
    (void)d;
    (void)project;
    if (caller->role != API_USER)
        return sh_errorf(err, SH_EFORBIDDEN, "only users submit jobs");
    return 0;
}

bool policy_can_view(struct shoald *d, const struct api_caller *caller,
                     const struct job *job)
{
    (void)d;
    (void)job;
    return caller->role == API_USER;
}

int policy_can_cancel(struct shoald *d, const struct api_caller *caller,
                      const struct job *job, struct sh_error *err)
{
    (void)d;
    if (caller->role == API_USER &&
        (caller->admin || strcmp(caller->user, job->spec.user) == 0))
        return 0;
    return sh_errorf(err, SH_EFORBIDDEN,
                     "job %llu belongs to %s; you may cancel only your own jobs",
                     (unsigned long long)job->id, job->spec.user);
}
