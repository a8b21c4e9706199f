/* SPDX-License-Identifier: Apache-2.0 */
/* Interned names: a string maps to a dense id (0, 1, 2, ...) for the life of
 * the table. Open addressing in a power-of-two table, one allocation per
 * name. For the scheduling engine and the simulator, which turn project,
 * user, node and model names into small integers. Names are never removed. */
#ifndef SHOAL_UTIL_STRTAB_H
#define SHOAL_UTIL_STRTAB_H

#include <stdint.h>

#define STRTAB_NONE UINT32_MAX

/* Caller-allocated; zero it to initialise. */
struct strtab {
    char **names; /* id -> name; names[id] owned by the table */
    uint32_t n;
    uint32_t cap;
    uint32_t *slots; /* STRTAB_NONE = empty */
    uint32_t nslots; /* power of two */
};

/* The id of name, adding it when new (name is copied). -1 on out of
 * memory, the table unchanged. */
int strtab_intern(struct strtab *t, const char *name, uint32_t *id);

/* The id of name, or STRTAB_NONE. */
uint32_t strtab_find(const struct strtab *t, const char *name);

/* Free everything; the table is zeroed and may be used again. */
void strtab_fini(struct strtab *t);

#endif
