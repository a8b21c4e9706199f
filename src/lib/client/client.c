/* SPDX-License-Identifier: Apache-2.0 */
/* REST client (see client.h): configuration, the JSON layer and error
 * mapping, and the transport choice. The plain HTTP transport is in
 * http_plain.c, the TLS one (libcurl through dlopen) in http_curl.c. */
#include "lib/client/client.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/client/http.h"
#include "lib/util/utf8.h"

struct client {
    struct http_conn *conn;
    int timeout_ms;
    char url[512];
    char auth_header[300];
};

void client_config_path(char *buf, size_t size)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, size, "%s/shoal/config", xdg);
    else
        snprintf(buf, size, "%s/.config/shoal/config", home ? home : "");
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int copy_value(char *dst, size_t size, const char *v, const char *what,
                      struct sh_error *err)
{
    if (strlen(v) >= size)
        return sh_errorf(err, SH_EINVAL, "%s is longer than %zu bytes", what,
                         size - 1);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

static int read_config_file(struct client_config *cfg, const char *path,
                            struct sh_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        return sh_errorf(err, SH_EINVAL, "cannot read %s: %s", path,
                         strerror(errno));
    }
    char line[1024];
    int lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof(line), f)) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = sh_errorf(err, SH_EINVAL, "%s:%d: expected 'key = value'",
                           path, lineno);
            break;
        }
        *eq = '\0';
        char *key = trim(s);
        char *val = trim(eq + 1);
        if (strcmp(key, "url") == 0)
            rc = copy_value(cfg->url, sizeof(cfg->url), val, "url", err);
        else if (strcmp(key, "token") == 0)
            rc = copy_value(cfg->token, sizeof(cfg->token), val, "token", err);
        else if (strcmp(key, "ca") == 0)
            rc = copy_value(cfg->ca_file, sizeof(cfg->ca_file), val, "ca", err);
        else
            rc = sh_errorf(err, SH_EINVAL, "%s:%d: unknown key '%.*s'", path,
                           lineno, UTF8_CUT(key, 32));
        if (rc < 0)
            break;
    }
    fclose(f);
    return rc;
}

int client_config_load(struct client_config *cfg, struct sh_error *err)
{
    char path[512];
    memset(cfg, 0, sizeof(*cfg));
    client_config_path(path, sizeof(path));
    if (read_config_file(cfg, path, err) < 0)
        return -1;
    if (cfg->url[0])
        snprintf(cfg->source, sizeof(cfg->source), "%s", path);
    const char *env_url = getenv("SHOAL_URL");
    const char *env_token = getenv("SHOAL_TOKEN");
    const char *env_ca = getenv("SHOAL_CA");
    if (env_url && *env_url) {
        if (copy_value(cfg->url, sizeof(cfg->url), env_url, "SHOAL_URL", err) <
            0)
            return -1;
        snprintf(cfg->source, sizeof(cfg->source), "SHOAL_URL");
    }
    if (env_token && *env_token &&
        copy_value(cfg->token, sizeof(cfg->token), env_token, "SHOAL_TOKEN",
                   err) < 0)
        return -1;
    if (env_ca && *env_ca &&
        copy_value(cfg->ca_file, sizeof(cfg->ca_file), env_ca, "SHOAL_CA",
                   err) < 0)
        return -1;
    if (!cfg->url[0])
        return sh_errorf(
            err, SH_EUNAVAILABLE,
            "no cluster configured: set SHOAL_URL and SHOAL_TOKEN, "
            "or start a local cluster with `shoal up` (it writes "
            "%s)",
            path);
    return 0;
}

struct client *client_create(const char *url, const char *token,
                             const char *ca_file, struct sh_error *err)
{
    struct client *c = calloc(1, sizeof(*c));
    if (!c) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    c->timeout_ms = 30000;
    snprintf(c->url, sizeof(c->url), "%s", url);
    if (token && *token)
        snprintf(c->auth_header, sizeof(c->auth_header), "Bearer %s", token);
    c->conn = http_conn_create(url, ca_file, err);
    if (!c->conn) {
        free(c);
        return NULL;
    }
    return c;
}

