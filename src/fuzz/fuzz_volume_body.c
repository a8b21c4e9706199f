/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the body of POST /v1/volumes, read as shoald reads it
 * (jansson, duplicate keys refused) and checked by volume_from_request()
 * (lib/model/volume.c). Properties: an accepted request gives a record
 * that volume_record_check() accepts (what the store keeps loads again),
 * with the request's name, kind and read-only flag; and a host path it
 * accepts is absolute and free of "..".
 */
#include <jansson.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "lib/model/volume.h"

static void check_record(const json_t *body, const json_t *rec)
{
    struct sh_error err;
    if (volume_record_check(rec, &err) < 0) {
        char *text = json_dumps(rec, JSON_COMPACT);
        fuzz_fail("record %s does not load again: %s", text ? text : "?",
                  err.msg);
    }
    const char *name = json_string_value(json_object_get(body, "name"));
    if (!name || strcmp(name, volume_name(rec)) != 0)
        fuzz_fail("record name differs from the request's");
    if (volume_readonly(rec) != json_is_true(json_object_get(body, "readonly")))
        fuzz_fail("volume %s: read-only flag changed", name);
    const char *path = json_string_value(
        json_object_get(json_object_get(rec, "host"), "path"));
    if (!path || path[0] != '/')
        fuzz_fail("volume %s: host path not absolute", name);
    for (const char *p = strstr(path, "/.."); p; p = strstr(p + 1, "/.."))
        if (p[3] == '/' || p[3] == '\0')
            fuzz_fail("volume %s: host path '%s' has '..'", name, path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    struct sh_error err;
    json_t *body =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!body)
        return 0;
    json_t *rec = volume_from_request(body, "fuzz", 1, &err);
    if (rec)
        check_record(body, rec);
    json_decref(rec);
    json_decref(body);
    return 0;
}
