/* SPDX-License-Identifier: Apache-2.0 */
/* REST client (see client.h): configuration, the JSON layer and error
 * mapping, failing over between the controllers of a URL list, and the
 * transport choice. The plain HTTP transport is in http_plain.c, the TLS
 * one (libcurl through dlopen) in http_curl.c. */
#include "lib/client/client.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/client/http.h"
#include "lib/util/clock.h"
#include "lib/util/utf8.h"

/* Between two rounds over a URL list in which no controller served. */
#define FAILOVER_PAUSE_MS 200
/* How long a call keeps looking for the leader when the call itself has no
 * timeout. */
#define FAILOVER_DEFAULT_MS 30000
/* A request with an idempotency key whose answer was lost is sent again
 * to a lone controller at most this many times. */
#define IDEMPOTENT_RESENDS 3

struct client {
    /* The configured URLs. conns[i] is created with urls[i]. mu guards nurls and
     * conns against client_abort in another thread. */
    pthread_mutex_t mu;
    char urls[CLIENT_MAX_URLS][512];
    struct http_conn *conns[CLIENT_MAX_URLS];
    int nurls;
    int cur; /* the controller that served last */
    atomic_bool aborted;
    int timeout_ms;
    char ca_file[512];
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

/* Add url (and its connection) to c's list; its index, or -1. */
static int add_url(struct client *c, const char *url, struct sh_error *err)
{
    if (c->nurls == CLIENT_MAX_URLS) {
        sh_errorf(err, SH_EINVAL, "more than %d controller URLs",
                  CLIENT_MAX_URLS);
        return -1;
    }
    if (strlen(url) >= sizeof(c->urls[0])) {
        sh_errorf(err, SH_EINVAL, "a controller URL is longer than %zu bytes",
                  sizeof(c->urls[0]) - 1);
        return -1;
    }
    struct http_conn *conn =
        http_conn_create(url, c->ca_file[0] ? c->ca_file : NULL, err);
    if (!conn)
        return -1;
    pthread_mutex_lock(&c->mu);
    int i = c->nurls;
    snprintf(c->urls[i], sizeof(c->urls[i]), "%s", url);
    c->conns[i] = conn;
    c->nurls++;
    pthread_mutex_unlock(&c->mu);
    return i;
}

static int find_url(const struct client *c, const char *url)
{
    for (int i = 0; i < c->nurls; i++) {
        if (strcmp(c->urls[i], url) == 0)
            return i;
    }
    return -1;
}

struct client *client_create(const char *url, const char *token,
                             const char *ca_file, struct sh_error *err)
{
    struct client *c = calloc(1, sizeof(*c));
    if (!c) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->timeout_ms = 30000;
    if (ca_file)
        snprintf(c->ca_file, sizeof(c->ca_file), "%s", ca_file);
    if (token && *token)
        snprintf(c->auth_header, sizeof(c->auth_header), "Bearer %s", token);
    /* "URL" or "URL, URL, ...": the controllers of one cluster. */
    const char *s = url;
    for (;;) {
        size_t n = strcspn(s, ",");
        char one[600];
        const char *b = s, *e = s + n;
        while (b < e && isspace((unsigned char)*b))
            b++;
        while (e > b && isspace((unsigned char)e[-1]))
            e--;
        if (e == b) {
            sh_errorf(err, SH_EINVAL,
                      "'%.*s' has an empty entry: a controller URL list is "
                      "URL, URL, ...",
                      UTF8_CUT(url, 200));
            goto fail;
        }
        snprintf(one, sizeof(one), "%.*s", (int)(e - b), b);
        if (find_url(c, one) < 0 && add_url(c, one, err) < 0)
            goto fail;
        if (!s[n])
            break;
        s += n + 1;
    }
    return c;
fail:
    client_destroy(c);
    return NULL;
}

void client_destroy(struct client *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nurls; i++)
        http_conn_destroy(c->conns[i]);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void client_abort(struct client *c)
{
    if (!c)
        return;
    c->aborted = true;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->nurls; i++) {
        if (c->conns[i]->ops->abort)
            c->conns[i]->ops->abort(c->conns[i]);
    }
    pthread_mutex_unlock(&c->mu);
}

void client_set_timeout(struct client *c, int timeout_ms)
{
    c->timeout_ms = timeout_ms;
}

