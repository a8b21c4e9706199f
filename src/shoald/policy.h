/* SPDX-License-Identifier: Apache-2.0 */
/* Who may do what: every permission check of the API is made here, in one
 * place, so the rules can be read together and tested together. */
#ifndef SHOAL_SHOALD_POLICY_H
#define SHOAL_SHOALD_POLICY_H

#include <stdbool.h>

#include "lib/model/job.h"
#include "shoald/api.h"
#include "shoald/shoald.h"

/* May caller submit to project? SH_EFORBIDDEN / SH_ENOTFOUND otherwise. */
int policy_can_submit(struct shoald *d, const struct api_caller *caller,
                      const char *project, struct sh_error *err);

/* May caller see this job (show, list, logs)? */
bool policy_can_view(struct shoald *d, const struct api_caller *caller,
                     const struct job *job);

/* May caller cancel this job? */
int policy_can_cancel(struct shoald *d, const struct api_caller *caller,
                      const struct job *job, struct sh_error *err);

#endif
