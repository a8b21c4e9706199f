/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: sh_errorf and sh_error_prefix fill the message, and a message
 * longer than the buffer is cut before a character that does not fit
 * whole, so text that was valid UTF-8 stays valid (the API puts messages
 * into JSON). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/error.h"
#include "lib/util/utf8.h"

/* The message is valid UTF-8 when sanitizing leaves it unchanged. */
static void assert_valid_utf8(const char *msg)
{
    char *out = utf8_sanitize(msg, strlen(msg));
    cr_assert_not_null(out);
    cr_assert_str_eq(out, msg);
    free(out);
}

Test(sh_errorf, fills_code_and_message_and_returns_minus_one)
{
    struct sh_error err;
    cr_assert_eq(sh_errorf(&err, SH_EINVAL, "gpus must be 1..%d", 8), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert_str_eq(err.msg, "gpus must be 1..8");
    cr_assert_eq(sh_errorf(NULL, SH_EINVAL, "ignored"), -1);
}

Test(sh_errorf, long_message_is_cut_on_a_character_boundary)
{
    /* 254 ASCII bytes then euro signs: the buffer holds 255 bytes, so a
     * plain cut would keep one byte of the first euro sign. */
    char text[300];
    memset(text, 'a', 254);
    memcpy(text + 254, "\xe2\x82\xac\xe2\x82\xac", 7);
    struct sh_error err;
    sh_errorf(&err, SH_ENOTFOUND, "%s", text);
    cr_assert_eq(strlen(err.msg), 254);
    assert_valid_utf8(err.msg);
    /* Each position of a 2-, 3- and 4-byte character at the end. */
    const char *chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    for (int c = 0; c < 3; c++) {
        for (int pad = 250; pad <= 255; pad++) {
            size_t n = strlen(chars[c]);
            memset(text, 'b', (size_t)pad);
            memcpy(text + pad, chars[c], n);
            memcpy(text + pad + n, chars[c], n + 1);
            sh_errorf(&err, SH_EINVAL, "%s", text);
            assert_valid_utf8(err.msg);
            cr_assert_geq(strlen(err.msg), 251, "char %d pad %d", c, pad);
        }
    }
}

Test(sh_errorf, short_multibyte_message_is_kept_whole)
{
    struct sh_error err;
    sh_errorf(&err, SH_ENOTFOUND, "team %s does not exist", "caf\xc3\xa9");
    cr_assert_str_eq(err.msg, "team caf\xc3\xa9 does not exist");
}

Test(sh_error_prefix, prefixes_and_cuts_on_a_character_boundary)
{
    struct sh_error err;
    sh_errorf(&err, SH_EINTERNAL, "bad record");
    sh_error_prefix(&err, "node %s: ", "gpu01");
    cr_assert_str_eq(err.msg, "node gpu01: bad record");
    cr_assert_eq(err.code, SH_EINTERNAL);
    char text[260];
    memset(text, 'c', 250);
    memcpy(text + 250, "\xe2\x82\xac", 4);
    sh_errorf(&err, SH_EINTERNAL, "%s", text);
    sh_error_prefix(&err, "x: ");
    assert_valid_utf8(err.msg);
    cr_assert_eq(strlen(err.msg), 253);
}
