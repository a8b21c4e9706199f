/* SPDX-License-Identifier: Apache-2.0 */
/* GPU slicing plans: which preset each GPU should have, and where that
 * stands. An admin (or the re-slicing policy) asks for a preset on some
 * GPUs; a GPU with running jobs is re-sliced only after they end, and no
 * new job lands on it meanwhile; its agent then applies the preset (MIG
 * through NVML, or time-slices) and reports the new slices.
 *
 * Plan lifecycle (one per GPU, stored as objects of kind "slice"):
 *
 *   slices_request        no job left on the GPU     agent reports the
 *   ───────────▶ WAITING ───────────────▶ APPLYING ──── preset ────▶ APPLIED
 *                                            │
 *                                            └── agent error ─────▶ FAILED
 *
 * While WAITING or APPLYING the GPU takes no new job. APPLIED and FAILED
 * plans are kept for `shoal slice show` (with their reason).
 */
#ifndef SHOAL_SHOALD_SLICES_H
#define SHOAL_SHOALD_SLICES_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/model/node.h"
#include "shoald/shoald.h"

struct slices;

struct slices *slices_create(struct sh_error *err);
void slices_destroy(struct slices *s);

/* What slicing needs of the scheduling engine's bridge (engine.c), given
 * once by shoald_create so that this module does not call into it (engine.c
 * reads the plans: slices_gpu_blocked, slices_node_work). Unset hooks are
 * skipped. */
struct slices_hooks {
    /* The node's GPUs changed for scheduling (a plan blocks or frees
     * some); the engine reads them again. */
    void (*node_changed)(struct shoald *d, struct node *n);
    /* The node's agent should hear of its new work (a plan). */
    void (*node_touch)(struct shoald *d, const char *node);
    /* Why a pending job waits, from the engine (cluster_job_reason). */
    void (*job_reason)(struct shoald *d, const struct job *job, char *buf,
                       size_t size, int64_t *est);
};
void slices_attach(struct slices *s, const struct slices_hooks *hooks);

/* Replace the plans with the store's. */
int slices_load(struct slices *s, struct store *st, struct sh_error *err);

/* Ask for preset on the GPUs (indexes into the node's GPU list; NULL/0 =
 * all of them) of node, with a reason for the record. Every GPU is checked
 * first (the preset must exist for its model and be valid); then the plans
 * are made. SH_ENOTFOUND / SH_EINVAL with the GPU and the reason. */
int slices_request(struct shoald *d, const char *node, const int *gpus,
                   int ngpus, const char *preset, const char *why,
                   struct sh_error *err);

/* True when GPU index gpu of node must take no new job (a plan waits). */
bool slices_gpu_blocked(const struct shoald *d, const char *node, int gpu);

/* The slicing work for node's agent: [{"gpu", "uuid", "preset"}] for the
 * plans whose GPU is free; those become APPLYING. New reference. */
json_t *slices_node_work(struct shoald *d, const struct node *n);

/* The node reported its GPUs (registration): plans whose GPU now has the
 * preset become APPLIED. */
void slices_node_reported(struct shoald *d, const struct node *n);

/* The agent could not apply a plan: FAILED with its reason. */
void slices_failed(struct shoald *d, const char *node, int gpu,
                   const char *preset, const char *error);

/* Every GPU of every node with its slices and plan, for `shoal slice
 * show`. New reference. */
json_t *slices_view(struct shoald *d);

/* Re-slicing on demand (off unless the controller was started with it).
 * A job the engine says waits for resources, for which no free slice of
 * its profile (or no node with enough free whole GPUs) exists now that it
 * may use (its gpu_type, memory, the unfenced rule), and no plan underway
 * will give one: an idle GPU that no plan touched for reslice_hold_ms is
 * sliced for it (a whole one first, else one of another layout), or for a
 * whole-GPU job an idle sliced one is made whole on a node where that lets
 * the job fit. At most one change per call. Called periodically. */
void slices_reslice_tick(struct shoald *d);

#endif
