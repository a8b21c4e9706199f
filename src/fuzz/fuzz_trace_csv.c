/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the simulator's trace reader, sim_trace_parse() (sim/
 * sim_trace.c), on CSV in any of its formats (the header chooses: Shoal's
 * contract, Philly, Tiresias or Pollux).
 * Property: an accepted trace, written in the contract format by
 * sim_trace_write() (what `shoal sim convert` does), reads back to the same
 * jobs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "sim/sim.h"

static const char *name_of(const struct sim_trace *t, int64_t idx)
{
    return idx < 0 ? "" : t->names.names[idx];
}

static bool same_job(const struct sim_trace *a, const struct sim_job *x,
                     const struct sim_trace *b, const struct sim_job *y)
{
    return x->id == y->id && x->submit_ms == y->submit_ms &&
           x->duration_ms == y->duration_ms && x->limit_ms == y->limit_ms &&
           x->gpus == y->gpus && x->nodes == y->nodes && x->prio == y->prio &&
           strcmp(name_of(a, x->user), name_of(b, y->user)) == 0 &&
           strcmp(name_of(a, x->project), name_of(b, y->project)) == 0 &&
           strcmp(name_of(a, x->gpu_type), name_of(b, y->gpu_type)) == 0 &&
           strcmp(name_of(a, x->slice), name_of(b, y->slice)) == 0;
}

static void check_round_trip(const struct sim_trace *t)
{
    char *text = NULL;
    size_t len = 0;
    struct sim_trace again;
    struct sh_error err;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    int wrc = sim_trace_write(f, t);
    if (fclose(f) != 0 || wrc < 0) {
        free(text);
        return; /* out of memory */
    }
    if (sim_trace_parse(text, "written", SIM_FORMAT_SHOAL, &again, &err) < 0)
        fuzz_fail("sim_trace_write wrote a trace its reader refuses: %s\n%s",
                  err.msg, text);
    if (again.njobs != t->njobs)
        fuzz_fail("%zu jobs written, %zu read back", t->njobs, again.njobs);
    for (size_t i = 0; i < t->njobs; i++) {
        if (!same_job(t, &t->jobs[i], &again, &again.jobs[i]))
            fuzz_fail("job %zu (id %llu) changed in the round trip:\n%s", i,
                      (unsigned long long)t->jobs[i].id, text);
    }
    sim_trace_fini(&again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    struct sim_trace t;
    struct sh_error err;
    if (!text)
        return 0;
    if (sim_trace_parse(text, "fuzz.csv", SIM_FORMAT_AUTO, &t, &err) == 0)
        check_round_trip(&t);
    sim_trace_fini(&t);
    free(text);
    return 0;
}
