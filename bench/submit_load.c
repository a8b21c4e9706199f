/* SPDX-License-Identifier: Apache-2.0 */
/* Load generator for bench/submit: sends N job submissions to a running
 * shoald over C keep-alive connections (one request in flight on each),
 * and prints durable submissions per second (every 201 is durable: shoald
 * answers only after the group commit). Plain sockets and epoll, so the
 * client costs little of the 2 cores it shares with the controller.
 *
 *   bench-submit-load URL TOKEN [JOBS] [CONNECTIONS] [BODY]
 * BODY is the JSON of one submission (default: a one-GPU python job).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd;
    char buf[8192];
    size_t len;
    int inflight;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(const char *host, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Returns the length of a complete response at the start of buf, or 0. */
static size_t response_len(const char *buf, size_t len, int *status)
{
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end - buf) + 4;
    const char *cl = memmem(buf, head, "Content-Length:", 15);
    if (!cl)
        cl = memmem(buf, head, "content-length:", 15);
    size_t body = cl ? strtoul(cl + 15, NULL, 10) : 0;
    if (len < head + body)
        return 0;
    *status = (int)strtol(buf + 9, NULL, 10);
    return head + body;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s URL TOKEN [JOBS] [CONNECTIONS] [BODY]\n",
                argv[0]);
        return 2;
    }
    char host[64];
    int port;
    if (sscanf(argv[1], "http://%63[^:]:%d", host, &port) != 2) {
        fprintf(stderr, "URL must be http://IP:PORT\n");
        return 2;
    }
    long jobs = argc > 3 ? strtol(argv[3], NULL, 10) : 50000;
    int nconn = argc > 4 ? (int)strtol(argv[4], NULL, 10) : 32;
    const char *body =
        argc > 5 ? argv[5]
                 : "{\"command\":[\"python\",\"train.py\","
                   "\"--epochs\",\"3\"],\"gpus\":1,\"name\":\"bench\"}";
    char req[8192];
    int reqlen = snprintf(req, sizeof(req),
                          "POST /v1/jobs HTTP/1.1\r\nHost: %s\r\n"
                          "Authorization: Bearer %s\r\n"
                          "Content-Type: application/json\r\n"
                          "Content-Length: %zu\r\n\r\n%s",
                          host, argv[2], strlen(body), body);
    int ep = epoll_create1(0);
    struct conn *conns = calloc((size_t)nconn, sizeof(*conns));
    long sent = 0, done = 0, ok = 0;
    double t0 = now_s();
    for (int i = 0; i < nconn; i++) {
        conns[i].fd = connect_to(host, port);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
        if (sent < jobs) {
            if (write(conns[i].fd, req, (size_t)reqlen) != reqlen) {
                perror("write");
                return 1;
            }
            conns[i].inflight = 1;
            sent++;
        }
    }
    struct epoll_event evs[256];
    while (done < jobs) {
        int n = epoll_wait(ep, evs, 256, 10000);
        if (n <= 0) {
            fprintf(stderr,
                    "timed out waiting for answers (%ld of %ld answered)\n",
                    done, jobs);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = &conns[evs[i].data.u32];
            ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
            if (r <= 0) {
                fprintf(stderr, "connection closed by shoald\n");
                return 1;
            }
            c->len += (size_t)r;
            int status;
            size_t rl;
            while ((rl = response_len(c->buf, c->len, &status)) > 0) {
                done++;
                ok += status == 201;
                memmove(c->buf, c->buf + rl, c->len - rl);
                c->len -= rl;
                if (sent < jobs) {
                    if (write(c->fd, req, (size_t)reqlen) != reqlen) {
                        perror("write");
                        return 1;
                    }
                    sent++;
                }
            }
        }
    }
    double dt = now_s() - t0;
    printf("api_submissions: %ld accepted (201) of %ld in %.3f s over %d "
           "connections\n",
           ok, jobs, dt, nconn);
    printf("api_durable_submissions_per_s: %.0f\n", (double)ok / dt);
    return ok == jobs ? 0 : 1;
}
