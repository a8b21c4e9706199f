/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's side of GPU slicing: applying the presets the controller
 * asks for (MIG through NVML, or time-slices), remembering them in
 * <state>/layouts.json (time-slices leave no trace in the driver, and the
 * preset name is Shoal's), and telling the controller: the new slices
 * through a registration, failures through the next heartbeat. */
#ifndef SHOAL_AGENT_SLICING_H
#define SHOAL_AGENT_SLICING_H

#include <jansson.h>

#include "agent/agent.h"

/* After GPU discovery: re-apply remembered time-slices and set each GPU's
 * preset name. */
void slicing_restore(struct agent *a);

/* Apply the work's "slices" ([{"gpu", "uuid", "preset"}]). GPUs a run still
 * uses are left for a later call. Returns true when a GPU changed (the
 * caller then re-registers to report it). */
bool slicing_apply(struct agent *a, const json_t *slices);

/* Failures not yet reported: [{"gpu", "preset", "error"}]; taking them
 * empties the list (new reference). */
json_t *slicing_take_errors(struct agent *a);

/* Apply everything in a work answer: runs and slices. */
void work_apply(struct agent *a, const json_t *work);

#endif
