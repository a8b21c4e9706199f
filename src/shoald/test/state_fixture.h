/* SPDX-License-Identifier: Apache-2.0 */
/* A whole controller state for unit tests, without HTTP: a struct shoald
 * over a fresh SQLite store in a temporary folder, loaded as main.c loads
 * it (tables, cluster, commit), and torn down again. Used by the tests
 * that drive the domain modules through their seams (test_nodes,
 * test_lifecycle). */
#ifndef SHOAL_SHOALD_TEST_STATE_FIXTURE_H
#define SHOAL_SHOALD_TEST_STATE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "shoald/shoald.h"

/* Fill d (zeroed first) and make dir (a buffer of dir_size) a new
 * temporary folder named after prefix; fails the test on any error. */
void state_fixture_open(struct shoald *d, char *dir, size_t dir_size,
                        const char *prefix);

/* Register node name (8 CPUs, 1 GiB) with ngpus GPUs of model (memory
 * gpu_mem bytes each, UUIDs "GPU-<uuid_tag>-<i>") through the join path,
 * as an agent would; fails the test on any error. */
void state_fixture_add_node(struct shoald *d, const char *name, int ngpus,
                            const char *model, int64_t gpu_mem,
                            const char *uuid_tag);

/* Free everything state_fixture_open made and remove dir. */
void state_fixture_close(struct shoald *d, const char *dir);

#endif
