/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: lib/client as the CLI and the agent use it.
 * - config: where the URL, token and CA come from (the config file under
 *   XDG_CONFIG_HOME or HOME, overridden by SHOAL_URL/SHOAL_TOKEN/SHOAL_CA),
 *   and the messages when it is wrong or missing. Each test points HOME and
 *   XDG_CONFIG_HOME at a temporary directory and restores them.
 * - create/urlencode: URLs refused up front; query-string encoding.
 * - http: the built-in HTTP/1.1 transport end to end against a tiny server
 *   run in a thread of the test (127.0.0.1, a free port) answering canned
 *   responses: the request it sends, Content-Length, chunked and read-to-
 *   close bodies, API errors, the size limit, keep-alive and a server that
 *   closed an idle connection. Not https (libcurl): that needs TLS.
 * - failover: URL lists, an unreachable controller skipped, a follower's
 *   answer followed to the leader it names when it is configured (never
 *   to one only the answer gave), a change that may have
 *   arrived never sent to a second controller. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/client/client.h"

/* ---- config: a private HOME per test ---- */

static const char *const ENV_KEYS[] = {"HOME", "XDG_CONFIG_HOME", "SHOAL_URL",
                                       "SHOAL_TOKEN", "SHOAL_CA"};
#define NKEYS (sizeof(ENV_KEYS) / sizeof(ENV_KEYS[0]))

struct cfg_env {
    char dir[64];   /* the temporary HOME */
    char xdg[128];  /* dir/xdg */
    char file[192]; /* the config file under xdg */
    char *saved[NKEYS];
};

static void mkdir_ok(const char *path)
{
    cr_assert_eq(mkdir(path, 0700), 0, "mkdir %s: %s", path, strerror(errno));
}

/* HOME=dir, XDG_CONFIG_HOME=dir/xdg, no SHOAL_* variables. */
static void cfg_env_setup(struct cfg_env *e)
{
    memset(e, 0, sizeof(*e));
    for (size_t i = 0; i < NKEYS; i++) {
        const char *v = getenv(ENV_KEYS[i]);
        e->saved[i] = v ? strdup(v) : NULL;
    }
    snprintf(e->dir, sizeof(e->dir), "/tmp/shoal-client-test-XXXXXX");
    cr_assert_not_null(mkdtemp(e->dir));
    snprintf(e->xdg, sizeof(e->xdg), "%s/xdg", e->dir);
    snprintf(e->file, sizeof(e->file), "%s/shoal/config", e->xdg);
    setenv("HOME", e->dir, 1);
    setenv("XDG_CONFIG_HOME", e->xdg, 1);
    unsetenv("SHOAL_URL");
    unsetenv("SHOAL_TOKEN");
    unsetenv("SHOAL_CA");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/* Write the config file under XDG_CONFIG_HOME. */
static void cfg_write(struct cfg_env *e, const char *text)
{
    char d[160];
    mkdir_ok(e->xdg);
    snprintf(d, sizeof(d), "%s/shoal", e->xdg);
    mkdir_ok(d);
    write_file(e->file, text);
}

static void cfg_env_restore(struct cfg_env *e)
{
    char p[256];
    unlink(e->file);
    snprintf(p, sizeof(p), "%s/shoal", e->xdg);
    rmdir(p);
    rmdir(e->xdg);
    snprintf(p, sizeof(p), "%s/.config/shoal/config", e->dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/.config/shoal", e->dir);
    rmdir(p);
    snprintf(p, sizeof(p), "%s/.config", e->dir);
    rmdir(p);
    rmdir(e->dir);
    for (size_t i = 0; i < NKEYS; i++) {
        if (e->saved[i])
            setenv(ENV_KEYS[i], e->saved[i], 1);
        else
            unsetenv(ENV_KEYS[i]);
        free(e->saved[i]);
    }
}

Test(config, file_gives_url_token_and_ca)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    cfg_write(&e, "# written by shoal up\n"
                  "\n"
                  "url = http://127.0.0.1:7070\n"
                  "   token=s3cret   \n"
                  "\t# a comment after blanks\n"
                  "ca = /etc/shoal/ca.pem\n");
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg.url, "http://127.0.0.1:7070");
    cr_assert_str_eq(cfg.token, "s3cret");
    cr_assert_str_eq(cfg.ca_file, "/etc/shoal/ca.pem");
    cr_assert_str_eq(cfg.source, e.file);
    cfg_env_restore(&e);
}

