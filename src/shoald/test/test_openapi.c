/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the API reference (doc/api/openapi.json, built into shoald and
 * served at GET /v1/openapi.json) against the route table of routes.c:
 * every route is documented with the access it really has, the document
 * names no route that does not exist, path parameters are declared, every
 * $ref resolves, and the error object lists every error code the API can
 * answer. A new route without its entry in the document fails here, naming
 * it. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shoald/api_handlers.h"

static const char *const methods[] = {
    "get", "put", "post", "delete", "patch", "head", "options", "trace", NULL};

/* The string value of o[key], or "" when absent. */
static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static json_t *load_doc(void)
{
    json_error_t jerr;
    json_t *doc =
        json_loadb((const char *)api_openapi_json, api_openapi_json_len,
                   JSON_REJECT_DUPLICATES, &jerr);
    cr_assert_not_null(doc, "doc/api/openapi.json: line %d: %s", jerr.line,
                       jerr.text);
    return doc;
}

/* "/v1/projects/{name}/members/{user}" -> "/v1/projects/{}/members/{}", the
 * route table's form. -1 when it does not fit or a brace is unclosed. */
static int table_pattern(const char *path, char *buf, size_t size)
{
    size_t o = 0;
    for (const char *p = path; *p; p++) {
        if (o + 3 > size)
            return -1;
        buf[o++] = *p;
        if (*p == '{') {
            const char *end = strchr(p, '}');
            if (!end || end == p + 1)
                return -1;
            buf[o++] = '}';
            p = end;
        }
    }
    buf[o] = '\0';
    return 0;
}

static const char *access_name(enum api_access a)
{
    switch (a) {
    case API_ACCESS_PUBLIC:
        return "public";
    case API_ACCESS_USER:
        return "user";
    case API_ACCESS_ADMIN:
        return "admin";
    case API_ACCESS_AGENT:
        return "agent";
    case API_ACCESS_JOIN:
        return "join";
    }
    return "?";
}

struct report {
    int n;
    char text[8192];
};

static void problem(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void problem(struct report *r, const char *fmt, ...)
{
    size_t o = strlen(r->text);
    va_list ap;
    va_start(ap, fmt);
    if (o + 2 < sizeof(r->text)) {
        vsnprintf(r->text + o, sizeof(r->text) - o - 1, fmt, ap);
        strcat(r->text, "\n");
    }
    va_end(ap);
    r->n++;
}

/* The document's path (OpenAPI form) for a table pattern, or NULL. */
static const char *doc_path(const json_t *paths, const char *pattern)
{
    const char *key;
    json_t *v;
    char buf[512];
    json_object_foreach ((json_t *)paths, key, v) {
        if (table_pattern(key, buf, sizeof(buf)) == 0 &&
            strcmp(buf, pattern) == 0)
            return key;
    }
    return NULL;
}

/* Whether path parameter name is declared (on the operation or the path). */
static bool param_declared(const json_t *item, const json_t *op,
                           const char *name)
{
    const json_t *lists[2] = {json_object_get(op, "parameters"),
                              json_object_get(item, "parameters")};
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *p;
        json_array_foreach ((json_t *)lists[l], i, p) {
            if (json_is_true(json_object_get(p, "required")) &&
                strcmp(str_of(p, "in"), "path") == 0 &&
                strcmp(str_of(p, "name"), name) == 0)
                return true;
        }
    }
    return false;
}

/* One documented operation against its route. */
static void check_op(struct report *r, const struct api_route *rt,
                     const char *path, const json_t *item, const json_t *op)
{
    const char *want = access_name(rt->access);
    const char *got = str_of(op, "x-shoal-access");
    if (strcmp(want, got) != 0)
        problem(r, "%s %s: x-shoal-access is %s, the route table says %s",
                rt->method, path, got, want);
    const json_t *sec = json_object_get(op, "security");
    bool open = json_is_array(sec) && json_array_size(sec) == 0;
    bool bearer =
        json_is_array(sec) && json_object_get(json_array_get(sec, 0), "bearer");
    if (rt->access == API_ACCESS_PUBLIC ? !open : !bearer)
        problem(r, "%s %s: security must be %s", rt->method, path,
                rt->access == API_ACCESS_PUBLIC ? "[] (public)"
                                                : "[{\"bearer\": []}]");
    for (const char *p = strchr(path, '{'); p; p = strchr(p + 1, '{')) {
        char name[128];
        const char *end = strchr(p, '}');
        snprintf(name, sizeof(name), "%.*s", (int)(end - p - 1), p + 1);
        if (!param_declared(item, op, name))
            problem(r, "%s %s: path parameter %s is not declared", rt->method,
                    path, name);
    }
    const char *code;
    json_t *v;
    bool ok2xx = false;
    json_object_foreach (json_object_get(op, "responses"), code, v)
        ok2xx = ok2xx || code[0] == '2';
    if (!ok2xx)
        problem(r, "%s %s: no 2xx response", rt->method, path);
    if (!json_is_string(json_object_get(op, "operationId")))
        problem(r, "%s %s: no operationId", rt->method, path);
}

