/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the `#SHOAL` directive lines of a batch script, read by
 * `shoal submit SCRIPT` (cmd/cmd_submit.c, cmd_submit_directives): word
 * splitting with quotes and backslashes, then the options of shoal submit
 * with their SIZE, DUR and integer parsers, into the submission object.
 */
#include <jansson.h>
#include <stdlib.h>

#include "cmd/cmd.h"
#include "fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    json_t *job = json_object();
    struct sh_error err;
    if (text && job)
        cmd_submit_directives(job, "job.sh", text, &err);
    json_decref(job);
    free(text);
    return 0;
}
