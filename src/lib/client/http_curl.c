/* SPDX-License-Identifier: Apache-2.0 */
/* The https:// transport: libcurl, loaded with dlopen on first use so that
 * programs which never speak TLS do not pay for loading it (client.h). Only
 * curl.h's types are used at compile time; nothing links libcurl. */
#include <curl/curl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/client/client.h"
#include "lib/client/http.h"
#include "lib/util/strbuf.h"

struct curl_fns {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *h);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
    void (*easy_reset)(CURL *h);
    void (*easy_cleanup)(CURL *h);
    const char *(*easy_strerror)(CURLcode rc);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
};

struct http_curl {
    struct http_conn base; /* must be first */
    void *lib;
    struct curl_fns f;
    CURL *h;
    char url[512];
    char ca_file[512];
};

static int load_curl(struct http_curl *c, struct sh_error *err)
{
    c->lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!c->lib)
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "https needs libcurl (Debian: libcurl4): %s",
                         dlerror());
#define LOAD(field, name)                                                      \
    do {                                                                       \
        *(void **)&c->f.field = dlsym(c->lib, name);                           \
        if (!c->f.field)                                                       \
            return sh_errorf(err, SH_EUNAVAILABLE, "libcurl lacks %s", name);  \
    } while (0)
    LOAD(global_init, "curl_global_init");
    LOAD(easy_init, "curl_easy_init");
    LOAD(easy_setopt, "curl_easy_setopt");
    LOAD(easy_perform, "curl_easy_perform");
    LOAD(easy_getinfo, "curl_easy_getinfo");
    LOAD(easy_reset, "curl_easy_reset");
    LOAD(easy_cleanup, "curl_easy_cleanup");
    LOAD(easy_strerror, "curl_easy_strerror");
    LOAD(slist_append, "curl_slist_append");
    LOAD(slist_free_all, "curl_slist_free_all");
#undef LOAD
    if (c->f.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return sh_errorf(err, SH_EUNAVAILABLE, "libcurl failed to start");
    c->h = c->f.easy_init();
    if (!c->h)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

static size_t on_data(char *ptr, size_t size, size_t n, void *arg)
{
    struct strbuf *sb = arg;
    return strbuf_append(sb, ptr, size * n) < 0 ? 0 : size * n;
}

static int curl_request(struct http_conn *conn, const struct http_request *rq,
                        struct http_response *rs, struct sh_error *err)
{
    struct http_curl *c = (struct http_curl *)conn;
    char url[1024], auth[320], idem[96];
    struct strbuf body;
    struct curl_slist *hdrs = NULL;
    snprintf(url, sizeof(url), "%s%s", c->url, rq->path);
    strbuf_init(&body, CLIENT_MAX_RESPONSE);
    c->f.easy_reset(c->h);
    c->f.easy_setopt(c->h, CURLOPT_URL, url);
    c->f.easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, rq->method);
    c->f.easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    c->f.easy_setopt(c->h, CURLOPT_TIMEOUT_MS, (long)rq->timeout_ms);
    c->f.easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_data);
    c->f.easy_setopt(c->h, CURLOPT_WRITEDATA, &body);
    if (c->ca_file[0])
        c->f.easy_setopt(c->h, CURLOPT_CAINFO, c->ca_file);
    if (rq->auth) {
        snprintf(auth, sizeof(auth), "Authorization: %s", rq->auth);
        hdrs = c->f.slist_append(hdrs, auth);
    }
    if (rq->idempotency_key) {
        snprintf(idem, sizeof(idem), "Idempotency-Key: %s",
                 rq->idempotency_key);
        hdrs = c->f.slist_append(hdrs, idem);
    }
    if (rq->body) {
        hdrs = c->f.slist_append(hdrs, "Content-Type: application/json");
        c->f.easy_setopt(c->h, CURLOPT_POSTFIELDS, rq->body);
        c->f.easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, (long)rq->body_len);
    }
    c->f.easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
    CURLcode rc = c->f.easy_perform(c->h);
    c->f.slist_free_all(hdrs);
    rs->maybe_received =
        rc != CURLE_COULDNT_CONNECT && rc != CURLE_COULDNT_RESOLVE_HOST;
    if (rc != CURLE_OK) {
        strbuf_fini(&body);
        if (rc == CURLE_COULDNT_CONNECT)
            return sh_errorf(err, SH_EUNAVAILABLE,
                             "cannot reach shoald at %s: connection refused "
                             "(is it running? start a local cluster with "
                             "`shoal up`)",
                             c->url);
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot reach shoald at %s: %s",
                         c->url, c->f.easy_strerror(rc));
    }
    long status = 0;
    c->f.easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
    rs->status = (int)status;
    rs->body_len = body.len;
    rs->body = strbuf_take(&body);
    return rs->body ? 0 : sh_errorf(err, SH_EINTERNAL, "out of memory");
}

static void curl_destroy(struct http_conn *conn)
{
    struct http_curl *c = (struct http_curl *)conn;
    if (c->h)
        c->f.easy_cleanup(c->h);
    /* libcurl stays loaded: its global state cannot be unloaded safely. */
    free(c);
}

static const struct http_ops curl_ops = {
    .destroy = curl_destroy,
    .request = curl_request,
};

struct http_conn *http_curl_create(const char *url, const char *ca_file,
                                   struct sh_error *err)
{
    struct http_curl *c = calloc(1, sizeof(*c));
    if (!c) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    c->base.ops = &curl_ops;
    snprintf(c->url, sizeof(c->url), "%s", url);
    size_t n = strlen(c->url);
    while (n && c->url[n - 1] == '/')
        c->url[--n] = '\0';
    if (ca_file)
        snprintf(c->ca_file, sizeof(c->ca_file), "%s", ca_file);
    if (load_curl(c, err) < 0) {
        curl_destroy(&c->base);
        return NULL;
    }
    return &c->base;
}