static bool is_method(const char *key)
{
    for (int i = 0; methods[i]; i++)
        if (strcmp(key, methods[i]) == 0)
            return true;
    return false;
}

/* Compare the document with a route table: every route documented, with
 * its access; no documented operation without its route. */
static int check(const json_t *doc, const struct api_route *routes,
                 struct report *r)
{
    memset(r, 0, sizeof(*r));
    const json_t *paths = json_object_get(doc, "paths");
    if (!json_is_object(paths)) {
        problem(r, "the document has no paths object");
        return r->n;
    }
    for (const struct api_route *rt = routes; rt->method; rt++) {
        char m[16];
        size_t i;
        for (i = 0; rt->method[i] && i + 1 < sizeof(m); i++)
            m[i] = (char)tolower((unsigned char)rt->method[i]);
        m[i] = '\0';
        const char *path = doc_path(paths, rt->pattern);
        const json_t *item = path ? json_object_get(paths, path) : NULL;
        const json_t *op = json_object_get(item, m);
        if (!op) {
            problem(r,
                    "%s %s is in the route table but not in "
                    "doc/api/openapi.json",
                    rt->method, rt->pattern);
            continue;
        }
        check_op(r, rt, path, item, op);
    }
    const char *path;
    json_t *item;
    json_object_foreach ((json_t *)paths, path, item) {
        char pattern[512];
        if (table_pattern(path, pattern, sizeof(pattern)) < 0) {
            problem(r, "%s: a path parameter is not {name}", path);
            continue;
        }
        if (strcmp(doc_path(paths, pattern), path) != 0)
            problem(r, "%s and %s are the same route", doc_path(paths, pattern),
                    path);
        const char *key;
        json_t *op;
        json_object_foreach (item, key, op) {
            if (!is_method(key)) {
                if (strcmp(key, "parameters") && strcmp(key, "summary") &&
                    strcmp(key, "description"))
                    problem(r, "%s: unexpected key %s", path, key);
                continue;
            }
            bool found = false;
            for (const struct api_route *rt = routes; rt->method && !found;
                 rt++)
                found = strcasecmp(rt->method, key) == 0 &&
                        strcmp(rt->pattern, pattern) == 0;
            if (!found)
                problem(r,
                        "doc/api/openapi.json documents %s %s, which is not in "
                        "the route table",
                        key, path);
        }
    }
    return r->n;
}

/* Every "$ref" in v resolves inside doc. */
static void check_refs(const json_t *doc, const json_t *v, struct report *r)
{
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach ((json_t *)v, i, e)
            check_refs(doc, e, r);
        return;
    }
    if (!json_is_object(v))
        return;
    const char *key;
    json_t *e;
    json_object_foreach ((json_t *)v, key, e) {
        if (strcmp(key, "$ref") != 0) {
            check_refs(doc, e, r);
            continue;
        }
        const char *ref = json_string_value(e);
        if (!ref || strncmp(ref, "#/", 2) != 0) {
            problem(r, "$ref %s is not local", ref ? ref : "(not a string)");
            continue;
        }
        const json_t *at = doc;
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", ref + 2);
        char *save = NULL;
        for (char *tok = strtok_r(buf, "/", &save); tok && at;
             tok = strtok_r(NULL, "/", &save))
            at = json_object_get(at, tok);
        if (!at)
            problem(r, "$ref %s does not resolve", ref);
    }
}

static size_t route_count(void)
{
    size_t n = 0;
    while (api_routes[n].method)
        n++;
    return n;
}

Test(openapi, the_document_is_openapi_3_with_a_bearer_scheme)
{
    json_t *doc = load_doc();
    const char *v = json_string_value(json_object_get(doc, "openapi"));
    cr_assert(v && strncmp(v, "3.", 2) == 0, "openapi is %s", v ? v : "none");
    json_t *info = json_object_get(doc, "info");
    cr_assert(json_is_string(json_object_get(info, "title")));
    cr_assert(json_is_string(json_object_get(info, "version")));
    json_t *bearer = json_object_get(
        json_object_get(json_object_get(doc, "components"), "securitySchemes"),
        "bearer");
    cr_assert_str_eq(json_string_value(json_object_get(bearer, "type")),
                     "http");
    cr_assert_str_eq(json_string_value(json_object_get(bearer, "scheme")),
                     "bearer");
    json_decref(doc);
}

