/* SPDX-License-Identifier: Apache-2.0 */
/* One HTTP connection to the controller, chosen by URL scheme: the built-in
 * HTTP/1.1 client for http://, libcurl (dlopen) for https://. Internal to
 * lib/client. */
#ifndef SHOAL_CLIENT_HTTP_H
#define SHOAL_CLIENT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/util/error.h"

struct http_conn;

struct http_request {
    const char *method;
    const char *path; /* starts with '/'; may hold a query string */
    const char *auth; /* the Authorization header value, or NULL */
    const char *body; /* JSON, or NULL */
    size_t body_len;
    int timeout_ms; /* 0 = none */
    /* The Idempotency-Key header, or NULL: with one, the request may be
     * sent again when its answer was lost (the controller answers with
     * what the first one made). */
    const char *idempotency_key;
};

struct http_response {
    int status;
    char *body; /* NUL-terminated; caller frees */
    size_t body_len;
    /* Set by the transport on success and on failure: false when the
     * request surely never reached a server (no connection could be
     * made), so it may be sent to another controller without being done
     * twice. */
    bool maybe_received;
};

struct http_conn *http_conn_create(const char *url, const char *ca_file,
                                   struct sh_error *err);
void http_conn_destroy(struct http_conn *c);
int http_conn_request(struct http_conn *c, const struct http_request *rq,
                      struct http_response *rs, struct sh_error *err);

/* The two transports. */
struct http_conn *http_plain_create(const char *url, struct sh_error *err);
struct http_conn *http_curl_create(const char *url, const char *ca_file,
                                   struct sh_error *err);

/* Every transport's connection starts with this. */
struct http_ops {
    void (*destroy)(struct http_conn *c);
    int (*request)(struct http_conn *c, const struct http_request *rq,
                   struct http_response *rs, struct sh_error *err);
    void (*abort)(struct http_conn *c); /* may be NULL */
};
struct http_conn {
    const struct http_ops *ops;
};

#endif
