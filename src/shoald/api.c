/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP mechanics of the REST API (see api.h): libmicrohttpd in external
 * epoll mode inside the controller's loop, routing, bounded bodies, bearer
 * authentication, error bodies, and answers deferred until the group commit
 * that holds their change is durable (suspend, commit, resume). */
#include "shoald/api.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "lib/loop/loop.h"
#include "lib/util/clock.h"
#include "lib/util/log.h"
#include "lib/util/strbuf.h"
#include "shoald/api_handlers.h"
#include "shoald/auth.h"
#include "shoald/ha.h"
#include "shoald/commit.h"

#define API_MAX_PARAMS 4
/* All connections together. One address may hold at most
 * cfg.max_conns_per_address of them, so a single client cannot take them
 * all; connections that send no whole request are dropped after
 * cfg.request_timeout_s of silence. */
#define API_MAX_CONNECTIONS 4096
/* libmicrohttpd logs every refused connection: under a flood, one line per
 * message text per this interval, then how many were left out. */
#define API_LOG_REPEAT_MS 10000

/* How often the request deadlines are checked, and how long an answer may
 * take to leave, in request deadlines (a slow reader's bound). */
#define API_DEADLINE_TICK_MS 500
#define API_SEND_DEADLINES 4

/* Where a connection is, for its deadline. Silence alone is MHD's
 * timeout, which every byte resets; this bounds the whole time. */
enum conn_phase {
    CONN_IDLE = 0,  /* open or after an answer: no request line yet */
    CONN_RECEIVING, /* a request line came: headers and body */
    CONN_HANDLING,  /* received whole: handled, held or waiting (no bound) */
    CONN_SENDING,   /* its answer is queued: the client reads it */
};

struct conn_track {
    struct MHD_Connection *conn;
    int fd;
    enum conn_phase phase;
    int64_t since_ms; /* when the phase began */
    bool cut;         /* shut down for a deadline */
    struct conn_track *prev, *next;
};

enum req_phase {
    PHASE_READING = 0, /* receiving the body */
    PHASE_WAITING,     /* answered, waiting for the commit */
    PHASE_HELD,        /* long-poll, no answer yet */
    PHASE_READY,       /* resumed: queue the answer on the next call */
};

struct api_req {
    struct api *api;
    struct MHD_Connection *conn;
    char method[8];
    const char *url; /* borrowed from MHD for the request */
    char *params[API_MAX_PARAMS];
    int nparams;
    struct strbuf body;
    bool too_large;
    bool bad_path; /* the path holds a control byte (raw or %XX) */
    json_t *json;
    struct api_caller caller;
    enum req_phase phase;
    int status;
    char *resp;
    size_t resp_len;
    const char *ctype;
    bool has_resp;
    void *user_data;
    char peer[64];
};

struct api {
    struct shoald *d;
    const struct api_route *routes;
    struct MHD_Daemon *mhd;
    int epoll_fd;
    int port;
    char *tls_cert;
    char *tls_key;
    uint64_t requests;
    int suspended;            /* connections suspended (held or waiting) */
    struct conn_track *conns; /* every open connection */
    int64_t deadline_timer;
    uint64_t cut_count; /* connections shut for a deadline */
    /* mhd_log's repeat filter */
    const char *log_fmt;
    int64_t log_ms;
    long log_repeats;
};

static void conn_phase(struct api *api, struct MHD_Connection *conn,
                       enum conn_phase phase);

/* ---- answers ---- */

static void set_resp(struct api_req *req, int status, const char *ctype,
                     char *body, size_t len)
{
    free(req->resp);
    req->status = status;
    req->ctype = ctype;
    req->resp = body;
    req->resp_len = len;
    req->has_resp = true;
}

void api_reply_json(struct api_req *req, int status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        sh_log(LOG_ERR, "api", "cannot encode the answer status=%d", status);
        static const char oom[] =
            "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";
        text = strdup(oom);
        status = 500;
    }
    set_resp(req, status, "application/json", text, text ? strlen(text) : 0);
}

void api_reply_text(struct api_req *req, int status, const char *ctype,
                    char *body, size_t len)
{
    set_resp(req, status, ctype, body, len);
}

bool api_replied(const struct api_req *req)
{
    return req->has_resp;
}

/* ---- accessors ---- */