const char *client_url(const struct client *c)
{
    return c->urls[c->cur];
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

/* A follower's answer (503 with a "leader" member): this controller does
 * not serve. *leader gets the leader's URL when it names one. */
static bool not_leader_answer(const struct http_response *rs, char *leader,
                              size_t size)
{
    leader[0] = '\0';
    if (rs->status != 503 || !rs->body)
        return false;
    json_t *o = json_loadb(rs->body, rs->body_len, 0, NULL);
    json_t *l = json_object_get(o, "leader");
    bool yes = l != NULL;
    if (json_is_string(l) && strlen(json_string_value(l)) < size)
        snprintf(leader, size, "%s", json_string_value(l));
    json_decref(o);
    return yes;
}

static void pause_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One try at controller i. 0: served (rs filled, any status); 1: move on to
 * another controller (err says why; *leader may name the leader); -1:
 * failed in a way another controller cannot help with. */
static int try_one(struct client *c, int i, const struct http_request *rq,
                   struct http_response *rs, char *leader, size_t leader_size,
                   struct sh_error *err)
{
    leader[0] = '\0';
    if (http_conn_request(c->conns[i], rq, rs, err) < 0) {
        /* Sent again elsewhere only when it surely was not received here,
         * or reading it twice does no harm. */
        bool safe = !rs->maybe_received || strcmp(rq->method, "GET") == 0 ||
                    strcmp(rq->method, "HEAD") == 0 || rq->idempotency_key;
        return safe && err->code == SH_EUNAVAILABLE && !c->aborted ? 1 : -1;
    }
    if (not_leader_answer(rs, leader, leader_size)) {
        answer_error(rs->status, rs->body, rs->body_len, err);
        free(rs->body);
        rs->body = NULL;
        return 1;
    }
    return 0;
}

/* Send rq to the controller that serves: the one that served last first,
 * then the leader a follower named when it is in the list, then the others
 * in list order, in rounds until one serves or the time is up. A single URL
 * is tried once. */
static int failover_request(struct client *c, const struct http_request *rq,
                            struct http_response *rs, struct sh_error *err)
{
    int window = c->timeout_ms > 0 ? c->timeout_ms : FAILOVER_DEFAULT_MS;
    int64_t deadline = clock_mono_ms() + window;
    int next = c->cur;
    char unlisted[512] = ""; /* a leader named that is not in the list */
    int resent = 0;
    for (;;) {
        bool tried[CLIENT_MAX_URLS] = {false};
        int ntried = 0;
        while (ntried < c->nurls) {
            char leader[512];
            int i = next;
            tried[i] = true;
            ntried++;
            int rc = try_one(c, i, rq, rs, leader, sizeof(leader), err);
            if (rc == 0) {
                c->cur = i;
                return 0;
            }
            if (rc < 0)
                return -1;
            /* Only to a controller the user configured: the token goes
             * along, and a URL from an answer is not one to trust. */
            int l = leader[0] ? find_url(c, leader) : -1;
            if (leader[0] && l < 0)
                snprintf(unlisted, sizeof(unlisted), "%s", leader);
            if (l >= 0 && !tried[l]) {
                next = l;
                continue;
            }
            next = -1;
            for (int k = 1; k <= c->nurls && next < 0; k++) {
                int j = (i + k) % c->nurls;
                if (!tried[j])
                    next = j;
            }
            if (next < 0)
                break;
        }
        /* One controller: tried again only for a request whose answer
         * was lost after it may have been received, which its key makes
         * safe to send again (a few times: a controller that is gone
         * refuses the connection, and that is not retried). */
        bool lost_answer = rq->idempotency_key && rs->maybe_received &&
                           ++resent <= IDEMPOTENT_RESENDS;
        if ((c->nurls < 2 && !lost_answer) || c->aborted ||
            clock_mono_ms() >= deadline)
            break;
        pause_ms(FAILOVER_PAUSE_MS);
        next = c->cur;
    }
    if (unlisted[0] && !c->aborted) {
        sh_errorf(err, SH_EUNAVAILABLE,
                  "the controller follows %.200s, which is not among the "
                  "controller URLs you configured (url = ..., or SHOAL_URL): "
                  "add it to the list to use it",
                  unlisted);
        return -1;
    }
    if (c->nurls > 1 && !c->aborted) {
        char first[sizeof(err->msg)];
        snprintf(first, sizeof(first), "%s", err->msg);
        sh_errorf(err, SH_EUNAVAILABLE,
                  "no controller of the %d in the list served within %d s "
                  "(last: %s)",
                  c->nurls, window / 1000, first);
    }
    return -1;
}

static int call_raw(struct client *c, const char *method, const char *path,
                    const char *body, size_t body_len, const char *idem_key,
                    char **out, size_t *out_len, int *status,
                    struct sh_error *err)
{
    struct http_request rq = {
        .method = method,
        .path = path,
        .auth = c->auth_header[0] ? c->auth_header : NULL,
        .body = body,
        .body_len = body_len,
        .timeout_ms = c->timeout_ms,
        .idempotency_key = idem_key,
    };
    struct http_response rs = {0};
    if (status)
        *status = 0;
    if (failover_request(c, &rq, &rs, err) < 0) {
        if (status && rs.status)
            *status = rs.status;
        return -1;
    }
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

int client_call_raw(struct client *c, const char *method, const char *path,
                    const char *body, size_t body_len, char **out,
                    size_t *out_len, int *status, struct sh_error *err)
{
    return call_raw(c, method, path, body, body_len, NULL, out, out_len, status,
                    err);
}

static int call_json(struct client *c, const char *method, const char *path,
                     const json_t *body, const char *idem_key, json_t **out,
                     int *status, struct sh_error *err);

int client_call(struct client *c, const char *method, const char *path,
                const json_t *body, json_t **out, int *status,
                struct sh_error *err)
{
    return call_json(c, method, path, body, NULL, out, status, err);
}

int client_call_once(struct client *c, const char *path, const json_t *body,
                     json_t **out, int *status, struct sh_error *err)
{
    /* 128 random bits: no two submissions of any client share one. */
    uint8_t raw[16];
    char key[2 * sizeof(raw) + 8];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return call_json(c, "POST", path, body, NULL, out, status, err);
    int n = snprintf(key, sizeof(key), "cli-");
    for (size_t i = 0; i < sizeof(raw); i++)
        n += snprintf(key + n, sizeof(key) - (size_t)n, "%02x", raw[i]);
    return call_json(c, "POST", path, body, key, out, status, err);
}

static int call_json(struct client *c, const char *method, const char *path,
                     const json_t *body, const char *idem_key, json_t **out,
                     int *status, struct sh_error *err)
{
    char *text = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        if (!text)
            return sh_errorf(err, SH_EINTERNAL, "out of memory");
    }
    char *resp = NULL;
    size_t len = 0;
    int rc = call_raw(c, method, path, text, text ? strlen(text) : 0, idem_key,
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
