/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: parse_size() (lib/util/parse.c), the SIZE of --mem, --gpu-mem
 * and of "mem"/"gpu_mem" strings in job submissions ("16G", "512MiB").
 * Properties: an accepted size is 1 byte..PARSE_SIZE_MAX, and a size that
 * format_size() writes without a fraction parses back to itself.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "lib/util/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    uint64_t bytes = 0, again = 0;
    struct sh_error err;
    if (!s)
        return 0;
    if (parse_size("size", s, &bytes, &err) == 0) {
        if (bytes == 0 || bytes > PARSE_SIZE_MAX)
            fuzz_fail("parse_size('%s') = %llu, out of range", s,
                      (unsigned long long)bytes);
        char buf[32];
        format_size(bytes, buf, sizeof(buf));
        if (!strchr(buf, '.') &&
            (parse_size("size", buf, &again, &err) < 0 || again != bytes))
            fuzz_fail("parse_size('%s') = %llu, formatted '%s', which does "
                      "not parse back",
                      s, (unsigned long long)bytes, buf);
    }
    free(s);
    return 0;
}
