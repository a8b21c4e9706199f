/* SPDX-License-Identifier: Apache-2.0 */
/* The REST client used by the CLI and the agent: JSON in, JSON out, errors
 * from the API's {"error":{"code","message"}} body turned into sh_error.
 *
 * Transport. For http:// URLs a small built-in HTTP/1.1 client on a kept-
 * alive socket; for https:// libcurl, loaded with dlopen on first use. The
 * reason: linking libcurl (and its 30-odd libraries) costs ~4 ms at every
 * process start, as long as a whole `sbatch`, and the CLI's target is to
 * submit several times faster than that. The agent, a long-running daemon,
 * uses the same code.
 */
#ifndef SHOAL_CLIENT_CLIENT_H
#define SHOAL_CLIENT_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "lib/util/error.h"

/* The largest response body accepted (logs come in pages below this). */
#define CLIENT_MAX_RESPONSE (64u << 20)
/* Controllers in one client's URL list. */
#define CLIENT_MAX_URLS 8

struct client;

struct client_config {
    char url[512];
    char token[256];
    char ca_file[512]; /* CA bundle for https with a private CA; "" = system */
    char source[600];  /* where url came from, for messages */
};

/* Find the controller's URL and token: SHOAL_URL / SHOAL_TOKEN in the
 * environment, else $XDG_CONFIG_HOME/shoal/config (default
 * ~/.config/shoal/config) with lines "url = ..." (one URL, or every
 * controller of a highly available cluster: "url = URL, URL"), "token = ..." and
 * optionally "ca = FILE" (SHOAL_CA in the environment). Fails
 * with a message that says how to get a cluster when nothing is found. */
int client_config_load(struct client_config *cfg, struct sh_error *err);

/* The config file's path. */
void client_config_path(char *buf, size_t size);

/* url is one controller URL or a list "URL, URL, ..." of the controllers
 * of one highly available cluster (doc/design/ha.md). A call goes to the
 * controller that served last; when it cannot be reached (and the request
 * surely did not arrive, or is a GET), or answers as a follower (503 with
 * {"leader": URL}), the call goes to the leader it names when that is in
 * the list (the token goes along: never to a URL only an answer gave;
 * a leader outside the list is an error that names it), else the next
 * URL, in rounds 200 ms apart until one serves or the call's timeout (30 s
 * without one) is over. A single URL that cannot be reached fails at once.
 * url and token are copied; ca_file may be NULL. */
struct client *client_create(const char *url, const char *token,
                             const char *ca_file, struct sh_error *err);
void client_destroy(struct client *c);

/* Interrupt a call blocked in another thread (its socket is shut down;
 * the call fails). The only function safe to call from another thread.
 * Plain http only: an https call runs to its timeout. */
void client_abort(struct client *c);

/* Per-call timeout in ms (default 30 s; 0 = none). */
void client_set_timeout(struct client *c, int timeout_ms);

/* The URL of the controller that served last (the first before any). */
const char *client_url(const struct client *c);

/* Call METHOD path with an optional JSON body (borrowed). On a 2xx answer
 * *out is the parsed body (NULL when empty; caller decrefs) and 0 is
 * returned. Otherwise -1 and err holds the API's message, or a message
 * about the connection (which URL, and to start `shoal up` when nothing
 * listens there). *status (may be NULL) is the HTTP status or 0. */
int client_call(struct client *c, const char *method, const char *path,
                const json_t *body, json_t **out, int *status,
                struct sh_error *err);

/* As client_call for a POST to path that must take effect at most once
 * (a submission): it carries a fresh Idempotency-Key, so when its answer
 * is lost (the connection broke after sending, the controller failed
 * over) it is sent again, to the same controller or the next, and the
 * controller answers with what the first one made. */
int client_call_once(struct client *c, const char *path, const json_t *body,
                     json_t **out, int *status, struct sh_error *err);

/* As client_call, but the raw answer body (caller frees) for non-JSON
 * endpoints (logs, metrics). */
int client_call_raw(struct client *c, const char *method, const char *path,
                    const char *body, size_t body_len, char **out,
                    size_t *out_len, int *status, struct sh_error *err);

/* URL-encode s into buf for a query string. */
void client_urlencode(const char *s, char *buf, size_t size);

#endif
