/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the body of POST /v1/jobs, read as shoald reads it (jansson,
 * duplicate keys refused) and turned into a job spec by
 * job_spec_from_json() (lib/model/job_json.c), which validates it whole.
 * Property: an accepted spec encodes (job_spec_to_json) to a submission
 * that is accepted again and encodes to the same JSON.
 */
#include <jansson.h>
#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "lib/model/job_json.h"

/* The spec's submission object must decode and encode to itself. */
static void check_round_trip(const struct job_spec *spec)
{
    struct job_spec again;
    struct sh_error err;
    json_t *enc = job_spec_to_json(spec);
    json_t *enc2 = NULL;
    if (!enc)
        return; /* out of memory */
    job_spec_init(&again);
    if (job_spec_from_json(enc, &again, &err) < 0) {
        char *text = json_dumps(enc, JSON_COMPACT);
        fuzz_fail("job_spec_to_json wrote %s, which job_spec_from_json "
                  "refuses: %s",
                  text ? text : "?", err.msg);
    }
    enc2 = job_spec_to_json(&again);
    if (enc2 && !json_equal(enc, enc2)) {
        char *a = json_dumps(enc, JSON_COMPACT);
        char *b = json_dumps(enc2, JSON_COMPACT);
        fuzz_fail("job spec round trip changed %s into %s", a ? a : "?",
                  b ? b : "?");
    }
    json_decref(enc2);
    json_decref(enc);
    job_spec_fini(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    struct job_spec spec;
    struct sh_error err;
    json_t *body =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!body)
        return 0;
    job_spec_init(&spec);
    if (job_spec_from_json(body, &spec, &err) == 0)
        check_round_trip(&spec);
    job_spec_fini(&spec);
    json_decref(body);
    return 0;
}
