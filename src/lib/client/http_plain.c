/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in HTTP/1.1 client for http:// URLs (why it exists: client.h).
 * One kept-alive TCP connection; requests with Content-Length bodies;
 * responses with Content-Length, chunked, or read-to-close bodies, each
 * bounded by CLIENT_MAX_RESPONSE; deadlines through poll(). A request on a
 * reused connection that dies before any answer byte is sent once more on a
 * fresh connection (the server may close idle connections at any time). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/client/client.h"
#include "lib/client/http.h"
#include "lib/util/clock.h"
#include "lib/util/strbuf.h"

#define HEAD_MAX 65536

struct http_plain {
    struct http_conn base; /* must be first */
    char host[256];
    char port[8];
    char prefix[256]; /* path prefix from the URL, without trailing / */
    char url[512];
    int fd;
    /* Set by another thread (client_abort): every call fails from then on,
     * including one that is about to connect. */
    _Atomic bool aborted;
    char rbuf[16384]; /* bytes read but not yet consumed */
    size_t rlen;
};

static int fail_conn(struct http_plain *p, struct sh_error *err,
                     const char *what, int e)
{
    if (e == ECONNREFUSED)
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "cannot reach shoald at %s: connection refused (is it "
                         "running? start a local cluster with `shoal up`)",
                         p->url);
    if (e == ETIMEDOUT)
        return sh_errorf(err, SH_EUNAVAILABLE,
                         "no answer from shoald at %s in time", p->url);
    return sh_errorf(err, SH_EUNAVAILABLE, "cannot reach shoald at %s: %s: %s",
                     p->url, what, strerror(e));
}

static void plain_close(struct http_plain *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    p->rlen = 0;
}

static int remaining(int64_t deadline)
{
    if (deadline == 0)
        return -1;
    int64_t left = deadline - clock_mono_ms();
    return left > 0 ? (int)left : 0;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    for (;;) {
        int rc = poll(&pfd, 1, remaining(deadline));
        if (rc > 0)
            return 0;
        if (rc == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if (errno != EINTR)
            return -1;
    }
}

static int plain_connect(struct http_plain *p, int64_t deadline,
                         struct sh_error *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(p->host, p->port, &hints, &res);
    if (rc != 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot reach shoald at %s: %s",
                         p->url, gai_strerror(rc));
    int e = ECONNREFUSED;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family,
                        ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 &&
            errno != EINPROGRESS) {
            e = errno;
            close(fd);
            continue;
        }
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        if (wait_fd(fd, POLLOUT, deadline) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 ||
            soerr != 0) {
            e = soerr ? soerr : errno;
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        p->fd = fd;
        freeaddrinfo(res);
        return 0;
    }
    freeaddrinfo(res);
    return fail_conn(p, err, "connect", e);
}

static int write_all(int fd, const char *buf, size_t len, int64_t deadline)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, POLLOUT, deadline) < 0)
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Read more bytes into rbuf. Returns bytes read, 0 at EOF, -1 on error. */
static ssize_t fill(struct http_plain *p, int64_t deadline)
{
    if (p->rlen == sizeof(p->rbuf)) {
        errno = EMSGSIZE;
        return -1;
    }
    for (;;) {
        ssize_t n =
            recv(p->fd, p->rbuf + p->rlen, sizeof(p->rbuf) - p->rlen, 0);
        if (n >= 0) {
            p->rlen += (size_t)n;
            return n;
        }
        if (errno != EAGAIN && errno != EINTR)
            return -1;
        if (wait_fd(p->fd, POLLIN, deadline) < 0)
            return -1;
    }
}

static void consume(struct http_plain *p, size_t n)
{
    memmove(p->rbuf, p->rbuf + n, p->rlen - n);
    p->rlen -= n;
}

/* Read one line (ending in \r\n) into line; returns 0 or -1. */
static int read_line(struct http_plain *p, char *line, size_t size,
                     int64_t deadline)
{
    for (;;) {
        char *nl = memchr(p->rbuf, '\n', p->rlen);
        if (nl) {
            size_t n = (size_t)(nl - p->rbuf) + 1;
            size_t keep = n >= 2 && nl[-1] == '\r' ? n - 2 : n - 1;
            if (keep >= size) {
                errno = EMSGSIZE;
                return -1;
            }
            memcpy(line, p->rbuf, keep);
            line[keep] = '\0';
            consume(p, n);
            return 0;
        }
        ssize_t r = fill(p, deadline);
        if (r <= 0) {
            if (r == 0)
                errno = ECONNRESET;
            return -1;
        }
    }
}

