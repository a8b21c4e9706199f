/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the bodies of POST /v1/partitions and POST /v1/qos, read as
 * shoald reads them (jansson, duplicate keys refused) and checked by
 * partition_from_request() and qos_from_request() (lib/model/partition.c).
 * Properties: an accepted request gives a record that the store's check
 * accepts again (what is kept loads again), with the request's name; and
 * a partition's node selector, ANDed with a job's constraint, either fits
 * or is refused, never overflows.
 */
#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "lib/model/partition.h"

static void check(const json_t *body, const json_t *rec, bool partition)
{
    struct sh_error err;
    int rc = partition ? partition_record_check(rec, &err)
                       : qos_record_check(rec, &err);
    if (rc < 0) {
        char *text = json_dumps(rec, JSON_COMPACT);
        fuzz_fail("%s record %s does not load again: %s",
                  partition ? "partition" : "qos", text ? text : "?", err.msg);
    }
    const char *want = json_string_value(json_object_get(body, "name"));
    const char *got = json_string_value(json_object_get(rec, "name"));
    if (!want || !got || strcmp(want, got) != 0)
        fuzz_fail("record name differs from the request's");
    if (partition) {
        char buf[512];
        const char *sel = partition_selector(rec);
        if (partition_and_constraint("a100&ib|h100", sel, buf, sizeof(buf)) ==
                0 &&
            strlen(buf) >= sizeof(buf))
            fuzz_fail("constraint overflowed its buffer");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    struct sh_error err;
    json_t *body =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!body)
        return 0;
    json_t *rec = partition_from_request(body, 1, &err);
    if (rec)
        check(body, rec, true);
    json_decref(rec);
    rec = qos_from_request(body, 1, &err);
    if (rec)
        check(body, rec, false);
    json_decref(rec);
    json_decref(body);
    return 0;
}