void client_destroy(struct client *c)
{
    if (!c)
        return;
    http_conn_destroy(c->conn);
    free(c);
}

void client_abort(struct client *c)
{
    if (c && c->conn->ops->abort)
        c->conn->ops->abort(c->conn);
}

void client_set_timeout(struct client *c, int timeout_ms)
{
    c->timeout_ms = timeout_ms;
}

/* Turn a non-2xx answer into err: the API's message when the body is an
 * error object, else the status. */
static int answer_error(int status, const char *body, size_t len,
                        struct sh_error *err)
{
    json_t *o = json_loadb(body, len, 0, NULL);
    json_t *e = o ? json_object_get(o, "error") : NULL;
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    if (msg)
        sh_errorf(err, code ? sh_errc_from_name(code) : SH_EINTERNAL, "%s",
                  msg);
    else
        sh_errorf(err, status >= 500 ? SH_EUNAVAILABLE : SH_EINVAL,
                  "the controller answered HTTP %d", status);
    json_decref(o);
    return -1;
}

int client_call_raw(struct client *c, const char *method, const char *path,
                    const char *body, size_t body_len, char **out,
                    size_t *out_len, int *status, struct sh_error *err)
{
    struct http_request rq = {
        .method = method,
        .path = path,
        .auth = c->auth_header[0] ? c->auth_header : NULL,
        .body = body,
        .body_len = body_len,
        .timeout_ms = c->timeout_ms,
    };
    struct http_response rs;
    if (status)
        *status = 0;
    if (http_conn_request(c->conn, &rq, &rs, err) < 0)
        return -1;
    if (status)
        *status = rs.status;
    if (rs.status < 200 || rs.status > 299) {
        answer_error(rs.status, rs.body, rs.body_len, err);
        free(rs.body);
        return -1;
    }
    *out = rs.body;
    if (out_len)
        *out_len = rs.body_len;
    return 0;
}

int client_call(struct client *c, const char *method, const char *path,
                const json_t *body, json_t **out, int *status,
                struct sh_error *err)
{
    char *text = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        if (!text)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    char *resp = NULL;
    size_t len = 0;
    int rc = client_call_raw(c, method, path, text, text ? strlen(text) : 0,
                             &resp, &len, status, err);
    free(text);
    if (rc < 0)
        return -1;
    *out = NULL;
    if (len > 0) {
        json_error_t jerr;
        *out = json_loadb(resp, len, 0, &jerr);
        if (!*out) {
            free(resp);
            return sh_errorf(err, SH_EINTERNAL,
                             "the controller sent malformed JSON: %s",
                             jerr.text);
        }
    }
    free(resp);
    return 0;
}

void client_urlencode(const char *s, char *buf, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < size; s++) {
        unsigned char ch = (unsigned char)*s;
        if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            buf[o++] = (char)ch;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[ch >> 4];
            buf[o++] = hex[ch & 15];
        }
    }
    buf[o] = '\0';
}

/* ---- transport choice ---- */

struct http_conn *http_conn_create(const char *url, const char *ca_file,
                                   struct sh_error *err)
{
    if (strncmp(url, "http://", 7) == 0)
        return http_plain_create(url, err);
    if (strncmp(url, "https://", 8) == 0)
        return http_curl_create(url, ca_file, err);
    sh_errorf(err, SH_EINVAL,
              "'%s' is not a controller URL: it must start with http:// or "
              "https://",
              url);
    return NULL;
}

void http_conn_destroy(struct http_conn *c)
{
    if (c)
        c->ops->destroy(c);
}

int http_conn_request(struct http_conn *c, const struct http_request *rq,
                      struct http_response *rs, struct sh_error *err)
{
    return c->ops->request(c, rq, rs, err);
}