const struct api_caller *api_caller(const struct api_req *req)
{
    return &req->caller;
}

const char *api_param(const struct api_req *req, int n)
{
    return n < req->nparams ? req->params[n] : NULL;
}

const char *api_query(const struct api_req *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *api_header(const struct api_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *api_body_raw(const struct api_req *req, size_t *len)
{
    if (len)
        *len = req->body.len;
    return strbuf_str(&req->body);
}

const char *api_peer(const struct api_req *req)
{
    return req->peer;
}

json_t *api_body(struct api_req *req)
{
    if (req->json)
        return req->json;
    if (req->body.len == 0) {
        api_errorf(req, SH_EINVAL, "the request needs a JSON body");
        return NULL;
    }
    json_error_t jerr;
    req->json = json_loadb(req->body.data, req->body.len,
                           JSON_REJECT_DUPLICATES, &jerr);
    if (!req->json)
        api_errorf(req, SH_EINVAL, "malformed JSON at line %d column %d: %s",
                   jerr.line, jerr.column, jerr.text);
    return req->json;
}

void api_set_user_data(struct api_req *req, void *data)
{
    req->user_data = data;
}

void *api_get_user_data(const struct api_req *req)
{
    return req->user_data;
}

/* ---- holding and resuming ---- */

void api_hold(struct api_req *req)
{
    req->phase = PHASE_HELD;
}

void api_release(struct api_req *req)
{
    if (!req->has_resp)
        api_errorf(req, SH_EUNAVAILABLE, "the controller is shutting down");
    req->phase = PHASE_READY;
    req->api->suspended--;
    MHD_resume_connection(req->conn);
}

static void on_committed(bool ok, void *arg)
{
    struct api_req *req = arg;
    if (!ok)
        api_errorf(req, SH_EUNAVAILABLE,
                   "the change could not be stored durably and was not made; "
                   "try again");
    req->phase = PHASE_READY;
    req->api->suspended--;
    MHD_resume_connection(req->conn);
}

void api_release_durable(struct api_req *req)
{
    struct commit *c = req->api->d->commit;
    if (c && commit_after(c, on_committed, req) == 0) {
        /* Stays suspended (and counted) until the commit has ended. */
        req->phase = PHASE_WAITING;
        return;
    }
    api_release(req);
}

/* ---- routing ---- */

/* Match path against pattern, filling req->params. */
static bool route_match(const char *pattern, const char *path,
                        struct api_req *req)
{
    const char *p = pattern;
    const char *s = path;
    int nparams = 0;
    char *params[API_MAX_PARAMS];
    while (*p && *s) {
        if (p[0] == '{' && p[1] == '}') {
            const char *end = strchr(s, '/');
            size_t n = end ? (size_t)(end - s) : strlen(s);
            if (n == 0 || nparams == API_MAX_PARAMS)
                goto nomatch;
            params[nparams] = strndup(s, n);
            if (!params[nparams])
                goto nomatch;
            nparams++;
            s += n;
            p += 2;
        } else if (*p == *s) {
            p++;
            s++;
        } else {
            goto nomatch;
        }
    }
    if (*p || (*s && strcmp(s, "/") != 0))
        goto nomatch;
    for (int i = 0; i < req->nparams; i++)
        free(req->params[i]);
    memcpy(req->params, params, sizeof(char *) * (size_t)nparams);
    req->nparams = nparams;
    return true;
nomatch:
    for (int i = 0; i < nparams; i++)
        free(params[i]);
    return false;
}

static const struct api_route *route_find(struct api *api, struct api_req *req,
                                          const char *url, bool *path_known)
{
    *path_known = false;
    for (const struct api_route *r = api->routes; r->method; r++) {
        if (!route_match(r->pattern, url, req))
            continue;
        *path_known = true;
        if (strcmp(r->method, req->method) == 0)
            return r;
    }
    return NULL;
}

static void authenticate(struct api *api, struct api_req *req)
{
    const char *h = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    memset(&req->caller, 0, sizeof(req->caller));
    if (!h)
        return;
    if (strncmp(h, "Bearer ", 7) != 0) {
        req->caller.role = API_ANON;
        return;
    }
    auth_identify(api->d->auth, h + 7, shoald_now_ms(api->d), &req->caller);
}

static int check_access(const struct api_route *r, struct api_req *req,
                        const char *auth_header)
{
    const struct api_caller *c = &req->caller;
    switch (r->access) {
    case API_ACCESS_PUBLIC:
        return 0;
    case API_ACCESS_AGENT:
        if (c->role == API_AGENT)
            return 0;
        break;
    case API_ACCESS_JOIN:
        if (c->role == API_JOIN || c->role == API_AGENT)
            return 0;
        break;
    case API_ACCESS_ADMIN:
        if (c->role == API_USER && c->admin)
            return 0;
        if (c->role == API_USER)
            return api_errorf(req, SH_EFORBIDDEN,
                              "only cluster admins may do this");
        break;
    case API_ACCESS_USER:
        if (c->role == API_USER)
            return 0;
        break;
    }
    if (c->role == API_ANON)
        return api_errorf(req, SH_EUNAUTH,
                          auth_header ? "the token is not valid (unknown, "
                                        "revoked or expired)"
                                      : "this needs a token: send "
                                        "'Authorization: Bearer TOKEN'");
    if (r->access == API_ACCESS_AGENT || r->access == API_ACCESS_JOIN)
        return api_errorf(req, SH_EFORBIDDEN,
                          "this endpoint is for node agents; a user token "
                          "cannot act as an agent");
    return api_errorf(req, SH_EFORBIDDEN,
                      "this endpoint is for users; an agent token cannot act "
                      "as a user");
}

/* A connection may stay silent for cfg.request_timeout_s (the daemon's
 * default) until it has sent a whole request with a valid token; from then
 * on for the longer cfg.keepalive_timeout_s, so agents and CLIs keep their
 * connections between calls while half-sent and anonymous connections are
 * closed soon. Held long-polls are suspended and do not time out. */
static void keep_alive_longer(struct api *api, struct api_req *req)
{
    int want = api->d->cfg.keepalive_timeout_s;
    if (want < api->d->cfg.request_timeout_s)
        return;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        req->conn, MHD_CONNECTION_INFO_CONNECTION_TIMEOUT);
    if (ci && ci->connection_timeout == (unsigned)want)
        return;
    MHD_set_connection_option(req->conn, MHD_CONNECTION_OPTION_TIMEOUT,
                              (unsigned)want);
}

/* A follower's answer to a call it does not serve: 503
 * {"error": {...}, "leader": URL or null}. */
static void reply_follower(struct shoald *d, struct api_req *req)
{
    bool following = strcmp(ha_role(d), "follower") == 0;
    const char *leader = following ? ha_leader_url(d) : "";
    char msg[700];
    if (d->stopping)
        snprintf(msg, sizeof(msg),
                 "this controller is stopping; try another controller");
    else if (leader[0])
        snprintf(msg, sizeof(msg),
                 "this controller is a follower; the leader is at %s", leader);
    else
        snprintf(msg, sizeof(msg),
                 "this controller is not the leader and knows no leader "
                 "right now; try another controller or again in a moment");
    api_reply_json(req, 503,
                   json_pack("{s:{s:s, s:s}, s:s?}", "error", "code",
                             "unavailable", "message", msg, "leader",
                             leader[0] && !d->stopping ? leader : NULL));
}

static void dispatch(struct api *api, struct api_req *req)
{
    if (req->too_large) {
        api_errorf(req, SH_ETOOLARGE,
                   "the request body is larger than the limit of %zu bytes",
                   api->d->cfg.max_body);
        return;
    }
    if (req->bad_path) {
        api_errorf(req, SH_EINVAL,
                   "the path holds a control character (a byte below 0x20 or "
                   "0x7f, raw or as %%XX such as %%00)");
        return;
    }
    /* Strip the query string: MHD gives the path without it already. */
    bool known;
    const struct api_route *r = route_find(api, req, req->url, &known);
    if (!r) {
        if (known)
            api_errorf(req, SH_EINVAL, "method %s is not allowed on %s",
                       req->method, req->url);
        else
            api_errorf(req, SH_ENOTFOUND, "no such endpoint: %s %s",
                       req->method, req->url);
        if (known)
            req->status = 405;
        return;
    }
    /* A follower serves its health only; a stopping controller of a
     * highly available cluster sends clients on to another one. */
    if (api->d->stopping && ha_serving(api->d)) {
        api_errorf(req, SH_EUNAVAILABLE, "the controller is shutting down");
        return;
    }
    if (!ha_serving(api->d) && (r->handler != api_health || api->d->stopping)) {
        reply_follower(api->d, req);
        return;
    }
    authenticate(api, req);
    if (req->caller.role != API_ANON)
        keep_alive_longer(api, req);
    const char *h = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    if (check_access(r, req, h) < 0)
        return;
    r->handler(api->d, req);
    if (!req->has_resp && req->phase != PHASE_HELD)
        api_errorf(req, SH_EINTERNAL, "the handler gave no answer");
}

/* ---- MHD callbacks ---- */

static enum MHD_Result queue_answer(struct api_req *req)
{
    conn_phase(req->api, req->conn, CONN_SENDING);
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        req->resp_len, req->resp, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return MHD_NO;
    req->resp = NULL; /* MHD owns it now */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, req->ctype);
    enum MHD_Result rc =
        MHD_queue_response(req->conn, (unsigned)req->status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static struct api_req *req_create(struct api *api, struct MHD_Connection *conn,
                                  const char *method)
{
    struct api_req *req = calloc(1, sizeof(*req));
    if (!req)
        return NULL;
    req->api = api;
    req->conn = conn;
    snprintf(req->method, sizeof(req->method), "%s", method);
    strbuf_init(&req->body, api->d->cfg.max_body);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
                      req->peer, sizeof(req->peer));
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
                      req->peer, sizeof(req->peer));
    }
    return req;
}

