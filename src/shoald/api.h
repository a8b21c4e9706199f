/* SPDX-License-Identifier: Apache-2.0 */
/* The REST API server (libmicrohttpd, driven from the controller's loop).
 * api.c owns the HTTP mechanics: routing, body limits, authentication,
 * the error body, and deferring answers until the group commit is durable.
 * Handlers live in api_<resource>.c and see only struct api_req.
 *
 * A handler validates, changes state (adding store writes to the open
 * batch), and sets the answer with api_reply_json() or api_reply_error().
 * The answer leaves only after the batch is durable. A handler may instead
 * hold the request (long-poll) with api_hold() and answer later with
 * api_reply_json() + api_release().
 */
#ifndef SHOAL_SHOALD_API_H
#define SHOAL_SHOALD_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/util/error.h"
#include "shoald/auth.h"
#include "shoald/shoald.h"

struct api;
struct api_req;

/* Who may call a route. */
enum api_access {
    API_ACCESS_PUBLIC, /* anyone */
    API_ACCESS_USER,   /* any user; the handler checks finer rules */
    API_ACCESS_ADMIN,  /* cluster admins */
    API_ACCESS_AGENT,  /* node agents */
    API_ACCESS_JOIN,   /* the join token, or a node agent re-registering */
};

typedef void (*api_handler_f)(struct shoald *d, struct api_req *req);

struct api_route {
    const char *method;
    const char *pattern; /* "/v1/jobs/{}" : {} matches one path segment */
    api_handler_f handler;
    enum api_access access;
};

/* Start listening on cfg->listen_addr:cfg->port (0 = any free port) and
 * register with the loop. The bound port is in api_port(). */
struct api *api_create(struct shoald *d, const struct api_route *routes,
                       struct sh_error *err);
/* Answer every held request with 503 and stop. NULL-safe. */
void api_destroy(struct api *api);
int api_port(const struct api *api);

/* API requests handled so far. */
uint64_t api_requests(const struct api *api);

/* How many connections are suspended (held or waiting for a commit). */
int api_suspended(const struct api *api);

/* Called by the loop before sleeping: run MHD once more for connections
 * resumed by the commit. Returns the ms until MHD needs to run, or -1. */
int api_before_sleep(struct api *api);

/* ---- for handlers ---- */

const struct api_caller *api_caller(const struct api_req *req);
/* The Nth "{}" segment of the path (0-based), NULL when absent. */
const char *api_param(const struct api_req *req, int n);
/* A query-string argument, NULL when absent. Borrowed for the call. */
const char *api_query(const struct api_req *req, const char *key);
/* A request header (case-insensitive name), or NULL. */
const char *api_header(const struct api_req *req, const char *name);
/* The parsed JSON body; NULL (and an answer already set) when the body is
 * missing or not JSON. Borrowed until the request ends. */
json_t *api_body(struct api_req *req);
/* The raw body; borrowed. */
const char *api_body_raw(const struct api_req *req, size_t *len);
/* The peer's IP address as text. */
const char *api_peer(const struct api_req *req);

/* Set the answer. api_reply_json steals body. */
void api_reply_json(struct api_req *req, int status, json_t *body);
void api_reply_text(struct api_req *req, int status, const char *ctype,
                    char *body, size_t len); /* takes ownership of body */
/* {"error":{"code","message"}} with the status for err->code. */
void api_reply_error(struct api_req *req, const struct sh_error *err);
int api_errorf(struct api_req *req, enum sh_errc code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool api_replied(const struct api_req *req);

/* Hold the request without an answer (long-poll). The handler keeps req
 * and must call api_release() once (after api_reply_*), at the latest when
 * the api shuts down (api_destroy answers held requests itself). */
void api_hold(struct api_req *req);
void api_release(struct api_req *req);
/* api_release once every change made so far is durable (the answer may
 * describe one that is not yet): a failed commit turns the answer into 503
 * (the client asks again). */
void api_release_durable(struct api_req *req);

/* An opaque per-request slot for the handler that holds it. */
void api_set_user_data(struct api_req *req, void *data);
void *api_get_user_data(const struct api_req *req);

/* The HTTP status for an error code (api_error.c). */
int api_status_for(enum sh_errc code);
/* The error body {"error": {"code", "message"}} for err (SH_OK counts as
 * internal), its status in *status; NULL when memory is short. */
json_t *api_error_body(const struct sh_error *err, int *status);

#endif
