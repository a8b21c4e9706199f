/* SPDX-License-Identifier: Apache-2.0 */
/* A whole controller state for unit tests, without HTTP: a struct shoald
 * over a fresh SQLite store in a temporary folder, loaded as main.c loads
 * it (tables, cluster, commit), and torn down again. Used by the tests
 * that drive the domain modules through their seams (test_nodes,
 * test_lifecycle). */
#ifndef SHOAL_SHOALD_TEST_STATE_FIXTURE_H
#define SHOAL_SHOALD_TEST_STATE_FIXTURE_H

#include <stddef.h>

#include "shoald/shoald.h"

/* Fill d (zeroed first) and make dir (a buffer of dir_size) a new
 * temporary folder named after prefix; fails the test on any error. */
void state_fixture_open(struct shoald *d, char *dir, size_t dir_size,
                        const char *prefix);

/* Free everything state_fixture_open made and remove dir. */
void state_fixture_close(struct shoald *d, const char *dir);

#endif
