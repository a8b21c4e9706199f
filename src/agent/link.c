/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's conversation with the controller (see link.h). */
#include "agent/link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/gpu.h"
#include "agent/runs.h"
#include "agent/slicing.h"
#include "lib/client/client.h"
#include "lib/model/node_json.h"
#include "lib/util/clock.h"
#include "lib/util/file.h"
#include "lib/util/log.h"

#define POLL_WAIT_S 25
#define CALL_TIMEOUT_MS 10000
#define BACKOFF_MAX_MS 5000
/* A GPU sample younger than this is sent again rather than taken anew: a
 * drain ends runs many times a second, each ending asks for a heartbeat
 * soon, and NVML answers each GPU's two questions through the driver. */
#define SAMPLE_REUSE_MS 1000

struct link {
    struct agent *a;
    struct client *client; /* the loop thread's connection */
    char token[256];       /* the node's own token; "" before joining */
    bool heartbeat_due;
    bool connected;
    bool need_register;
    int64_t sampled_ms; /* clock_mono_ms of the last good GPU sample; 0: none */
    /* Shared with the poll thread, under mu. */
    pthread_mutex_t mu;
    pthread_t thread;
    bool thread_started;
    bool quit;
    json_t *mailbox;            /* newest work, or NULL */
    struct client *poll_client; /* the thread's connection, to abort it */
    bool poll_lost_node;        /* the controller forgot us */
    char poll_token[256];
    int efd;
};

/* ---- token file ---- */

static void token_path(const struct link *l, char *buf, size_t size)
{
    snprintf(buf, size, "%s/token", l->a->cfg.state_dir);
}

static void load_token(struct link *l)
{
    char path[PATH_MAX];
    token_path(l, path, sizeof(path));
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(l->token, sizeof(l->token), f))
        l->token[strcspn(l->token, "\r\n")] = '\0';
    fclose(f);
}

static int save_token(struct link *l, const char *token, struct sh_error *err)
{
    char path[PATH_MAX], line[300];
    token_path(l, path, sizeof(path));
    int n = snprintf(line, sizeof(line), "%s\n", token);
    if (file_write_atomic(path, line, (size_t)n, 0600, true, err) < 0)
        return -1;
    snprintf(l->token, sizeof(l->token), "%s", token);
    pthread_mutex_lock(&l->mu);
    snprintf(l->poll_token, sizeof(l->poll_token), "%s", token);
    pthread_mutex_unlock(&l->mu);
    return 0;
}

/* ---- connection ---- */

static int use_token(struct link *l, const char *token, struct sh_error *err);

/* The operator may put a new node token in the token file (shoal node
 * rekey): true when it holds another token than the one in use, now used. */
static bool token_file_changed(struct link *l)
{
    char old[sizeof(l->token)];
    snprintf(old, sizeof(old), "%s", l->token);
    load_token(l);
    if (!l->token[0] || strcmp(old, l->token) == 0)
        return false;
    struct sh_error err;
    if (use_token(l, l->token, &err) < 0)
        return false;
    pthread_mutex_lock(&l->mu);
    snprintf(l->poll_token, sizeof(l->poll_token), "%s", l->token);
    pthread_mutex_unlock(&l->mu);
    sh_log(LOG_NOTICE, "link", "using the new node token of the token file");
    return true;
}

static struct client *connect_as(const struct link *l, const char *token,
                                 struct sh_error *err)
{
    const char *ca = getenv("SHOAL_CA");
    return client_create(l->a->cfg.controller, token, ca && *ca ? ca : NULL,
                         err);
}

/* Use token for the loop thread's calls. */
static int use_token(struct link *l, const char *token, struct sh_error *err)
{
    struct client *c = connect_as(l, token, err);
    if (!c)
        return -1;
    client_destroy(l->client);
    l->client = c;
    client_set_timeout(c, CALL_TIMEOUT_MS);
    return 0;
}

/* The address other nodes reach this one at: the local address of a route
 * to the (first) controller (UDP connect sends nothing). */
