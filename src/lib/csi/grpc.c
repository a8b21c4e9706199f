/* SPDX-License-Identifier: Apache-2.0 */
/* One unary gRPC call over a unix socket with nghttp2 (see grpc.h). The
 * session is driven with mem_send/mem_recv over a non-blocking socket and
 * poll(), so one deadline covers connecting, sending and the answer. */
#include "lib/csi/grpc.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/util/clock.h"

struct call {
    const uint8_t *req; /* the 5-byte gRPC prefix, then the message */
    size_t req_len, req_off;
    uint8_t prefix[5];
    uint8_t *resp;
    size_t resp_len, resp_cap;
    int http_status;
    int grpc_status; /* -1 until the server sent one */
    char grpc_message[512];
    bool closed;
    int32_t stream;
};

static const char *const status_names[] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

const char *grpc_status_name(int status)
{
    return status >= 0 && (size_t)status <
                              sizeof(status_names) / sizeof(status_names[0])
               ? status_names[status]
               : "UNKNOWN";
}

/* The request body: the prefix (uncompressed, big-endian length), then
 * the message. */
static ssize_t read_body(nghttp2_session *s, int32_t stream, uint8_t *buf,
                         size_t size, uint32_t *flags, nghttp2_data_source *src,
                         void *arg)
{
    (void)s;
    (void)stream;
    (void)src;
    struct call *c = arg;
    size_t total = sizeof(c->prefix) + c->req_len, n = 0;
    while (n < size && c->req_off < total) {
        buf[n++] = c->req_off < sizeof(c->prefix)
                       ? c->prefix[c->req_off]
                       : c->req[c->req_off - sizeof(c->prefix)];
        c->req_off++;
    }
    if (c->req_off == total)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame,
                     const uint8_t *name, size_t nlen, const uint8_t *value,
                     size_t vlen, uint8_t flags, void *arg)
{
    (void)s;
    (void)frame;
    (void)flags;
    struct call *c = arg;
    char v[512];
    snprintf(v, sizeof(v), "%.*s", (int)vlen, (const char *)value);
    if (nlen == 7 && memcmp(name, ":status", 7) == 0)
        c->http_status = atoi(v);
    else if (nlen == 11 && memcmp(name, "grpc-status", 11) == 0)
        c->grpc_status = atoi(v);
    else if (nlen == 12 && memcmp(name, "grpc-message", 12) == 0)
        snprintf(c->grpc_message, sizeof(c->grpc_message), "%s", v);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t stream,
                   const uint8_t *data, size_t len, void *arg)
{
    (void)s;
    (void)flags;
    (void)stream;
    struct call *c = arg;
    if (c->resp_len + len > (16u << 20))
        return NGHTTP2_ERR_CALLBACK_FAILURE; /* no CSI answer is this big */
    if (c->resp_len + len > c->resp_cap) {
        size_t cap = (c->resp_len + len) * 2;
        uint8_t *p = realloc(c->resp, cap);
        if (!p)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        c->resp = p;
        c->resp_cap = cap;
    }
    memcpy(c->resp + c->resp_len, data, len);
    c->resp_len += len;
    return 0;
}

static int on_close(nghttp2_session *s, int32_t stream, uint32_t code,
                    void *arg)
{
    (void)s;
    (void)code;
    struct call *c = arg;
    if (stream == c->stream)
        c->closed = true;
    return 0;
}

static int fail(struct grpc_reply *r, int status, const char *what,
                const char *detail)
{
    r->status = status;
    snprintf(r->message, sizeof(r->message), "%s%s%s", what, detail ? ": " : "",
             detail ? detail : "");
    return status;
}

static int connect_unix(const char *path, struct grpc_reply *r)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        fail(r, GRPC_UNAVAILABLE, "socket path too long", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    /* Non-blocking from the start: a plugin that stopped accepting with a
     * full backlog answers EAGAIN instead of holding connect() for ever. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        char msg[600];
        snprintf(msg, sizeof(msg), "cannot connect to %s", path);
        fail(r, GRPC_UNAVAILABLE, msg,
             errno == EAGAIN ? "the plugin accepts no connection"
                             : strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Write what nghttp2 has to send, by until (a plugin that stops reading
 * must not hold the caller past its deadline); false on a socket error or
 * when the deadline passed. */
static bool flush(nghttp2_session *s, int fd, int64_t until)
{
    const uint8_t *out;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(s, &out)) > 0) {
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = write(fd, out + off, (size_t)(n - off));
            if (w < 0 && errno == EAGAIN) {
                int64_t left = until - clock_mono_ms();
                if (left <= 0)
                    return false;
                struct pollfd p = {fd, POLLOUT, 0};
                poll(&p, 1, left < 1000 ? (int)left : 1000);
                continue;
            }
            if (w <= 0)
                return false;
            off += w;
        }
    }
    return n == 0;
}