/* Read exactly n body bytes (or to EOF when n is SIZE_MAX) into sb. */
static int read_body(struct http_plain *p, struct strbuf *sb, size_t n,
                     int64_t deadline)
{
    while (n > 0) {
        if (p->rlen == 0) {
            ssize_t r = fill(p, deadline);
            if (r < 0)
                return -1;
            if (r == 0) {
                if (n == SIZE_MAX)
                    return 0;
                errno = ECONNRESET;
                return -1;
            }
        }
        size_t take = p->rlen < n ? p->rlen : n;
        if (strbuf_append(sb, p->rbuf, take) < 0) {
            errno = EMSGSIZE;
            return -1;
        }
        consume(p, take);
        if (n != SIZE_MAX)
            n -= take;
    }
    return 0;
}

static int read_chunked(struct http_plain *p, struct strbuf *sb,
                        int64_t deadline)
{
    char line[128];
    for (;;) {
        if (read_line(p, line, sizeof(line), deadline) < 0)
            return -1;
        char *end;
        unsigned long size = strtoul(line, &end, 16);
        if (end == line) {
            errno = EPROTO;
            return -1;
        }
        if (size == 0)
            break;
        if (read_body(p, sb, size, deadline) < 0 ||
            read_line(p, line, sizeof(line), deadline) < 0)
            return -1;
    }
    /* Trailers end with an empty line. */
    do {
        if (read_line(p, line, sizeof(line), deadline) < 0)
            return -1;
    } while (line[0]);
    return 0;
}

struct head {
    int status;
    size_t content_length; /* SIZE_MAX when absent */
    bool chunked;
    bool close;
};

static int read_head(struct http_plain *p, struct head *h, int64_t deadline,
                     bool *got_bytes)
{
    char line[4096];
    h->content_length = SIZE_MAX;
    h->chunked = false;
    h->close = false;
    *got_bytes = p->rlen > 0;
    if (p->rlen == 0) {
        ssize_t r = fill(p, deadline);
        if (r <= 0) {
            if (r == 0)
                errno = ECONNRESET;
            return -1;
        }
        *got_bytes = true;
    }
    if (read_line(p, line, sizeof(line), deadline) < 0)
        return -1;
    if (strncmp(line, "HTTP/1.", 7) != 0 || strlen(line) < 12) {
        errno = EPROTO;
        return -1;
    }
    h->status = (int)strtol(line + 9, NULL, 10);
    h->close = line[7] == '0';
    size_t total = 0;
    for (;;) {
        if (read_line(p, line, sizeof(line), deadline) < 0)
            return -1;
        if (!line[0])
            break;
        total += strlen(line);
        if (total > HEAD_MAX) {
            errno = EMSGSIZE;
            return -1;
        }
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            h->content_length = strtoul(line + 15, NULL, 10);
        else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 &&
                 strcasestr(line + 18, "chunked"))
            h->chunked = true;
        else if (strncasecmp(line, "Connection:", 11) == 0 &&
                 strcasestr(line + 11, "close"))
            h->close = true;
    }
    return 0;
}