static void guess_address(struct agent *a)
{
    if (a->cfg.address) {
        snprintf(a->address, sizeof(a->address), "%s", a->cfg.address);
        return;
    }
    snprintf(a->address, sizeof(a->address), "127.0.0.1");
    char host[256] = "", port[16] = "80";
    const char *u = strstr(a->cfg.controller, "://");
    if (!u)
        return;
    u += 3;
    size_t n = strcspn(u, ":/,");
    if (n == 0 || n >= sizeof(host))
        return;
    memcpy(host, u, n);
    host[n] = '\0';
    if (u[n] == ':')
        snprintf(port, sizeof(port), "%.*s", (int)strcspn(u + n + 1, "/,"),
                 u + n + 1);
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return;
    int fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
                      a->address, sizeof(a->address));
        else if (ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
                      a->address, sizeof(a->address));
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
}

struct link *link_create(struct agent *a, struct sh_error *err)
{
    struct link *l = calloc(1, sizeof(*l));
    if (!l) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    l->a = a;
    l->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&l->mu, NULL);
    load_token(l);
    snprintf(l->poll_token, sizeof(l->poll_token), "%s", l->token);
    if (l->efd < 0 || use_token(l, l->token, err) < 0) {
        if (l->efd < 0)
            sh_errorf(err, SH_EINTERNAL, "eventfd: %s", strerror(errno));
        link_destroy(l);
        return NULL;
    }
    guess_address(a);
    return l;
}