static int exchange(nghttp2_session *s, int fd, struct call *c, int64_t until,
                    struct grpc_reply *r)
{
    while (!c->closed) {
        if (!flush(s, fd, until))
            return clock_mono_ms() >= until
                       ? fail(r, GRPC_DEADLINE_EXCEEDED,
                              "the plugin took no request in time", NULL)
                       : fail(r, GRPC_UNAVAILABLE,
                              "the plugin closed the socket", NULL);
        int64_t left = until - clock_mono_ms();
        if (left <= 0)
            return fail(r, GRPC_DEADLINE_EXCEEDED, "no answer in time", NULL);
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        uint8_t buf[16384];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return fail(r, GRPC_UNAVAILABLE, "the plugin closed the socket",
                        NULL);
        if (nghttp2_session_mem_recv(s, buf, (size_t)n) < 0)
            return fail(r, GRPC_INTERNAL, "bad HTTP/2 from the plugin", NULL);
    }
    return 0;
}

int grpc_call(const char *socket_path, const char *path, const uint8_t *req,
              size_t len, int timeout_ms, struct grpc_reply *r)
{
    memset(r, 0, sizeof(*r));
    int64_t until = clock_mono_ms() + timeout_ms;
    int fd = connect_unix(socket_path, r);
    if (fd < 0)
        return r->status;
    struct call c;
    memset(&c, 0, sizeof(c));
    c.req = req;
    c.req_len = len;
    c.grpc_status = -1;
    c.prefix[1] = (uint8_t)(len >> 24);
    c.prefix[2] = (uint8_t)(len >> 16);
    c.prefix[3] = (uint8_t)(len >> 8);
    c.prefix[4] = (uint8_t)len;
    nghttp2_session_callbacks *cb;
    nghttp2_session *s = NULL;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        close(fd);
        return fail(r, GRPC_INTERNAL, "out of memory", NULL);
    }
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    int rv = nghttp2_session_client_new(&s, cb, &c);
    nghttp2_session_callbacks_del(cb);
    if (rv != 0) {
        close(fd);
        return fail(r, GRPC_INTERNAL, "out of memory", NULL);
    }
#define NV(n, v)                                                               \
    {                                                                          \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v),              \
            NGHTTP2_NV_FLAG_NONE                                               \
    }
    const nghttp2_nv hdrs[] = {
        NV(":method", "POST"),
        NV(":scheme", "http"),
        NV(":path", path),
        NV(":authority", "localhost"),
        NV("content-type", "application/grpc"),
        NV("te", "trailers"),
    };
#undef NV
    nghttp2_data_provider body = {.source = {.ptr = NULL},
                                  .read_callback = read_body};
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
    c.stream = nghttp2_submit_request(
        s, NULL, hdrs, sizeof(hdrs) / sizeof(hdrs[0]), &body, &c);
    if (c.stream < 0)
        fail(r, GRPC_INTERNAL, "cannot make the request", NULL);
    else if (exchange(s, fd, &c, until, r) == 0) {
        if (c.grpc_status < 0) {
            char msg[64];
            snprintf(msg, sizeof(msg), "HTTP status %d", c.http_status);
            fail(r, GRPC_UNAVAILABLE, "no gRPC status in the answer", msg);
        } else if (c.grpc_status != GRPC_OK) {
            r->status = c.grpc_status;
            snprintf(r->message, sizeof(r->message), "%s", c.grpc_message);
        } else if (c.resp_len < 5) {
            r->status = GRPC_OK; /* an empty message */
        } else {
            size_t mlen = (size_t)c.resp[1] << 24 | (size_t)c.resp[2] << 16 |
                          (size_t)c.resp[3] << 8 | c.resp[4];
            if (c.resp[0] != 0 || mlen > c.resp_len - 5) {
                fail(r, GRPC_INTERNAL, "a compressed or cut answer", NULL);
            } else {
                r->status = GRPC_OK;
                r->body = malloc(mlen ? mlen : 1);
                if (r->body) {
                    memcpy(r->body, c.resp + 5, mlen);
                    r->len = mlen;
                }
            }
        }
    }
    nghttp2_session_del(s);
    free(c.resp);
    close(fd);
    return r->status;
}

void grpc_reply_fini(struct grpc_reply *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}
