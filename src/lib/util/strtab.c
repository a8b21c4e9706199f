/* SPDX-License-Identifier: Apache-2.0 */
/* Interned names (see strtab.h). */
#include "lib/util/strtab.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

uint32_t strtab_find(const struct strtab *t, const char *name)
{
    if (t->nslots == 0)
        return STRTAB_NONE;
    uint32_t mask = t->nslots - 1;
    for (uint32_t i = hash_str(name) & mask;; i = (i + 1) & mask) {
        uint32_t id = t->slots[i];
        if (id == STRTAB_NONE)
            return STRTAB_NONE;
        if (strcmp(t->names[id], name) == 0)
            return id;
    }
}

static int strtab_rehash(struct strtab *t, uint32_t nslots)
{
    uint32_t *slots = malloc(sizeof(*slots) * nslots);
    if (!slots)
        return -1;
    memset(slots, 0xff, sizeof(*slots) * nslots);
    for (uint32_t id = 0; id < t->n; id++) {
        uint32_t i = hash_str(t->names[id]) & (nslots - 1);
        while (slots[i] != STRTAB_NONE)
            i = (i + 1) & (nslots - 1);
        slots[i] = id;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

int strtab_intern(struct strtab *t, const char *name, uint32_t *id)
{
    uint32_t found = strtab_find(t, name);
    if (found != STRTAB_NONE) {
        *id = found;
        return 0;
    }
    if ((t->n + 1) * 2 > t->nslots) {
        if (strtab_rehash(t, t->nslots ? t->nslots * 2 : 16) < 0)
            return -1;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        char **names = realloc(t->names, sizeof(*names) * cap);
        if (!names)
            return -1;
        t->names = names;
        t->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -1;
    t->names[t->n] = copy;
    uint32_t i = hash_str(name) & (t->nslots - 1);
    while (t->slots[i] != STRTAB_NONE)
        i = (i + 1) & (t->nslots - 1);
    t->slots[i] = t->n;
    *id = t->n++;
    return 0;
}

void strtab_fini(struct strtab *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
