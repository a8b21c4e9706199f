/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: parse_duration() (lib/util/parse.c), the DUR of --time and
 * of "time_limit" strings in job submissions ("90s", "2h30m", "1-02:00:00").
 * Properties: an accepted duration is 1 s..PARSE_DURATION_MAX, and what
 * format_duration() writes for it parses back to it, less the unit the
 * format leaves out (seconds past an hour, minutes past a day).
 */
#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "lib/util/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    int64_t secs = 0, again = 0;
    struct sh_error err;
    if (!s)
        return 0;
    if (parse_duration("time", s, &secs, &err) == 0) {
        if (secs <= 0 || secs > PARSE_DURATION_MAX)
            fuzz_fail("parse_duration('%s') = %lld, out of range", s,
                      (long long)secs);
        char buf[32];
        format_duration(secs, buf, sizeof(buf));
        int64_t lost = secs < 3600 ? 1 : secs < 86400 ? 60 : 3600;
        if (parse_duration("time", buf, &again, &err) < 0 || again > secs ||
            secs - again >= lost)
            fuzz_fail("parse_duration('%s') = %lld, formatted '%s', which "
                      "parses back to %lld",
                      s, (long long)secs, buf, (long long)again);
    }
    free(s);
    return 0;
}