Test(openapi, every_route_is_documented_and_nothing_else)
{
    json_t *doc = load_doc();
    struct report r;
    check(doc, api_routes, &r);
    cr_assert_eq(r.n, 0,
                 "%d problem(s) between src/shoald/routes.c and "
                 "doc/api/openapi.json:\n%s",
                 r.n, r.text);
    /* The served document is one of them. */
    cr_assert_not_null(json_object_get(
        json_object_get(json_object_get(doc, "paths"), "/v1/openapi.json"),
        "get"));
    json_decref(doc);
}

Test(openapi, a_route_missing_from_the_document_is_named)
{
    json_t *doc = load_doc();
    size_t n = route_count();
    struct api_route *routes = calloc(n + 2, sizeof(*routes));
    memcpy(routes, api_routes, n * sizeof(*routes));
    routes[n] = (struct api_route){"POST", "/v1/jobs/{}/teleport", api_health,
                                   API_ACCESS_USER};
    struct report r;
    cr_assert_eq(check(doc, routes, &r), 1, "%s", r.text);
    cr_assert(strstr(r.text, "POST /v1/jobs/{}/teleport is in the route table"),
              "%s", r.text);
    free(routes);
    json_decref(doc);
}

Test(openapi, a_documented_route_that_does_not_exist_is_named)
{
    json_t *doc = load_doc();
    size_t n = route_count(), k = 0;
    struct api_route *routes = calloc(n + 1, sizeof(*routes));
    for (size_t i = 0; i < n; i++)
        if (strcmp(api_routes[i].method, "DELETE") ||
            strcmp(api_routes[i].pattern, "/v1/jobs/{}"))
            routes[k++] = api_routes[i];
    cr_assert_eq(k, n - 1);
    struct report r;
    cr_assert_eq(check(doc, routes, &r), 1, "%s", r.text);
    cr_assert(strstr(r.text, "documents delete /v1/jobs/{id}, which is not"),
              "%s", r.text);
    free(routes);
    json_decref(doc);
}

Test(openapi, a_wrong_access_or_undeclared_parameter_is_named)
{
    json_t *doc = load_doc();
    json_t *paths = json_object_get(doc, "paths");
    json_object_set_new(
        json_object_get(json_object_get(paths, "/v1/users"), "get"),
        "x-shoal-access", json_string("user"));
    json_object_del(
        json_object_get(json_object_get(paths, "/v1/nodes/{name}"), "get"),
        "parameters");
    struct report r;
    cr_assert_eq(check(doc, api_routes, &r), 2, "%s", r.text);
    cr_assert(strstr(r.text, "GET /v1/users: x-shoal-access is user, the "
                             "route table says admin"),
              "%s", r.text);
    cr_assert(strstr(r.text, "GET /v1/nodes/{name}: path parameter name is "
                             "not declared"),
              "%s", r.text);
    json_decref(doc);
}

Test(openapi, path_patterns_convert_to_the_table_form)
{
    char buf[64];
    cr_assert_eq(
        table_pattern("/v1/projects/{name}/members/{user}", buf, sizeof(buf)),
        0);
    cr_assert_str_eq(buf, "/v1/projects/{}/members/{}");
    cr_assert_eq(table_pattern("/v1/health", buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "/v1/health");
    cr_assert_eq(table_pattern("/v1/jobs/{id", buf, sizeof(buf)), -1);
    cr_assert_eq(table_pattern("/v1/jobs/{}", buf, sizeof(buf)), -1);
}

Test(openapi, every_ref_resolves)
{
    json_t *doc = load_doc();
    struct report r = {0};
    check_refs(doc, doc, &r);
    cr_assert_eq(r.n, 0, "%s", r.text);
    json_decref(doc);
}

Test(openapi, the_error_object_lists_every_error_code)
{
    json_t *doc = load_doc();
    json_t *code = json_object_get(
        json_object_get(
            json_object_get(
                json_object_get(
                    json_object_get(
                        json_object_get(json_object_get(doc, "components"),
                                        "schemas"),
                        "Error"),
                    "properties"),
                "error"),
            "properties"),
        "code");
    json_t *codes = json_object_get(code, "enum");
    cr_assert(json_is_array(codes));
    for (int c = SH_EINVAL; c <= SH_EINTERNAL; c++) {
        const char *name = sh_errc_name((enum sh_errc)c);
        bool found = false;
        size_t i;
        json_t *e;
        json_array_foreach (codes, i, e)
            found = found || strcmp(json_string_value(e), name) == 0;
        cr_assert(found, "error code %s is missing from Error.code", name);
    }
    cr_assert_eq(json_array_size(codes),
                 (size_t)(SH_EINTERNAL - SH_EINVAL + 1));
    json_decref(doc);
}
