/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: `shoal queue --json` prints the controller's jobs without parsing
 * them into a tree; what it prints must be byte for byte what jansson's
 * JSON_INDENT(2) printed before, and members and elements must be found in
 * the text as a parser would find them. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/json_text.h"

static const char *const docs[] = {
    "{}",
    "[]",
    "{\"a\":1,\"b\":[],\"c\":{},\"d\":[1,2,{\"e\":null}],\"f\":true}",
    "[{\"s\":\"x,y:{}[] \\\"q\\\" \\\\\",\"n\":-1.5e+20,\"u\":\"\\u00e9\\n\"}]",
    "{\"jobs\":[{\"id\":1,\"env\":{},\"command\":[\"a\",\"b c\"]},"
    "{\"id\":2,\"placement\":[{\"node\":\"n1\",\"gpus\":[0,1]}]}],\"more\":0}",
    "  { \"spaced\" : [ 1 , 2 ] , \"x\" : { } }  ",
};

static char *print_text(const char *doc, int depth)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    struct jtext v;
    cr_assert(jtext_value(doc, doc + strlen(doc), &v), "%s", doc);
    jtext_print(f, &v, depth);
    fclose(f);
    return out;
}

Test(json_text, prints_exactly_what_jansson_prints)
{
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_t *j = json_loads(docs[i], 0, NULL);
        cr_assert(j, "%s", docs[i]);
        char *want = json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY);
        /* From compact text, as the controller sends it. */
        char *compact = json_dumps(j, JSON_COMPACT);
        char *got = print_text(compact, 0);
        cr_assert_str_eq(got, want);
        free(got);
        free(compact);
        free(want);
        json_decref(j);
    }
}

Test(json_text, white_space_between_tokens_is_laid_out_again)
{
    const char *doc = "  { \"spaced\" : [ 1 , 2 ] ,\n \"x\" : { } }  ";
    json_t *j = json_loads(doc, 0, NULL);
    char *want = json_dumps(j, JSON_INDENT(2));
    char *got = print_text(doc, 0);
    cr_assert_str_eq(got, want);
    free(got);
    free(want);
    json_decref(j);
}

Test(json_text, elements_of_an_array_print_as_inside_the_array)
{
    const char *doc = "[{\"id\":1,\"a\":[1,{}]},{\"id\":2},3]";
    json_t *j = json_loads(doc, 0, NULL);
    char *want = json_dumps(j, JSON_INDENT(2));
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    struct jtext a, v;
    cr_assert(jtext_value(doc, doc + strlen(doc), &a));
    const char *cur = NULL;
    int n = 0;
    fputs("[", f);
    while (jtext_next(&a, &cur, &v)) {
        fputs(n++ ? ",\n  " : "\n  ", f);
        jtext_print(f, &v, 1);
    }
    fputs("\n]", f);
    fclose(f);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(out, want);
    free(out);
    free(want);
    json_decref(j);
}

Test(json_text, finds_members_and_refuses_what_is_not_there)
{
    const char *doc = "{\"jobs\":[{\"more\":5}],\"more\":12,\"s\":\"a,b\"}";
    struct jtext o, v;
    cr_assert(jtext_value(doc, doc + strlen(doc), &o));
    cr_assert(jtext_member(&o, "more", &v));
    cr_assert_eq(v.end - v.p, 2);
    cr_assert_eq(strncmp(v.p, "12", 2), 0);
    cr_assert(jtext_member(&o, "s", &v));
    cr_assert_eq(strncmp(v.p, "\"a,b\"", 5), 0);
    cr_assert_not(jtext_member(&o, "absent", &v));
    cr_assert(jtext_member(&o, "jobs", &v));
    struct jtext e;
    const char *cur = NULL;
    cr_assert(jtext_next(&v, &cur, &e));
    cr_assert_not(jtext_next(&v, &cur, &e));
}

Test(json_text, refuses_unbalanced_or_unterminated_text)
{
    static const char *const bad[] = {"", "{\"a\":1", "[1,2", "\"abc",
                                      "{\"a\":\"x}"};
    struct jtext v;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_not(jtext_value(bad[i], bad[i] + strlen(bad[i]), &v), "%s",
                      bad[i]);
}