/* ---- the whole-request deadline ---- */

static struct conn_track *track_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void conn_phase(struct api *api, struct MHD_Connection *conn,
                       enum conn_phase phase)
{
    struct conn_track *t = track_of(conn);
    if (t && t->phase != phase) {
        t->phase = phase;
        t->since_ms = shoald_now_ms(api->d);
    }
}

/* MHD_OPTION_NOTIFY_CONNECTION: keep the list of open connections. */
static void on_connection(void *cls, struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct api *api = cls;
    struct conn_track *t = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        t = calloc(1, sizeof(*t));
        if (!t)
            return; /* out of memory: this one has MHD's timeout only */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        t->conn = conn;
        t->fd = ci ? ci->connect_fd : -1;
        t->since_ms = shoald_now_ms(api->d);
        t->next = api->conns;
        if (api->conns)
            api->conns->prev = t;
        api->conns = t;
        *socket_context = t;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && t) {
        if (t->prev)
            t->prev->next = t->next;
        else
            api->conns = t->next;
        if (t->next)
            t->next->prev = t->prev;
        free(t);
        *socket_context = NULL;
    }
}

/* The most ms a connection may spend in its phase: a request line must
 * come within the silence the connection is allowed (MHD's timeout: the
 * request timeout, or the keep-alive one after a request with a valid
 * token) plus the deadline, a whole request within the deadline of its
 * request line, an answer within API_SEND_DEADLINES deadlines; 0: none. */