Test(config, file_under_home_is_used_without_xdg_config_home)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    unsetenv("XDG_CONFIG_HOME");
    char p[256];
    snprintf(p, sizeof(p), "%s/.config", e.dir);
    mkdir_ok(p);
    snprintf(p, sizeof(p), "%s/.config/shoal", e.dir);
    mkdir_ok(p);
    snprintf(p, sizeof(p), "%s/.config/shoal/config", e.dir);
    write_file(p, "url = http://home.example:1\n");
    char path[512];
    client_config_path(path, sizeof(path));
    cr_assert_str_eq(path, p);
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg.url, "http://home.example:1");
    cr_assert_str_eq(cfg.token, "");
    cr_assert_str_eq(cfg.ca_file, "", "no CA: the system's");
    cfg_env_restore(&e);
}

Test(config, unknown_key_is_refused_naming_file_and_line)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    cfg_write(&e, "url = http://127.0.0.1:7070\n"
                  "# fine\n"
                  "tokn = abc\n");
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    char want[256];
    snprintf(want, sizeof(want), "%s:3:", e.file);
    cr_assert(strstr(err.msg, want) != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, "tokn") != NULL, "%s", err.msg);
    cfg_env_restore(&e);
}

Test(config, line_without_equals_is_refused_naming_file_and_line)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    cfg_write(&e, "url http://127.0.0.1:7070\n");
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    char want[256];
    snprintf(want, sizeof(want), "%s:1:", e.file);
    cr_assert(strstr(err.msg, want) != NULL, "%s", err.msg);
    cfg_env_restore(&e);
}

Test(config, too_long_value_is_refused_naming_the_key)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    char text[700];
    snprintf(text, sizeof(text), "token = %0600d\n", 7);
    cfg_write(&e, text);
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), -1);
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert(strstr(err.msg, "token") != NULL, "%s", err.msg);
    cfg_env_restore(&e);
}

Test(config, environment_overrides_the_file)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    cfg_write(&e, "url = http://file:1\ntoken = filetoken\nca = /file/ca\n");
    setenv("SHOAL_URL", "http://env:2", 1);
    setenv("SHOAL_TOKEN", "envtoken", 1);
    setenv("SHOAL_CA", "/env/ca", 1);
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg.url, "http://env:2");
    cr_assert_str_eq(cfg.token, "envtoken");
    cr_assert_str_eq(cfg.ca_file, "/env/ca");
    cr_assert_str_eq(cfg.source, "SHOAL_URL");
    cfg_env_restore(&e);
}

Test(config, environment_url_keeps_the_token_of_the_file)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    cfg_write(&e, "url = http://file:1\ntoken = filetoken\n");
    setenv("SHOAL_URL", "http://env:2", 1);
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg.url, "http://env:2");
    cr_assert_str_eq(cfg.token, "filetoken");
    cfg_env_restore(&e);
}

Test(config, environment_alone_is_enough)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    setenv("SHOAL_URL", "http://env:2", 1);
    setenv("SHOAL_TOKEN", "envtoken", 1);
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), 0, "%s", err.msg);
    cr_assert_str_eq(cfg.url, "http://env:2");
    cr_assert_str_eq(cfg.token, "envtoken");
    cfg_env_restore(&e);
}

Test(config, nothing_configured_says_to_run_shoal_up)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    setenv("SHOAL_URL", "", 1); /* set but empty counts as unset */
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, "`shoal up`") != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, "SHOAL_URL") != NULL, "%s", err.msg);
    cfg_env_restore(&e);
}