static int plain_once(struct http_plain *p, const struct http_request *rq,
                      struct http_response *rs, int64_t deadline,
                      bool *retryable, struct sh_error *err)
{
    struct strbuf req;
    *retryable = false;
    bool reused = p->fd >= 0;
    if (!reused && plain_connect(p, deadline, err) < 0)
        return -1;
    if (p->aborted) {
        plain_close(p);
        return sh_errorf(err, SH_EUNAVAILABLE, "the call to %s was aborted",
                         p->url);
    }
    strbuf_init(&req, HEAD_MAX + rq->body_len);
    strbuf_appendf(&req, "%s %s%s HTTP/1.1\r\nHost: %s:%s\r\n", rq->method,
                   p->prefix, rq->path, p->host, p->port);
    if (rq->auth)
        strbuf_appendf(&req, "Authorization: %s\r\n", rq->auth);
    if (rq->idempotency_key)
        strbuf_appendf(&req, "Idempotency-Key: %s\r\n", rq->idempotency_key);
    if (rq->body)
        strbuf_appends(&req, "Content-Type: application/json\r\n");
    strbuf_appendf(&req, "Content-Length: %zu\r\n\r\n", rq->body_len);
    if (rq->body && strbuf_append(&req, rq->body, rq->body_len) < 0) {
        strbuf_fini(&req);
        return sh_errorf(err, SH_ETOOLARGE, "request too large");
    }
    rs->maybe_received = true;
    int rc = write_all(p->fd, req.data, req.len, deadline);
    strbuf_fini(&req);
    struct head h;
    bool got = false;
    if (rc < 0 || read_head(p, &h, deadline, &got) < 0) {
        int e = errno;
        plain_close(p);
        *retryable = reused && !got && e != ETIMEDOUT;
        return fail_conn(p, err, "request", e);
    }
    struct strbuf body;
    strbuf_init(&body, CLIENT_MAX_RESPONSE);
    if (h.chunked)
        rc = read_chunked(p, &body, deadline);
    else if (h.content_length != SIZE_MAX)
        rc = read_body(p, &body, h.content_length, deadline);
    else
        rc = read_body(p, &body, SIZE_MAX, deadline), h.close = true;
    if (rc < 0) {
        int e = errno;
        strbuf_fini(&body);
        plain_close(p);
        if (e == EMSGSIZE)
            return sh_errorf(err, SH_ETOOLARGE,
                             "the answer from %s is larger than %u bytes",
                             p->url, CLIENT_MAX_RESPONSE);
        return fail_conn(p, err, "reading the answer", e);
    }
    if (h.close)
        plain_close(p);
    rs->status = h.status;
    rs->body_len = body.len;
    rs->body = strbuf_take(&body);
    if (!rs->body)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    return 0;
}

static int plain_request(struct http_conn *c, const struct http_request *rq,
                         struct http_response *rs, struct sh_error *err)
{
    struct http_plain *p = (struct http_plain *)c;
    rs->maybe_received = false;
    if (p->aborted)
        return sh_errorf(err, SH_EUNAVAILABLE, "the call to %s was aborted",
                         p->url);
    int64_t deadline = rq->timeout_ms ? clock_mono_ms() + rq->timeout_ms : 0;
    bool retry;
    if (plain_once(p, rq, rs, deadline, &retry, err) == 0)
        return 0;
    if (!retry)
        return -1;
    /* A kept-alive connection the server had closed: the request never
     * reached it. */
    rs->maybe_received = false;
    return plain_once(p, rq, rs, deadline, &retry, err);
}

static void plain_destroy(struct http_conn *c)
{
    struct http_plain *p = (struct http_plain *)c;
    plain_close(p);
    free(p);
}

static void plain_abort(struct http_conn *c)
{
    struct http_plain *p = (struct http_plain *)c;
    p->aborted = true;
    int fd = p->fd;
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

static const struct http_ops plain_ops = {
    .destroy = plain_destroy,
    .request = plain_request,
    .abort = plain_abort,
};

struct http_conn *http_plain_create(const char *url, struct sh_error *err)
{
    struct http_plain *p = calloc(1, sizeof(*p));
    if (!p) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    p->base.ops = &plain_ops;
    p->fd = -1;
    snprintf(p->url, sizeof(p->url), "%s", url);
    const char *s = url + strlen("http://");
    const char *slash = strchr(s, '/');
    size_t hostport = slash ? (size_t)(slash - s) : strlen(s);
    char hp[300];
    if (hostport == 0 || hostport >= sizeof(hp))
        goto bad;
    memcpy(hp, s, hostport);
    hp[hostport] = '\0';
    const char *port = "80";
    char *colon = strrchr(hp, ':');
    if (hp[0] == '[') {
        char *close = strchr(hp, ']');
        if (!close)
            goto bad;
        *close = '\0';
        memmove(hp, hp + 1, strlen(hp + 1) + 1);
        if (close[1] == ':')
            port = close + 2;
    } else if (colon) {
        *colon = '\0';
        port = colon + 1;
    }
    if (!*hp || strlen(hp) >= sizeof(p->host) ||
        strlen(port) >= sizeof(p->port))
        goto bad;
    for (const char *q = port; *q; q++) {
        if (!isdigit((unsigned char)*q))
            goto bad;
    }
    snprintf(p->host, sizeof(p->host), "%s", hp);
    snprintf(p->port, sizeof(p->port), "%s", port);
    if (slash) {
        snprintf(p->prefix, sizeof(p->prefix), "%s", slash);
        size_t n = strlen(p->prefix);
        while (n && p->prefix[n - 1] == '/')
            p->prefix[--n] = '\0';
    }
    return &p->base;
bad:
    free(p);
    sh_errorf(err, SH_EINVAL,
              "'%s' is not a valid URL (expected http://HOST:PORT)", url);
    return NULL;
}
