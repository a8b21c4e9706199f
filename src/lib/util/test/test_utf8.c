/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: job output and error messages become valid UTF-8 for JSON.
 * utf8_sanitize keeps valid text byte for byte, replaces each invalid byte
 * (stray continuation bytes, bad leads, overlong forms, surrogates, code
 * points past U+10FFFF, cut sequences) with U+FFFD and drops NUL bytes;
 * utf8_complete_prefix holds back a sequence cut at the end of a read only
 * while more output follows; utf8_cut bounds a "%.*s" without cutting a
 * character in two. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/utf8.h"

#define FFFD "\xef\xbf\xbd"

/* Sanitize len bytes of in and compare with want. */
static void assert_sanitized(const char *in, size_t len, const char *want)
{
    char *out = utf8_sanitize(in, len);
    cr_assert_not_null(out);
    cr_assert_str_eq(out, want);
    free(out);
}

#define SANITIZES_TO(lit, want) assert_sanitized(lit, sizeof(lit) - 1, want)

Test(utf8_sanitize, ascii_is_kept)
{
    SANITIZES_TO("epoch 1/10 loss=0.25\n", "epoch 1/10 loss=0.25\n");
    SANITIZES_TO("", "");
}

Test(utf8_sanitize, valid_multibyte_text_is_kept)
{
    /* 2, 3 and 4 bytes: é, €, 日本, 😀, and the last code point. */
    SANITIZES_TO("caf\xc3\xa9 \xe2\x82\xac \xe6\x97\xa5\xe6\x9c\xac "
                 "\xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
                 "caf\xc3\xa9 \xe2\x82\xac \xe6\x97\xa5\xe6\x9c\xac "
                 "\xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf");
    /* The smallest of each length is not overlong. */
    SANITIZES_TO("\xc2\x80\xe0\xa0\x80\xf0\x90\x80\x80",
                 "\xc2\x80\xe0\xa0\x80\xf0\x90\x80\x80");
    /* Just below and above the surrogates. */
    SANITIZES_TO("\xed\x9f\xbf\xee\x80\x80", "\xed\x9f\xbf\xee\x80\x80");
}

