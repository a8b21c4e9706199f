/* SPDX-License-Identifier: Apache-2.0 */
/* The controller context's own helpers (shoald.h): the open batch, the
 * clock, and asking for a scheduling pass. Every module calls these, so
 * they call nothing in src/shoald but the group commit: the bottom layer. */
#include "shoald/shoald.h"

#include "lib/util/clock.h"
#include "shoald/commit.h"

struct store_batch *shoald_batch(struct shoald *d)
{
    return commit_batch(d->commit);
}

int64_t shoald_now_ms(const struct shoald *d)
{
    (void)d;
    return clock_wall_ms();
}

void shoald_schedule_soon(struct shoald *d)
{
    if (d->cluster)
        d->schedule_pending = true;
}
