/* SPDX-License-Identifier: Apache-2.0 */
/* JSON handled as text, without building a tree: find a member of an
 * object, walk the elements of an array, and print a value in exactly the
 * layout of jansson's JSON_INDENT(2). `shoal queue --json` prints tens of
 * thousands of jobs this way as fast as it reads them.
 *
 * The text must come from a JSON encoder (the controller): these functions
 * check that strings end and brackets balance, not the whole grammar. */
#ifndef SHOAL_CMD_JSON_TEXT_H
#define SHOAL_CMD_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct jtext {
    const char *p;   /* the value's first byte */
    const char *end; /* one past its last byte */
};

/* The value that starts at p (after any white space) and ends before end:
 * its span in *v and true, or false when it is malformed. */
bool jtext_value(const char *p, const char *end, struct jtext *v);

/* The member key of object o (a key written without escapes): its value in
 * *v and true, or false when o is not an object or has no such key. */
bool jtext_member(const struct jtext *o, const char *key, struct jtext *v);

/* Walk the elements of array a: start with *cursor = NULL; each call puts
 * the next element in *v and returns true, or false at the end (or when a
 * is not an array or is malformed). */
bool jtext_next(const struct jtext *a, const char **cursor, struct jtext *v);

/* Print v as json_dumpf(JSON_INDENT(2)) would at nesting depth `depth`
 * (the lines after the first are indented by 2 x depth more). */
void jtext_print(FILE *f, const struct jtext *v, int depth);

#endif