static int64_t phase_limit_ms(const struct api *api, const struct conn_track *t)
{
    int64_t deadline = (int64_t)api->d->cfg.request_deadline_s * 1000;
    switch (t->phase) {
    case CONN_IDLE: {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
            t->conn, MHD_CONNECTION_INFO_CONNECTION_TIMEOUT);
        int64_t idle = ci ? (int64_t)ci->connection_timeout * 1000 : 0;
        return idle + deadline;
    }
    case CONN_RECEIVING:
        return deadline;
    case CONN_SENDING:
        return deadline * API_SEND_DEADLINES;
    case CONN_HANDLING:
        break;
    }
    return 0;
}

/* Shut every connection past its phase's limit: MHD sees the end of the
 * stream and closes it (a suspended one is never past: it is handling). */
static int64_t check_deadlines(struct loop *loop, void *arg)
{
    struct api *api = arg;
    (void)loop;
    int64_t now = shoald_now_ms(api->d);
    int cut = 0;
    for (struct conn_track *t = api->conns; t; t = t->next) {
        int64_t limit = phase_limit_ms(api, t);
        if (t->cut || !limit || t->fd < 0 || now - t->since_ms <= limit)
            continue;
        /* A reset, not a close that still delivers what the kernel
         * holds: a slow reader gets nothing more. */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(t->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        shutdown(t->fd, SHUT_RDWR);
        /* MHD may wait for a write that never comes: its own timeout
         * closes the connection a second later at most. */
        MHD_set_connection_option(t->conn, MHD_CONNECTION_OPTION_TIMEOUT, 1u);
        t->cut = true;
        cut++;
    }
    if (cut) {
        api->cut_count += (uint64_t)cut;
        sh_log(LOG_WARNING, "api",
               "closed %d connection(s) past the request deadline of %ds "
               "(slow senders or readers; %llu so far)",
               cut, api->d->cfg.request_deadline_s,
               (unsigned long long)api->cut_count);
    }
    return API_DEADLINE_TICK_MS;
}

/* What the URI callback leaves as a request's context when its path holds
 * a control byte: MHD decodes %00 into a NUL that would end the path (so
 * /v1/jobs/1%00 read as /v1/jobs/1), and no path segment needs one. */
static char bad_path_mark;

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* MHD_OPTION_URI_LOG_CALLBACK: sees the URI as sent, before decoding. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    /* The request line came: the rest of the request has the deadline. */
    conn_phase(cls, conn, CONN_RECEIVING);
    for (const char *p = uri; *p && *p != '?'; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f)
            return &bad_path_mark;
        if (c == '%' && hex_value(p[1]) >= 0 && hex_value(p[2]) >= 0) {
            int v = hex_value(p[1]) * 16 + hex_value(p[2]);
            if (v < 0x20 || v == 0x7f)
                return &bad_path_mark;
        }
    }
    return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct api *api = cls;
    bool bad_path = *con_cls == &bad_path_mark;
    struct api_req *req = bad_path ? NULL : *con_cls;
    (void)version;
    sh_debug("api", "call %s %s req=%p phase=%d upload=%zu", method, url,
             (void *)req, req ? (int)req->phase : -1, *upload_size);
    if (!req) {
        req = req_create(api, conn, method);
        if (!req)
            return MHD_NO;
        req->bad_path = bad_path;
        *con_cls = req;
        return MHD_YES;
    }
    if (req->phase == PHASE_READY)
        return queue_answer(req);
    if (*upload_size) {
        if (!req->too_large &&
            strbuf_append(&req->body, upload, *upload_size) < 0) {
            req->too_large = true;
            strbuf_fini(&req->body);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    req->url = url;
    api->requests++;
    conn_phase(api, conn, CONN_HANDLING);
    dispatch(api, req);
    if (req->phase == PHASE_HELD) {
        api->suspended++;
        MHD_suspend_connection(conn);
        return MHD_YES;
    }
    if (api->d->commit && commit_dirty(api->d->commit)) {
        /* The answer may describe a change that is not durable yet: it
         * waits for the commit at the end of this loop iteration. */
        if (commit_after(api->d->commit, on_committed, req) == 0) {
            req->phase = PHASE_WAITING;
            api->suspended++;
            MHD_suspend_connection(conn);
            return MHD_YES;
        }
    }
    return queue_answer(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct api_req *req = *con_cls;
    (void)toe;
    conn_phase(cls, conn, CONN_IDLE);
    if (!req || *con_cls == &bad_path_mark) {
        *con_cls = NULL;
        return;
    }
    for (int i = 0; i < req->nparams; i++)
        free(req->params[i]);
    strbuf_fini(&req->body);
    json_decref(req->json);
    free(req->resp);
    free(req);
    *con_cls = NULL;
}

static void on_mhd_ready(struct loop *loop, int fd, uint32_t events, void *arg)
{
    struct api *api = arg;
    (void)loop;
    (void)fd;
    (void)events;
    MHD_run(api->mhd);
}

int api_before_sleep(struct api *api)
{
    MHD_run(api->mhd);
    MHD_UNSIGNED_LONG_LONG timeout;
    if (MHD_get_timeout(api->mhd, &timeout) == MHD_YES)
        return timeout > 60000 ? 60000 : (int)timeout;
    return -1;
}

int api_port(const struct api *api)
{
    return api->port;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct api *api = cls;
    char buf[512];
    int64_t now = clock_mono_ms();
    if (fmt == api->log_fmt && now - api->log_ms < API_LOG_REPEAT_MS) {
        api->log_repeats++;
        return;
    }
    if (api->log_repeats)
        sh_log(LOG_WARNING, "http",
               "(the message before was repeated %ld more times)",
               api->log_repeats);
    api->log_fmt = fmt;
    api->log_ms = now;
    api->log_repeats = 0;
    vsnprintf(buf, sizeof(buf), fmt, ap);
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '\n')
        buf[--n] = '\0';
    /* libmicrohttpd says the same when one address is over its limit. */
    sh_log(LOG_WARNING, "http", "%s%s", buf,
           strstr(buf, "connection limit")
               ? " (all connections, or --max-conns-per-address from one "
                 "address)"
               : "");
}

static char *read_file(const char *path, struct sh_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        sh_errorf(err, SH_EINVAL, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    struct strbuf sb;
    strbuf_init(&sb, 1 << 20);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        if (strbuf_append(&sb, buf, n) < 0) {
            sh_errorf(err, SH_ETOOLARGE, "%s is larger than 1 MiB", path);
            strbuf_fini(&sb);
            fclose(f);
            return NULL;
        }
    }
    fclose(f);
    return strbuf_take(&sb);
}

static int listen_addr(const char *addr, int port, struct sockaddr_storage *ss,
                       struct sh_error *err)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        return 0;
    }
    if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        return 0;
    }
    return sh_errorf(err, SH_EINVAL,
                     "listen address '%s' must be an IPv4 or IPv6 address",
                     addr);
}