Test(utf8_sanitize, each_invalid_byte_becomes_a_replacement_character)
{
    SANITIZES_TO("a\xff"
                 "b",
                 "a" FFFD "b");
    SANITIZES_TO("\x80", FFFD);          /* stray continuation */
    SANITIZES_TO("\xbf\x80", FFFD FFFD); /* two of them */
    SANITIZES_TO("\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD);
    SANITIZES_TO("\xfe\xff", FFFD FFFD);
    /* A lead byte followed by ASCII: the ASCII survives. */
    SANITIZES_TO("\xc3("
                 "x",
                 FFFD "(x");
    SANITIZES_TO("\xe2\x82("
                 "x",
                 FFFD FFFD "(x");
}

Test(utf8_sanitize, overlong_forms_are_refused)
{
    SANITIZES_TO("\xc0\xaf", FFFD FFFD);          /* '/' in 2 bytes */
    SANITIZES_TO("\xc1\xbf", FFFD FFFD);          /* 0x7f in 2 bytes */
    SANITIZES_TO("\xe0\x80\xaf", FFFD FFFD FFFD); /* '/' in 3 bytes */
    SANITIZES_TO("\xe0\x9f\xbf", FFFD FFFD FFFD); /* 0x7ff in 3 bytes */
    SANITIZES_TO("\xf0\x80\x80\xaf", FFFD FFFD FFFD FFFD);
    SANITIZES_TO("\xf0\x8f\xbf\xbf", FFFD FFFD FFFD FFFD); /* 0xffff */
    SANITIZES_TO("\xc0\x80", FFFD FFFD); /* "modified UTF-8" NUL */
}

Test(utf8_sanitize, surrogates_and_code_points_past_the_last_are_refused)
{
    SANITIZES_TO("\xed\xa0\x80", FFFD FFFD FFFD);          /* U+D800 */
    SANITIZES_TO("\xed\xbf\xbf", FFFD FFFD FFFD);          /* U+DFFF */
    SANITIZES_TO("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* U+110000 */
    SANITIZES_TO("\xf5\x80\x80\x80", FFFD FFFD FFFD FFFD);
}

Test(utf8_sanitize, sequence_cut_at_the_end_is_replaced)
{
    SANITIZES_TO("ok\xe2\x82", "ok" FFFD FFFD);
    SANITIZES_TO("ok\xf0\x9f\x98", "ok" FFFD FFFD FFFD);
    SANITIZES_TO("ok\xc3", "ok" FFFD);
}

Test(utf8_sanitize, nul_bytes_are_dropped)
{
    SANITIZES_TO("a\0b\0\0c", "abc");
    char *out = utf8_sanitize("\0\0\0", 3);
    cr_assert_not_null(out);
    cr_assert_str_eq(out, "");
    free(out);
}

Test(utf8_sanitize, reads_only_the_given_length)
{
    /* The bytes after len (a valid é) are not looked at. */
    assert_sanitized("x\xc3\xa9", 2, "x" FFFD);
    assert_sanitized("hello world", 5, "hello");
}

Test(utf8_sanitize, all_invalid_input_grows_to_three_bytes_per_byte)
{
    size_t n = 4096;
    char *in = malloc(n);
    cr_assert_not_null(in);
    memset(in, 0xff, n);
    char *out = utf8_sanitize(in, n);
    cr_assert_not_null(out);
    cr_assert_eq(strlen(out), 3 * n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(memcmp(out + 3 * i, FFFD, 3), 0, "at %zu", i);
    free(out);
    free(in);
}

/* ---- utf8_complete_prefix ---- */

#define PREFIX(lit, more) utf8_complete_prefix(lit, sizeof(lit) - 1, more)

Test(utf8_complete_prefix, complete_text_is_passed_whole)
{
    cr_assert_eq(PREFIX("abc", true), 3);
    cr_assert_eq(PREFIX("caf\xc3\xa9", true), 5);
    cr_assert_eq(PREFIX("\xe2\x82\xac", true), 3);
    cr_assert_eq(PREFIX("x\xf0\x9f\x98\x80", true), 5);
    cr_assert_eq(utf8_complete_prefix("", 0, true), 0);
}

Test(utf8_complete_prefix, cut_sequence_is_held_back_while_more_follows)
{
    cr_assert_eq(PREFIX("caf\xc3", true), 3);
    cr_assert_eq(PREFIX("ab\xe2", true), 2);
    cr_assert_eq(PREFIX("ab\xe2\x82", true), 2);
    cr_assert_eq(PREFIX("ab\xf0", true), 2);
    cr_assert_eq(PREFIX("ab\xf0\x9f", true), 2);
    cr_assert_eq(PREFIX("ab\xf0\x9f\x98", true), 2);
    cr_assert_eq(PREFIX("\xf0\x9f\x98", true), 0);
}

Test(utf8_complete_prefix, cut_sequence_at_the_end_of_output_is_passed)
{
    /* Nothing more will come: the cut sequence is invalid and will be
     * replaced, not held forever. */
    cr_assert_eq(PREFIX("caf\xc3", false), 4);
    cr_assert_eq(PREFIX("ab\xf0\x9f\x98", false), 5);
}

Test(utf8_complete_prefix, held_back_bytes_complete_with_the_next_read)
{
    /* A log read in two pieces that split the euro sign: the first piece
     * stops before it, and the rest starts with it, so neither half is
     * replaced. */
    const char text[] = "cost: 5\xe2\x82\xac\n";
    size_t cut = 8; /* after "cost: 5\xe2" */
    size_t keep = utf8_complete_prefix(text, cut, true);
    cr_assert_eq(keep, 7);
    char *a = utf8_sanitize(text, keep);
    char *b = utf8_sanitize(text + keep, sizeof(text) - 1 - keep);
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_str_eq(a, "cost: 5");
    cr_assert_str_eq(b, "\xe2\x82\xac\n");
    free(a);
    free(b);
}

/* ---- utf8_cut ---- */

Test(utf8_cut, short_text_is_passed_whole)
{
    cr_assert_eq(utf8_cut("team-a", 64), 6);
    cr_assert_eq(utf8_cut("caf\xc3\xa9", 5), 5);
    cr_assert_eq(utf8_cut("", 64), 0);
}

Test(utf8_cut, ascii_is_cut_at_the_limit)
{
    cr_assert_eq(utf8_cut("abcdef", 4), 4);
}

Test(utf8_cut, never_cuts_a_character_in_two)
{
    /* 63 ASCII bytes then é: "%.64s" would keep only its first byte. */
    char name[80];
    memset(name, 'a', 63);
    memcpy(name + 63, "\xc3\xa9xyz", 6);
    cr_assert_eq(utf8_cut(name, 64), 63);
    cr_assert_eq(utf8_cut(name, 65), 65);
    /* 3- and 4-byte characters cut after each of their bytes. */
    cr_assert_eq(utf8_cut("ab\xe2\x82\xac", 3), 2);
    cr_assert_eq(utf8_cut("ab\xe2\x82\xac", 4), 2);
    cr_assert_eq(utf8_cut("ab\xe2\x82\xac", 5), 5);
    cr_assert_eq(utf8_cut("a\xf0\x9f\x98\x80z", 2), 1);
    cr_assert_eq(utf8_cut("a\xf0\x9f\x98\x80z", 4), 1);
    cr_assert_eq(utf8_cut("a\xf0\x9f\x98\x80z", 5), 5);
}

Test(utf8_cut, the_cut_text_is_valid_utf8)
{
    /* Every limit over a mixed string gives a prefix that sanitizing
     * leaves unchanged. */
    const char text[] = "x\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80y\xe6\x97\xa5";
    for (int max = 0; max <= (int)sizeof(text); max++) {
        int n = utf8_cut(text, max);
        cr_assert_leq(n, max);
        char *out = utf8_sanitize(text, (size_t)n);
        cr_assert_not_null(out);
        cr_assert_eq(strlen(out), (size_t)n, "max %d", max);
        cr_assert_eq(memcmp(out, text, (size_t)n), 0, "max %d", max);
        free(out);
    }
}

Test(utf8_cut, null_and_negative_limits_give_nothing)
{
    cr_assert_eq(utf8_cut(NULL, 64), 0);
    cr_assert_eq(utf8_cut("abc", 0), 0);
    cr_assert_eq(utf8_cut("abc", -1), 0);
}

Test(utf8_cut, macro_gives_both_printf_arguments)
{
    char name[80], out[128];
    memset(name, 'a', 63);
    memcpy(name + 63, "\xc3\xa9", 3);
    snprintf(out, sizeof(out), "user %.*s does not exist", UTF8_CUT(name, 64));
    cr_assert_eq(strlen(out), strlen("user  does not exist") + 63);
    cr_assert_eq(strstr(out, "\xc3"), NULL);
}
