/* SPDX-License-Identifier: Apache-2.0 */
/* The engine's job id -> index map (interned names are lib/util/strtab.c).
 * Open addressing with a power-of-two table and backward-shift deletion.
 */
#include "sched/sched_int.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return (uint32_t)x;
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
