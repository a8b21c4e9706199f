/* SPDX-License-Identifier: Apache-2.0 */
/* Small containers for the engine: interned names (string -> dense id) and
 * the job id -> index map. Open addressing with power-of-two tables; no
 * per-entry allocations besides the interned strings. Not general purpose:
 * names are never removed, ids are 64-bit integers.
 */
#include "sched/sched_int.h"

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

static uint32_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return (uint32_t)x;
}

uint32_t strtab_find(const struct sched_strtab *t, const char *name)
{
    if (t->nslots == 0)
        return SCHED_NONE;
    uint32_t mask = t->nslots - 1;
    for (uint32_t i = hash_str(name) & mask;; i = (i + 1) & mask) {
        uint32_t id = t->slots[i];
        if (id == SCHED_NONE)
            return SCHED_NONE;
        if (strcmp(t->names[id], name) == 0)
            return id;
    }
}

static int strtab_rehash(struct sched_strtab *t, uint32_t nslots)
{
    uint32_t *slots = malloc(sizeof(*slots) * nslots);
    if (!slots)
        return -1;
    memset(slots, 0xff, sizeof(*slots) * nslots);
    for (uint32_t id = 0; id < t->n; id++) {
        uint32_t i = hash_str(t->names[id]) & (nslots - 1);
        while (slots[i] != SCHED_NONE)
            i = (i + 1) & (nslots - 1);
        slots[i] = id;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

int strtab_intern(struct sched_strtab *t, const char *name, uint32_t *id)
{
    uint32_t found = strtab_find(t, name);
    if (found != SCHED_NONE) {
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
    while (t->slots[i] != SCHED_NONE)
        i = (i + 1) & (t->nslots - 1);
    t->slots[i] = t->n;
    *id = t->n++;
    return 0;
}

void strtab_fini(struct sched_strtab *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

uint32_t idmap_get(const struct sched_idmap *m, uint64_t key)
{
    if (m->cap == 0)
        return SCHED_NONE;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = hash_u64(key) & mask;; i = (i + 1) & mask) {
        if (m->vals[i] == SCHED_NONE)
            return SCHED_NONE;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

static int idmap_rehash(struct sched_idmap *m, uint32_t cap)
{
    uint64_t *keys = malloc(sizeof(*keys) * cap);
    uint32_t *vals = malloc(sizeof(*vals) * cap);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    memset(vals, 0xff, sizeof(*vals) * cap);
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->vals[i] == SCHED_NONE)
            continue;
        uint32_t k = hash_u64(m->keys[i]) & (cap - 1);
        while (vals[k] != SCHED_NONE)
            k = (k + 1) & (cap - 1);
        keys[k] = m->keys[i];
        vals[k] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int idmap_put(struct sched_idmap *m, uint64_t key, uint32_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        if (idmap_rehash(m, m->cap ? m->cap * 2 : 1024) < 0)
            return -1;
    }
    uint32_t mask = m->cap - 1;
    uint32_t i = hash_u64(key) & mask;
    while (m->vals[i] != SCHED_NONE) {
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 0;
}

void idmap_del(struct sched_idmap *m, uint64_t key)
{
    if (m->cap == 0)
        return;
    uint32_t mask = m->cap - 1;
    uint32_t i = hash_u64(key) & mask;
    while (m->vals[i] != SCHED_NONE && m->keys[i] != key)
        i = (i + 1) & mask;
    if (m->vals[i] == SCHED_NONE)
        return;
    /* Backward-shift: move later entries of the run into the hole when
     * their home slot does not lie cyclically in (hole, their slot]. */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & mask; m->vals[j] != SCHED_NONE;
         j = (j + 1) & mask) {
        uint32_t home = hash_u64(m->keys[j]) & mask;
        bool stays = (hole < j) ? (home > hole && home <= j)
                                : (home > hole || home <= j);
        if (stays)
            continue;
        m->keys[hole] = m->keys[j];
        m->vals[hole] = m->vals[j];
        hole = j;
    }
    m->vals[hole] = SCHED_NONE;
    m->n--;
}

void idmap_fini(struct sched_idmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}