Test(config, file_with_a_token_but_no_url_is_not_a_cluster)
{
    struct cfg_env e;
    cfg_env_setup(&e);
    cfg_write(&e, "token = abc\n");
    struct client_config cfg;
    struct sh_error err = {0};
    cr_assert_eq(client_config_load(&cfg, &err), -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cfg_env_restore(&e);
}

/* ---- create and urlencode ---- */

Test(create, urls_that_are_not_http_are_refused)
{
    const char *bad[] = {
        "",           "ftp://127.0.0.1:21",   "127.0.0.1:7070",
        "http://",    "http://host:notaport", "http://host:80x/",
        "http:///v1", "http://[::1:7070",     "HTTP//host",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sh_error err = {0};
        struct client *c = client_create(bad[i], "tok", NULL, &err);
        cr_assert_null(c, "'%s' accepted", bad[i]);
        cr_assert_eq(err.code, SH_EINVAL, "'%s'", bad[i]);
        cr_assert(strstr(err.msg, bad[i]) != NULL, "%s", err.msg);
    }
}

Test(create, plain_http_urls_are_accepted)
{
    const char *good[] = {"http://127.0.0.1:7070", "http://localhost",
                          "http://[::1]:7070/", "http://h:1/prefix/"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        struct sh_error err = {0};
        struct client *c = client_create(good[i], NULL, NULL, &err);
        cr_assert_not_null(c, "'%s': %s", good[i], err.msg);
        client_destroy(c);
    }
    client_destroy(NULL);
}

Test(urlencode, reserved_bytes_are_percent_encoded)
{
    char buf[128];
    client_urlencode("alice", buf, sizeof(buf));
    cr_assert_str_eq(buf, "alice");
    client_urlencode("A-z_0.9~", buf, sizeof(buf));
    cr_assert_str_eq(buf, "A-z_0.9~");
    client_urlencode("a b/c?d=e&f#g%", buf, sizeof(buf));
    cr_assert_str_eq(buf, "a%20b%2Fc%3Fd%3De%26f%23g%25");
    client_urlencode("caf\xc3\xa9", buf, sizeof(buf));
    cr_assert_str_eq(buf, "caf%C3%A9");
    client_urlencode("", buf, sizeof(buf));
    cr_assert_str_eq(buf, "");
}

Test(urlencode, output_is_cut_at_the_buffer_without_splitting_an_escape)
{
    char buf[8];
    memset(buf, 'Z', sizeof(buf));
    client_urlencode("////////", buf, sizeof(buf));
    cr_assert_eq(strlen(buf) % 3, 0, "'%s' ends inside an escape", buf);
    cr_assert_lt(strlen(buf), sizeof(buf));
    cr_assert_eq(strncmp(buf, "%2F", 3), 0, "%s", buf);
}

/* ---- a tiny HTTP server in a thread ---- */

/* Special answers: close the connection (and accept the next); claim a
 * body larger than CLIENT_MAX_RESPONSE and keep sending until the client
 * gives up; read the request and never answer. */
#define ANSWER_CLOSE "<close>"
#define ANSWER_HUGE "<huge>"
#define ANSWER_SILENT "<silent>"
#define MAX_REQS 4

struct srv {
    int lfd;
    int port;
    pthread_t thread;
    const char *const *answers; /* NULL-terminated */
    int accepts;                /* connections accepted */
    int requests;               /* requests read */
    char req[MAX_REQS][4096];   /* head and body of the first requests */
    char url[64];
};

static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Read one request (head, then Content-Length bytes of body). */
static int read_request(struct srv *s, int fd)
{
    char tmp[4096];
    size_t n = 0;
    while (n < sizeof(tmp) - 1) {
        if (recv(fd, tmp + n, 1, 0) != 1)
            return -1;
        n++;
        if (n >= 4 && memcmp(tmp + n - 4, "\r\n\r\n", 4) == 0)
            break;
    }
    tmp[n] = '\0';
    size_t body = 0;
    const char *cl = strcasestr(tmp, "\r\nContent-Length:");
    if (cl)
        body = strtoul(cl + 17, NULL, 10);
    for (size_t i = 0; i < body && n < sizeof(tmp) - 1; i++) {
        if (recv(fd, tmp + n, 1, 0) != 1)
            return -1;
        n++;
    }
    tmp[n] = '\0';
    if (s->requests < MAX_REQS)
        memcpy(s->req[s->requests], tmp, n + 1);
    s->requests++;
    return 0;
}

static void send_huge(int fd)
{
    static const char head[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Length: 100000000\r\n\r\n";
    if (send_all(fd, head, strlen(head)) < 0)
        return;
    size_t chunk = 1 << 20;
    char *buf = malloc(chunk);
    if (!buf)
        return;
    memset(buf, 'x', chunk);
    /* Until the client hangs up, or well past the limit. */
    for (size_t sent = 0; sent < 100000000; sent += chunk) {
        if (send_all(fd, buf, chunk) < 0)
            break;
    }
    free(buf);
}

static void *srv_main(void *arg)
{
    struct srv *s = arg;
    int fd = -1;
    for (int i = 0; s->answers[i]; i++) {
        const char *a = s->answers[i];
        if (strcmp(a, ANSWER_CLOSE) == 0) {
            if (fd >= 0)
                close(fd);
            fd = -1;
            continue;
        }
        if (fd < 0) {
            fd = accept(s->lfd, NULL, NULL);
            if (fd < 0)
                break;
            s->accepts++;
        }
        if (read_request(s, fd) < 0)
            break;
        if (strcmp(a, ANSWER_HUGE) == 0) {
            send_huge(fd);
        } else if (strcmp(a, ANSWER_SILENT) == 0) {
            char c;
            while (recv(fd, &c, 1, 0) > 0)
                ; /* until the client gives up and closes */
        } else if (send_all(fd, a, strlen(a)) < 0) {
            break;
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Listen on 127.0.0.1 on a free port and answer with answers, in order. */
static void srv_start(struct srv *s, const char *const *answers)
{
    memset(s, 0, sizeof(*s));
    s->answers = answers;
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(s->lfd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    cr_assert_eq(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(s->lfd, 8), 0);
    cr_assert_eq(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
    s->port = ntohs(sa.sin_port);
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    cr_assert_eq(pthread_create(&s->thread, NULL, srv_main, s), 0);
}

/* Wait for the server to have given every answer. A server still waiting
 * for a connection (an answer no call asked for) stops waiting. */
static void srv_finish(struct srv *s)
{
    shutdown(s->lfd, SHUT_RDWR); /* wakes a blocked accept() */
    pthread_join(s->thread, NULL);
    close(s->lfd);
}

static struct client *client_for(const struct srv *s, const char *suffix)
{
    char url[128];
    snprintf(url, sizeof(url), "%s%s", s->url, suffix ? suffix : "");
    struct sh_error err = {0};
    struct client *c = client_create(url, "tok123", NULL, &err);
    cr_assert_not_null(c, "%s", err.msg);
    client_set_timeout(c, 10000);
    return c;
}

#define OK_JSON(body)                                                          \
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"                    \
    "Content-Length: " #body "\r\n\r\n"

Test(http, call_sends_method_path_token_and_body, .timeout = 30)
{
    static const char *const answers[] = {
        "HTTP/1.1 201 Created\r\nContent-Length: 8\r\n\r\n{\"id\":7}", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, "/api/");
    json_t *body = json_pack("{s:i}", "gpus", 2);
    json_t *out = NULL;
    int status = 0;
    struct sh_error err = {0};
    cr_assert_eq(client_call(c, "POST", "/v1/jobs", body, &out, &status, &err),
                 0, "%s", err.msg);
    cr_assert_eq(status, 201);
    cr_assert_eq(json_integer_value(json_object_get(out, "id")), 7);
    client_destroy(c);
    srv_finish(&s);
    const char *rq = s.req[0];
    cr_assert(strncmp(rq, "POST /api/v1/jobs HTTP/1.1\r\n", 28) == 0, "%s", rq);
    cr_assert(strstr(rq, "\r\nAuthorization: Bearer tok123\r\n") != NULL, "%s",
              rq);
    cr_assert(strstr(rq, "\r\nContent-Type: application/json\r\n") != NULL,
              "%s", rq);
    cr_assert(strstr(rq, "\r\nContent-Length: 10\r\n") != NULL, "%s", rq);
    cr_assert(strstr(rq, "\r\n\r\n{\"gpus\":2}") != NULL, "%s", rq);
    json_decref(body);
    json_decref(out);
}

Test(http, call_without_token_sends_no_authorization, .timeout = 30)
{
    static const char *const answers[] = {
        "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct sh_error err = {0};
    struct client *c = client_create(s.url, "", NULL, &err);
    cr_assert_not_null(c, "%s", err.msg);
    json_t *out = json_object(); /* must be replaced by NULL */
    json_t *keep = out;
    int status = 0;
    cr_assert_eq(
        client_call(c, "DELETE", "/v1/jobs/3", NULL, &out, &status, &err), 0,
        "%s", err.msg);
    cr_assert_eq(status, 204);
    cr_assert_null(out, "an empty answer gives no JSON");
    client_destroy(c);
    srv_finish(&s);
    cr_assert(strncmp(s.req[0], "DELETE /v1/jobs/3 HTTP/1.1\r\n", 28) == 0);
    cr_assert_null(strstr(s.req[0], "Authorization"), "%s", s.req[0]);
    json_decref(keep);
}

Test(http, chunked_answer_is_reassembled, .timeout = 30)
{
    static const char *const answers[] = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "7\r\n{\"jobs\"\r\n"
        "6;ext=1\r\n:[1,2]\r\n"
        "1\r\n}\r\n"
        "0\r\nX-Trailer: yes\r\n\r\n",
        OK_JSON(11) "{\"next\":2}\n", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    json_t *out = NULL;
    struct sh_error err = {0};
    cr_assert_eq(client_call(c, "GET", "/v1/jobs", NULL, &out, NULL, &err), 0,
                 "%s", err.msg);
    json_t *jobs = json_object_get(out, "jobs");
    cr_assert_eq(json_array_size(jobs), 2);
    cr_assert_eq(json_integer_value(json_array_get(jobs, 1)), 2);
    json_decref(out);
    /* The trailers were consumed: the next answer on the connection reads
     * cleanly. */
    cr_assert_eq(client_call(c, "GET", "/v1/jobs", NULL, &out, NULL, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(json_integer_value(json_object_get(out, "next")), 2);
    json_decref(out);
    client_destroy(c);
    srv_finish(&s);
    cr_assert_eq(s.accepts, 1);
}

Test(http, raw_call_returns_the_body_as_sent, .timeout = 30)
{
    static const char *const answers[] = {
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
        "Content-Length: 12\r\n\r\nline1\nline2\n",
        NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    char *out = NULL;
    size_t len = 0;
    int status = 0;
    struct sh_error err = {0};
    cr_assert_eq(client_call_raw(c, "GET", "/v1/jobs/1/logs?offset=0", NULL, 0,
                                 &out, &len, &status, &err),
                 0, "%s", err.msg);
    cr_assert_eq(status, 200);
    cr_assert_eq(len, 12);
    cr_assert_str_eq(out, "line1\nline2\n");
    free(out);
    client_destroy(c);
    srv_finish(&s);
    cr_assert(strncmp(s.req[0], "GET /v1/jobs/1/logs?offset=0 HTTP/1.1", 37) ==
              0);
}

Test(http, answer_read_to_close_without_length, .timeout = 30)
{
    static const char *const answers[] = {
        "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
        "{\"ok\":true}",
        ANSWER_CLOSE, OK_JSON(11) "{\"again\":1}", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    json_t *out = NULL;
    struct sh_error err = {0};
    cr_assert_eq(client_call(c, "GET", "/v1/health", NULL, &out, NULL, &err), 0,
                 "%s", err.msg);
    cr_assert(json_is_true(json_object_get(out, "ok")));
    json_decref(out);
    /* The connection ended with the body: the next call opens another. */
    cr_assert_eq(client_call(c, "GET", "/v1/health", NULL, &out, NULL, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(json_integer_value(json_object_get(out, "again")), 1);
    json_decref(out);
    client_destroy(c);
    srv_finish(&s);
    cr_assert_eq(s.accepts, 2);
}

Test(http, api_error_body_becomes_the_error_code_and_message, .timeout = 30)
{
    static const char *const answers[] = {
        "HTTP/1.1 404 Not Found\r\nContent-Length: 44\r\n\r\n"
        "{\"error\":{\"code\":\"not_found\",\"message\":\"x\"}}",
        "HTTP/1.1 403 Forbidden\r\nContent-Length: 52\r\n\r\n"
        "{\"error\":{\"code\":\"forbidden\",\"message\":\"not yours\"}}",
        NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    json_t *out = NULL;
    int status = 0;
    struct sh_error err = {0};
    cr_assert_eq(
        client_call(c, "GET", "/v1/jobs/99", NULL, &out, &status, &err), -1);
    cr_assert_eq(status, 404);
    cr_assert_eq(err.code, SH_ENOTFOUND);
    cr_assert_str_eq(err.msg, "x");
    cr_assert_eq(
        client_call(c, "DELETE", "/v1/jobs/1", NULL, &out, &status, &err), -1);
    cr_assert_eq(status, 403);
    cr_assert_eq(err.code, SH_EFORBIDDEN);
    cr_assert_str_eq(err.msg, "not yours");
    cr_assert_null(out);
    client_destroy(c);
    srv_finish(&s);
}

Test(http, error_status_without_api_body_names_the_status, .timeout = 30)
{
    static const char *const answers[] = {
        "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\n\r\nbad gateway",
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    json_t *out = NULL;
    int status = 0;
    struct sh_error err = {0};
    cr_assert_eq(client_call(c, "GET", "/v1/x", NULL, &out, &status, &err), -1);
    cr_assert_eq(status, 502);
    cr_assert_eq(err.code, SH_EUNAVAILABLE, "a 5xx is worth retrying");
    cr_assert(strstr(err.msg, "502") != NULL, "%s", err.msg);
    cr_assert_eq(client_call(c, "GET", "/v1/x", NULL, &out, &status, &err), -1);
    cr_assert_eq(status, 400);
    cr_assert_eq(err.code, SH_EINVAL);
    cr_assert(strstr(err.msg, "400") != NULL, "%s", err.msg);
    client_destroy(c);
    srv_finish(&s);
}

Test(http, malformed_json_answer_is_an_error, .timeout = 30)
{
    static const char *const answers[] = {OK_JSON(8) "{\"id\":7,", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    json_t *out = NULL;
    struct sh_error err = {0};
    cr_assert_eq(client_call(c, "GET", "/v1/x", NULL, &out, NULL, &err), -1);
    cr_assert_eq(err.code, SH_EINTERNAL);
    cr_assert(strstr(err.msg, "malformed JSON") != NULL, "%s", err.msg);
    client_destroy(c);
    srv_finish(&s);
}

Test(http, answer_larger_than_the_limit_is_refused, .timeout = 60)
{
    static const char *const answers[] = {ANSWER_HUGE, NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    char *out = NULL;
    size_t len = 0;
    struct sh_error err = {0};
    cr_assert_eq(client_call_raw(c, "GET", "/v1/jobs/1/logs", NULL, 0, &out,
                                 &len, NULL, &err),
                 -1);
    cr_assert_eq(err.code, SH_ETOOLARGE, "%s", err.msg);
    cr_assert(strstr(err.msg, s.url) != NULL, "%s", err.msg);
    cr_assert_null(out);
    client_destroy(c);
    srv_finish(&s);
}

Test(http, two_calls_share_one_kept_alive_connection, .timeout = 30)
{
    static const char *const answers[] = {OK_JSON(7) "{\"n\":1}",
                                          OK_JSON(7) "{\"n\":2}", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    for (int i = 1; i <= 2; i++) {
        json_t *out = NULL;
        struct sh_error err = {0};
        cr_assert_eq(
            client_call(c, "GET", "/v1/health", NULL, &out, NULL, &err), 0,
            "call %d: %s", i, err.msg);
        cr_assert_eq(json_integer_value(json_object_get(out, "n")), i);
        json_decref(out);
    }
    client_destroy(c);
    srv_finish(&s);
    cr_assert_eq(s.requests, 2);
    cr_assert_eq(s.accepts, 1, "the second call must reuse the connection");
}

Test(http, connection_closed_by_the_server_while_idle_is_reopened,
     .timeout = 30)
{
    static const char *const answers[] = {OK_JSON(7) "{\"n\":1}", ANSWER_CLOSE,
                                          OK_JSON(7) "{\"n\":2}", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    for (int i = 1; i <= 2; i++) {
        json_t *out = NULL;
        struct sh_error err = {0};
        cr_assert_eq(
            client_call(c, "GET", "/v1/health", NULL, &out, NULL, &err), 0,
            "call %d: %s", i, err.msg);
        cr_assert_eq(json_integer_value(json_object_get(out, "n")), i);
        json_decref(out);
    }
    client_destroy(c);
    srv_finish(&s);
    cr_assert_eq(s.accepts, 2);
}

Test(http, connection_closed_before_an_answer_on_a_new_connection_fails,
     .timeout = 30)
{
    /* The server reads the request and hangs up: on a fresh connection
     * that is not retried (the request may have been acted on). A retry
     * would get the second answer and succeed. */
    static const char *const answers[] = {"", ANSWER_CLOSE,
                                          OK_JSON(7) "{\"n\":1}", NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    json_t *out = NULL;
    struct sh_error err = {0};
    cr_assert_eq(client_call(c, "POST", "/v1/jobs", NULL, &out, NULL, &err),
                 -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, s.url) != NULL, "%s", err.msg);
    client_destroy(c);
    srv_finish(&s);
    cr_assert_eq(s.requests, 1, "sent once");
    cr_assert_eq(s.accepts, 1, "no second connection");
}

Test(http, silent_server_times_out, .timeout = 30)
{
    static const char *const answers[] = {ANSWER_SILENT, NULL};
    struct srv s;
    srv_start(&s, answers);
    struct client *c = client_for(&s, NULL);
    client_set_timeout(c, 200);
    json_t *out = NULL;
    struct sh_error err = {0};
    cr_assert_eq(client_call(c, "GET", "/v1/health", NULL, &out, NULL, &err),
                 -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, "in time") != NULL, "%s", err.msg);
    client_destroy(c); /* closes the socket: the server's read ends */
    srv_finish(&s);
}

Test(http, nothing_listening_says_which_url_and_to_run_shoal_up, .timeout = 30)
{
    /* A port that was free a moment ago: bind, read it back, close. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
    struct sh_error err = {0};
    struct client *c = client_create(url, "tok", NULL, &err);
    cr_assert_not_null(c, "%s", err.msg);
    json_t *out = NULL;
    int status = -1;
    cr_assert_eq(client_call(c, "GET", "/v1/health", NULL, &out, &status, &err),
                 -1);
    cr_assert_eq(status, 0, "no HTTP status without an answer");
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, url) != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, "`shoal up`") != NULL, "%s", err.msg);
    client_destroy(c);
}

/* ---- failover between the controllers of a URL list ---- */

/* The URL of a port nothing listens on (free a moment ago). */
static void dead_url(char *url, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    snprintf(url, size, "http://127.0.0.1:%d", ntohs(sa.sin_port));
}

Test(failover, list_with_an_empty_entry_is_refused)
{
    const char *bad[] = {"http://a:1,", ",http://a:1",
                         "http://a:1, ,http://b:2", "http://a:1,ftp://b:2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sh_error err = {0};
        cr_assert_null(client_create(bad[i], "tok", NULL, &err), "'%s'",
                       bad[i]);
        cr_assert_eq(err.code, SH_EINVAL, "'%s': %s", bad[i], err.msg);
    }
}

Test(failover, unreachable_controller_is_skipped_and_the_next_remembered,
     .timeout = 30)
{
    static const char *const answers[] = {OK_JSON(7) "{\"n\":1}",
                                          OK_JSON(7) "{\"n\":2}", NULL};
    struct srv s;
    srv_start(&s, answers);
    char dead[64], list[200];
    dead_url(dead, sizeof(dead));
    snprintf(list, sizeof(list), "%s , %s", dead, s.url);
    struct sh_error err = {0};
    struct client *c = client_create(list, "tok", NULL, &err);
    cr_assert_not_null(c, "%s", err.msg);
    cr_assert_str_eq(client_url(c), dead);
    for (int i = 1; i <= 2; i++) {
        json_t *out = NULL;
        cr_assert_eq(client_call(c, "POST", "/v1/jobs", NULL, &out, NULL, &err),
                     0, "call %d: %s", i, err.msg);
        cr_assert_eq(json_integer_value(json_object_get(out, "n")), i);
        json_decref(out);
        cr_assert_str_eq(client_url(c), s.url);
    }
    client_destroy(c);
    srv_finish(&s);
    cr_assert_eq(s.requests, 2);
}

/* A follower's answer naming leader as the leader:
 * {"error":{...},"leader":"http://127.0.0.1:NNNNN"}. Written into buf. */
static const char *follower_answer_naming(const struct srv *leader, char *buf,
                                          size_t size)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"error\":{\"code\":\"unavailable\",\"message\":\"follower\"},"
             "\"leader\":\"%s\"}",
             leader->url);
    snprintf(buf, size,
             "HTTP/1.1 503 Service Unavailable\r\nContent-Length: %zu\r\n\r\n"
             "%s",
             strlen(body), body);
    return buf;
}

Test(failover, follower_answer_sends_the_call_to_the_leader_it_names,
     .timeout = 30)
{
    static const char *const leader_answers[] = {OK_JSON(7) "{\"n\":1}", NULL};
    struct srv leader;
    srv_start(&leader, leader_answers);
    char follower_answer[512];
    const char *const follower_answers[] = {
        follower_answer_naming(&leader, follower_answer,
                               sizeof(follower_answer)),
        NULL};
    struct srv follower;
    srv_start(&follower, follower_answers);
    /* Both configured, the follower first. */
    char urls[300];
    snprintf(urls, sizeof(urls), "%s, %s", follower.url, leader.url);
    struct sh_error err = {0};
    struct client *c = client_create(urls, "tok123", NULL, &err);
    cr_assert_not_null(c, "%s", err.msg);
    client_set_timeout(c, 10000);
    json_t *out = NULL;
    cr_assert_eq(client_call(c, "POST", "/v1/jobs", NULL, &out, NULL, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(json_integer_value(json_object_get(out, "n")), 1);
    json_decref(out);
    cr_assert_str_eq(client_url(c), leader.url);
    client_destroy(c);
    srv_finish(&follower);
    srv_finish(&leader);
    cr_assert_eq(follower.requests, 1);
    cr_assert_eq(leader.requests, 1);
    cr_assert(strstr(leader.req[0], "Authorization: Bearer tok123") != NULL,
              "the token goes along: %s", leader.req[0]);
}

Test(failover, a_leader_outside_the_list_gets_no_request_and_is_named,
     .timeout = 30)
{
    /* A follower (or anything answering like one) names a URL the user
     * never configured: the token must not go there. */
    static const char *const leader_answers[] = {OK_JSON(7) "{\"n\":1}", NULL};
    struct srv leader;
    srv_start(&leader, leader_answers);
    char follower_answer[512];
    const char *const follower_answers[] = {
        follower_answer_naming(&leader, follower_answer,
                               sizeof(follower_answer)),
        NULL};
    struct srv follower;
    srv_start(&follower, follower_answers);
    struct client *c = client_for(&follower, NULL);
    json_t *out = NULL;
    struct sh_error err = {0};
    cr_assert_eq(client_call(c, "POST", "/v1/jobs", NULL, &out, NULL, &err),
                 -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, leader.url) && strstr(err.msg, "not among"), "%s",
              err.msg);
    client_destroy(c);
    srv_finish(&follower);
    srv_finish(&leader);
    cr_assert_eq(follower.requests, 1);
    cr_assert_eq(leader.requests, 0);
}

Test(failover, change_that_may_have_arrived_is_not_sent_to_another,
     .timeout = 30)
{
    /* The first controller reads the request and hangs up: it may have
     * acted on it, so the second one is not asked (a retry would succeed
     * and could make the change twice). */
    static const char *const first_answers[] = {"", ANSWER_CLOSE, NULL};
    static const char *const second_answers[] = {OK_JSON(7) "{\"n\":1}", NULL};
    struct srv first, second;
    srv_start(&first, first_answers);
    srv_start(&second, second_answers);
    char list[200];
    snprintf(list, sizeof(list), "%s,%s", first.url, second.url);
    struct sh_error err = {0};
    struct client *c = client_create(list, "tok", NULL, &err);
    cr_assert_not_null(c, "%s", err.msg);
    json_t *out = NULL;
    cr_assert_eq(client_call(c, "POST", "/v1/jobs", NULL, &out, NULL, &err),
                 -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    client_destroy(c);
    srv_finish(&first);
    srv_finish(&second);
    cr_assert_eq(first.requests, 1);
    cr_assert_eq(second.requests, 0, "not sent to the second controller");
}

Test(failover, no_controller_serving_fails_after_the_timeout, .timeout = 30)
{
    char a[64], b[64], list[200];
    dead_url(a, sizeof(a));
    dead_url(b, sizeof(b));
    snprintf(list, sizeof(list), "%s,%s", a, b);
    struct sh_error err = {0};
    struct client *c = client_create(list, "tok", NULL, &err);
    cr_assert_not_null(c, "%s", err.msg);
    client_set_timeout(c, 600);
    json_t *out = NULL;
    cr_assert_eq(client_call(c, "GET", "/v1/health", NULL, &out, NULL, &err),
                 -1);
    cr_assert_eq(err.code, SH_EUNAVAILABLE);
    cr_assert(strstr(err.msg, "no controller of the 2") != NULL, "%s", err.msg);
    client_destroy(c);
}