void link_destroy(struct link *l)
{
    if (!l)
        return;
    if (l->thread_started) {
        pthread_mutex_lock(&l->mu);
        l->quit = true;
        /* Cut its long-poll short: the call fails, the thread sees quit. */
        client_abort(l->poll_client);
        pthread_mutex_unlock(&l->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 2;
        if (pthread_timedjoin_np(l->thread, NULL, &ts) != 0) {
            /* An https long-poll cannot be cut short: cancel it. */
            pthread_cancel(l->thread);
            pthread_join(l->thread, NULL);
        }
    }
    json_decref(l->mailbox);
    client_destroy(l->client);
    if (l->efd >= 0)
        close(l->efd);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* ---- registration ---- */

static json_t *register_body(struct link *l)
{
    struct agent *a = l->a;
    json_t *labels = labels_to_json(a->cfg.labels, a->cfg.nlabels);
    /* "o" steals labels, gpus and the run list */
    return json_pack(
        "{s:s, s:s, s:i, s:I, s:o, s:o, s:o, s:s, s:b}", "name", a->cfg.name,
        "address", a->address, "cpus", a->cpus, "memory", (json_int_t)a->mem,
        "labels", labels, "gpus", gpus_to_json(a->gpus, a->ngpus), "running",
        runs_alive_json(a->runs), "version", SHOAL_VERSION, "mps", a->mps);
}

int link_register(struct link *l, struct sh_error *err)
{
    json_t *body = register_body(l);
    json_t *ans = NULL;
    int status = 0;
    int rc = -1;
    /* With the node's own token first; the join token when it is unknown
     * (a new node, or a controller that lost its state). */
    if (l->token[0]) {
        rc = client_call(l->client, "POST", "/v1/agent/register", body, &ans,
                         &status, err);
        if (rc < 0 && status != 401 && status != 403)
            goto out;
    }
    if (rc < 0 && token_file_changed(l)) {
        rc = client_call(l->client, "POST", "/v1/agent/register", body, &ans,
                         &status, err);
        if (rc < 0 && status != 401 && status != 403)
            goto out;
    }
    if (rc < 0) {
        if (!l->a->cfg.join_token[0]) {
            rc = sh_errorf(err, SH_EUNAUTH,
                           "the controller does not know this node and no "
                           "join token was given (--join-token-file)");
            goto out;
        }
        struct client *jc = connect_as(l, l->a->cfg.join_token, err);
        if (!jc)
            goto out;
        client_set_timeout(jc, CALL_TIMEOUT_MS);
        rc = client_call(jc, "POST", "/v1/agent/register", body, &ans, &status,
                         err);
        client_destroy(jc);
        if (rc < 0) {
            if (status == 401 || status == 403)
                sh_error_prefix(err, "the join token was refused: ");
            else if (status == 409)
                sh_error_prefix(err, "the controller refused to enroll this "
                                     "node again: ");
            goto out;
        }
    }
    const char *token = json_string_value(json_object_get(ans, "token"));
    if (token &&
        (save_token(l, token, err) < 0 || use_token(l, token, err) < 0)) {
        rc = -1;
        goto out;
    }
    l->connected = true;
    l->need_register = false;
    pthread_mutex_lock(&l->mu);
    l->poll_lost_node = false;
    pthread_mutex_unlock(&l->mu);
    agent_cluster_joined(l->a,
                         json_string_value(json_object_get(ans, "cluster_id")));
    /* Runs first; slicing may re-register, so not from inside a
     * registration. */
    runs_reconcile(l->a->runs, json_object_get(ans, "work"));
    slicing_apply(l->a,
                  json_object_get(json_object_get(ans, "work"), "slices"));
    sh_log(LOG_NOTICE, "link", "registered with %s as %s (address %s, %d GPUs)",
           l->a->cfg.controller, l->a->cfg.name, l->a->address, l->a->ngpus);
out:
    json_decref(body);
    json_decref(ans);
    return rc;
}

/* ---- heartbeats ---- */

void link_heartbeat_soon(struct link *l)
{
    if (l)
        l->heartbeat_due = true;
}

bool link_heartbeat_due(const struct link *l)
{
    return l->heartbeat_due;
}

static json_t *samples(struct link *l)
{
    struct agent *a = l->a;
    json_t *arr = json_array();
    int64_t now = clock_mono_ms();
    bool fresh = l->sampled_ms && now - l->sampled_ms < SAMPLE_REUSE_MS;
    if (a->gpu && a->ngpus > 0 && !fresh) {
        if (gpu_sample(a->gpu, a->gpus, a->ngpus, NULL) < 0) {
            l->sampled_ms = 0;
            return arr;
        }
        l->sampled_ms = now;
    }
    for (int i = 0; i < a->ngpus; i++)
        json_array_append_new(arr, json_pack("{s:i, s:i, s:I}", "index",
                                             a->gpus[i].index, "utilization",
                                             a->gpus[i].util_pct, "memory_used",
                                             (json_int_t)a->gpus[i].mem_used));
    return arr;
}

int link_heartbeat(struct link *l, struct sh_error *err)
{
    struct agent *a = l->a;
    pthread_mutex_lock(&l->mu);
    bool lost = l->poll_lost_node;
    pthread_mutex_unlock(&l->mu);
    if (l->need_register || lost) {
        if (link_register(l, err) < 0)
            return -1;
    }
    l->heartbeat_due = false;
    int nevents;
    json_t *events = runs_events_json(a->runs, &nevents);
    /* "o" steals samples, runs and errors; "O" keeps events for the ack */
    json_t *serr = slicing_take_errors(a);
    json_t *body = json_pack("{s:o, s:o, s:O, s:O}", "gpus", samples(l),
                             "running", runs_alive_json(a->runs), "events",
                             events, "slice_errors", serr);
    json_t *ans = NULL;
    int status = 0;
    int rc = client_call(l->client, "POST", "/v1/agent/heartbeat", body, &ans,
                         &status, err);
    json_decref(body);
    json_decref(ans);
    if (rc == 0) {
        l->connected = true;
        runs_events_acked(a->runs, events);
        json_decref(serr);
    } else {
        /* Not heard: keep the slicing errors for the next heartbeat. */
        if (json_array_size(serr) > 0) {
            if (!a->slice_errors)
                a->slice_errors = json_array();
            json_array_extend(a->slice_errors, serr);
        }
        json_decref(serr);
        l->connected = status != 0;
        if (status == 401 || status == 404 || status == 409)
            l->need_register = true;
        l->heartbeat_due = nevents > 0;
    }
    json_decref(events);
    return rc;
}

int link_push_log(struct link *l, uint64_t id, int attempt, const char *stream,
                  uint64_t offset, const char *data, size_t len,
                  uint64_t *stored, struct sh_error *err)
{
    char path[256];
    snprintf(path, sizeof(path),
             "/v1/agent/logs?job=%llu&attempt=%d&stream=%s&offset=%llu",
             (unsigned long long)id, attempt, stream,
             (unsigned long long)offset);
    char *out = NULL;
    size_t out_len = 0;
    int status;
    int rc = 0;
    if (client_call_raw(l->client, "POST", path, data, len, &out, &out_len,
                        &status, err) < 0) {
        if (status != 409)
            return -1;
        /* A gap: the controller has less than we think (it lost some).
         * Ask how much, to resend from there. */
        snprintf(path, sizeof(path),
                 "/v1/agent/logs?job=%llu&attempt=%d&stream=%s&offset=0",
                 (unsigned long long)id, attempt, stream);
        if (client_call_raw(l->client, "POST", path, "", 0, &out, &out_len,
                            &status, err) < 0)
            return -1;
        rc = 1;
    }
    json_t *ans = json_loadb(out, out_len, 0, NULL);
    *stored = (uint64_t)json_integer_value(json_object_get(ans, "stored"));
    json_decref(ans);
    free(out);
    return rc;
}

int link_call(struct link *l, const char *method, const char *path,
              const json_t *body, json_t **ans, struct sh_error *err)
{
    int status = 0;
    *ans = NULL;
    return client_call(l->client, method, path, body, ans, &status, err);
}

bool link_connected(const struct link *l)
{
    return l->connected;
}

/* ---- the long-poll thread ---- */

static void deliver(struct link *l, json_t *work)
{
    pthread_mutex_lock(&l->mu);
    json_decref(l->mailbox);
    l->mailbox = work;
    pthread_mutex_unlock(&l->mu);
    uint64_t one = 1;
    if (write(l->efd, &one, sizeof(one)) < 0) {
        /* the counter is saturated: the loop will read anyway */
    }
}

static void *poll_main(void *arg)
{
    struct link *l = arg;
    struct client *c = NULL;
    char token[256] = "";
    int64_t generation = -1;
    int backoff = 100;
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
    for (;;) {
        pthread_mutex_lock(&l->mu);
        bool quit = l->quit;
        bool changed = strcmp(token, l->poll_token) != 0;
        if (changed)
            snprintf(token, sizeof(token), "%s", l->poll_token);
        pthread_mutex_unlock(&l->mu);
        if (quit)
            break;
        if (changed || !c) {
            pthread_mutex_lock(&l->mu);
            client_destroy(c);
            c = connect_as(l, token, NULL);
            if (c)
                client_set_timeout(c, (POLL_WAIT_S + 15) * 1000);
            l->poll_client = c;
            pthread_mutex_unlock(&l->mu);
        }
        char path[128];
        if (generation < 0)
            snprintf(path, sizeof(path), "/v1/agent/work");
        else
            snprintf(path, sizeof(path),
                     "/v1/agent/work?generation=%lld&wait=%d",
                     (long long)generation, POLL_WAIT_S);
        json_t *work = NULL;
        int status = 0;
        struct sh_error err;
        if (c && client_call(c, "GET", path, NULL, &work, &status, &err) == 0) {
            backoff = 100;
            int64_t g = json_integer_value(json_object_get(work, "generation"));
            if (g != generation) {
                generation = g;
                deliver(l, work);
            } else {
                json_decref(work);
            }
            continue;
        }
        sh_log(LOG_WARNING, "link", "work poll failed: %s", err.msg);
        if (status == 401 || status == 404 || status == 409) {
            pthread_mutex_lock(&l->mu);
            l->poll_lost_node = true;
            pthread_mutex_unlock(&l->mu);
        }
        /* The controller may have restarted (or another taken over): ask
         * for the whole work at once rather than a held poll on a
         * generation that one may not know. */
        generation = -1;
        for (int waited = 0; waited < backoff; waited += 50) {
            pthread_mutex_lock(&l->mu);
            bool stop = l->quit;
            pthread_mutex_unlock(&l->mu);
            if (stop)
                break;
            usleep(50000);
        }
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    pthread_mutex_lock(&l->mu);
    l->poll_client = NULL;
    client_destroy(c);
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int link_start_poll(struct link *l, struct sh_error *err)
{
    int rc = pthread_create(&l->thread, NULL, poll_main, l);
    if (rc != 0)
        return sh_errorf(err, SH_EINTERNAL, "pthread_create: %s", strerror(rc));
    l->thread_started = true;
    return 0;
}

int link_work_fd(const struct link *l)
{
    return l->efd;
}

json_t *link_take_work(struct link *l)
{
    uint64_t n;
    if (read(l->efd, &n, sizeof(n)) < 0) {
        /* nothing pending */
    }
    pthread_mutex_lock(&l->mu);
    json_t *w = l->mailbox;
    l->mailbox = NULL;
    pthread_mutex_unlock(&l->mu);
    return w;
}