struct api *api_create(struct shoald *d, const struct api_route *routes,
                       struct sh_error *err)
{
    struct api *api = calloc(1, sizeof(*api));
    struct sockaddr_storage ss;
    if (!api) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    api->d = d;
    api->routes = routes;
    if (listen_addr(d->cfg.listen_addr, d->cfg.port, &ss, err) < 0)
        goto error;
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO |
                     MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (d->cfg.tls_cert || d->cfg.tls_key) {
        if (!d->cfg.tls_cert || !d->cfg.tls_key) {
            sh_errorf(err, SH_EINVAL, "TLS needs both a certificate and a key");
            goto error;
        }
        api->tls_cert = read_file(d->cfg.tls_cert, err);
        if (!api->tls_cert)
            goto error;
        api->tls_key = read_file(d->cfg.tls_key, err);
        if (!api->tls_key)
            goto error;
        flags |= MHD_USE_TLS;
    }
    api->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, api, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, api, MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, api, MHD_OPTION_URI_LOG_CALLBACK, on_uri, api,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, api,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)API_MAX_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)d->cfg.max_conns_per_address, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)d->cfg.request_timeout_s, MHD_OPTION_LISTEN_BACKLOG_SIZE,
        (unsigned)1024,
        api->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END,
        api->tls_cert, MHD_OPTION_HTTPS_MEM_KEY, api->tls_key, MHD_OPTION_END);
    if (!api->mhd) {
        sh_errorf(err, SH_EUNAVAILABLE,
                  "cannot listen on %s port %d (in use, or not an address of "
                  "this machine?)",
                  d->cfg.listen_addr, d->cfg.port);
        goto error;
    }
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(api->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    api->epoll_fd = info->epoll_fd;
    info = MHD_get_daemon_info(api->mhd, MHD_DAEMON_INFO_BIND_PORT);
    api->port = info ? info->port : d->cfg.port;
    if (loop_add_fd(d->loop, api->epoll_fd, EPOLLIN, on_mhd_ready, api, err) <
        0)
        goto error;
    if (d->cfg.request_deadline_s > 0) {
        api->deadline_timer =
            loop_add_timer(d->loop, API_DEADLINE_TICK_MS, check_deadlines, api);
        if (api->deadline_timer < 0) {
            sh_errorf(err, SH_EINTERNAL, "out of memory");
            goto error;
        }
    }
    return api;
error:
    api_destroy(api);
    return NULL;
}

uint64_t api_requests(const struct api *api)
{
    return api->requests;
}

int api_suspended(const struct api *api)
{
    return api->suspended;
}

void api_destroy(struct api *api)
{
    if (!api)
        return;
    if (api->deadline_timer > 0)
        loop_del_timer(api->d->loop, api->deadline_timer);
    if (api->mhd) {
        /* Resumed connections leave the suspended list only in MHD_run. */
        MHD_run(api->mhd);
        loop_del_fd(api->d->loop, api->epoll_fd);
        MHD_stop_daemon(api->mhd);
    }
    free(api->tls_cert);
    free(api->tls_key);
    free(api);
}
