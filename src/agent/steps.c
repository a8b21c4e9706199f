/* SPDX-License-Identifier: Apache-2.0 */
/* Job steps on this node: the socket srun and the step servers reach (see
 * steps.h). Messages are JSON objects, one per line, both ways:
 *   srun:   {"op": "step", "argv", "env", "cwd", "label",
 *            "kill_on_bad_exit", "ntasks", "parts"}
 *           -> {"step": k} | {"error": "..."}
 *           then {"op": "done", "exit": e} when its own part ended, and it
 *           reads {"exit": e} when the other parts ended (their highest)
 *   server: {"op": "serve"} -> {"op": "run", "step", "req", "first",
 *           "ntasks", "node_index", "cancel"} per part to run; it answers
 *           {"op": "exit", "step": k, "exit": e} for each.
 *   --kill-on-bad-exit: either side sends {"op": "cancel"} (srun; a
 *   server adds "step") when a task failed; the agent passes it to the
 *   controller, and {"op": "cancel"} (with "step" to a server) to the
 *   parts that still run. */
#include "agent/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/link.h"
#include "agent/runs.h"
#include "lib/client/client.h"
#include "lib/loop/loop.h"
#include "lib/util/log.h"

#define STEP_MSG_MAX (1 << 20) /* bytes of one message */
#define STEP_CONNS_MAX 1024
#define STEP_CONNS_PER_JOB 64

enum conn_kind { CONN_NEW, CONN_SRUN, CONN_SERVER };

struct conn {
    int fd;
    enum conn_kind kind;
    uint64_t id; /* the job it runs in */
    int attempt;
    int step;         /* srun: its step; -1 before it has one */
    bool told_exit;   /* srun: the other parts' end was sent */
    bool reported;    /* srun: its own part's end went to the controller */
    bool dead;        /* to close (reap) */
    bool srun_done;   /* srun: its own part ended, with srun_exit */
    bool told_cancel; /* srun: the step's cancel was sent */
    int srun_exit;
    struct steps *owner;
    char *buf; /* what was read of the current line */
    size_t len;
    struct conn *next;
};

struct steps {
    struct agent *a;
    int listen_fd;
    char sock[PATH_MAX];
    char bin[PATH_MAX];
    char program[PATH_MAX];
    struct conn *conns;
    int nconns;
    json_t *work; /* the newest desired work */
    json_t *sent; /* "id.attempt.step": parts handed to a server */
};

const char *steps_socket_path(const struct steps *s)
{
    return s->sock;
}

const char *steps_bin_dir(const struct steps *s)
{
    return s->bin;
}

const char *steps_program(const struct steps *s)
{
    return s->program;
}

static void conn_close(struct steps *s, struct conn *c)
{
    struct conn **pp = &s->conns;
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    loop_del_fd(s->a->loop, c->fd);
    close(c->fd);
    free(c->buf);
    free(c);
    s->nconns--;
}

/* One message to a connection; a peer that does not read it in time
 * (its socket buffer full) is dropped. */
static int conn_send(struct steps *s, struct conn *c, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return -1;
    size_t n = strlen(text);
    text[n] = '\n';
    ssize_t w = send(c->fd, text, n + 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    free(text);
    if (w != (ssize_t)(n + 1)) {
        c->dead = true;
        return -1;
    }
    return 0;
}

/* An answer that ends the conversation. */
static void conn_error(struct steps *s, struct conn *c, const char *msg)
{
    conn_send(s, c, json_pack("{s:s}", "error", msg));
    c->dead = true;
}

/* Close the connections marked dead. */
static void reap(struct steps *s)
{
    for (struct conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->dead)
            conn_close(s, c);
    }
}

/* ---- talking to the controller ---- */

static int call(struct steps *s, const char *path, json_t *body, json_t **ans,
                struct sh_error *err)
{
    int rc = link_call(s->a->link, "POST", path, body, ans, err);
    json_decref(body);
    return rc;
}

/* --kill-on-bad-exit: a part's task failed; the controller ends the
 * others. */
static void cancel_step(struct steps *s, uint64_t id, int attempt, int step)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/agent/jobs/%llu/steps/%d/cancel",
             (unsigned long long)id, step);
    struct sh_error err;
    json_t *ans = NULL;
    if (call(s, path, json_pack("{s:i}", "attempt", attempt), &ans, &err) < 0)
        sh_log(LOG_WARNING, "steps", "job %llu step %d: cancelling: %s",
               (unsigned long long)id, step, err.msg);
    json_decref(ans);
}

static void report_part(struct steps *s, uint64_t id, int attempt, int step,
                        int code)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/agent/jobs/%llu/steps/%d/done",
             (unsigned long long)id, step);
    struct sh_error err;
    json_t *ans = NULL;
    if (call(s, path, json_pack("{s:i, s:i}", "attempt", attempt, "exit", code),
             &ans, &err) < 0)
        sh_log(LOG_WARNING, "steps", "job %llu step %d: reporting its end: %s",
               (unsigned long long)id, step, err.msg);
    json_decref(ans);
}

/* srun's own part is reported once srun has heard the other parts' end:
 * until then the step stays open on the controller, whose work keeps
 * telling this node how the others ended (however late it polls). */
static void maybe_report(struct steps *s, struct conn *c)
{
    if (c->srun_done && c->told_exit && !c->reported) {
        c->reported = true;
        report_part(s, c->id, c->attempt, c->step, c->srun_exit);
    }
}

/* ---- handing work out ---- */

/* The job entry of the newest work for (id, attempt), or NULL. */
static const json_t *work_job(const struct steps *s, uint64_t id, int attempt)
{
    size_t i;
    json_t *j;
    json_array_foreach (json_object_get(s->work, "jobs"), i, j) {
        if ((uint64_t)json_integer_value(json_object_get(j, "id")) == id &&
            json_integer_value(json_object_get(j, "attempt")) == attempt)
            return j;
    }
    return NULL;
}

static void dispatch(struct steps *s)
{
    for (struct conn *c = s->conns; c; c = c->next) {
        if (c->dead)
            continue;
        const json_t *j = work_job(s, c->id, c->attempt);
        size_t i;
        json_t *st;
        if (c->kind == CONN_SERVER) {
            json_array_foreach (json_object_get(j, "steps"), i, st) {
                char key[96];
                snprintf(
                    key, sizeof(key), "%llu.%d.%lld", (unsigned long long)c->id,
                    c->attempt,
                    (long long)json_integer_value(json_object_get(st, "step")));
                if (!json_object_get(s->sent, key)) {
                    json_t *msg = json_deep_copy(st);
                    json_object_set_new(msg, "op", json_string("run"));
                    if (conn_send(s, c, msg) < 0)
                        break;
                    json_object_set_new(s->sent, key, json_true());
                }
                /* Sent once the part runs: "id.attempt.step.cancel". */
                strncat(key, ".cancel", sizeof(key) - strlen(key) - 1);
                if (json_is_true(json_object_get(st, "cancel")) &&
                    !json_object_get(s->sent, key)) {
                    if (conn_send(s, c,
                                  json_pack("{s:s, s:O}", "op", "cancel",
                                            "step",
                                            json_object_get(st, "step"))) < 0)
                        break;
                    json_object_set_new(s->sent, key, json_true());
                }
            }
        } else if (c->kind == CONN_SRUN && c->step >= 0) {
            json_array_foreach (json_object_get(j, "steps_cancel"), i, st) {
                if (json_integer_value(st) != c->step || c->told_cancel)
                    continue;
                c->told_cancel = true;
                conn_send(s, c, json_pack("{s:s}", "op", "cancel"));
            }
            if (c->told_exit)
                continue;
            json_array_foreach (json_object_get(j, "steps_done"), i, st) {
                if (json_integer_value(json_object_get(st, "step")) != c->step)
                    continue;
                c->told_exit = true;
                conn_send(
                    s, c,
                    json_pack("{s:O}", "exit", json_object_get(st, "exit")));
                maybe_report(s, c);
                break;
            }
        }
    }
}

void steps_work(struct steps *s, const json_t *work)
{
    json_decref(s->work);
    s->work = json_deep_copy(work);
    /* Forget what was handed out for attempts no longer here. */
    const char *key;
    json_t *v, *tmp;
    json_object_foreach_safe(s->sent, tmp, key, v)
    {
        unsigned long long id;
        int attempt;
        if (sscanf(key, "%llu.%d", &id, &attempt) != 2 ||
            !work_job(s, id, attempt))
            json_object_del(s->sent, key);
    }
    dispatch(s);
    reap(s);
}

/* ---- requests ---- */

static void on_step(struct steps *s, struct conn *c, json_t *msg,
                    const json_t *work)
{
    const json_t *spec = json_object_get(work, "spec");
    const char *launch = json_string_value(json_object_get(spec, "launch"));
    if (!launch || strcmp(launch, "batch") != 0) {
        conn_error(s, c,
                   "srun starts steps inside a batch job (shoal submit "
                   "SCRIPT); this job runs its command as its tasks");
        return;
    }
    if (json_integer_value(json_object_get(work, "node_rank")) != 0) {
        conn_error(s, c,
                   "srun runs in the batch script, on the job's first "
                   "node");
        return;
    }
    json_object_del(msg, "op");
    json_object_set_new(msg, "attempt", json_integer(c->attempt));
    char path[96];
    snprintf(path, sizeof(path), "/v1/agent/jobs/%llu/steps",
             (unsigned long long)c->id);
    json_t *ans = NULL;
    struct sh_error err;
    if (call(s, path, json_incref(msg), &ans, &err) < 0) {
        conn_error(s, c, err.msg);
        return;
    }
    c->kind = CONN_SRUN;
    c->step = (int)json_integer_value(json_object_get(ans, "step"));
    json_decref(ans);
    conn_send(s, c, json_pack("{s:i}", "step", c->step));
}

static void on_message(struct steps *s, struct conn *c, json_t *msg)
{
    const char *op = json_string_value(json_object_get(msg, "op"));
    if (!op) {
        conn_error(s, c, "a message needs an op");
        return;
    }
    if (c->kind == CONN_NEW) {
        /* Who asks: the job its process runs in, from its pid. */
        struct ucred cred;
        socklen_t len = sizeof(cred);
        const json_t *work = NULL;
        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
            work = runs_work_of_pid(s->a->runs, cred.pid);
        if (!work) {
            conn_error(s, c,
                       "not inside a job on this node: steps start only "
                       "from a job's own processes");
            return;
        }
        c->id = (uint64_t)json_integer_value(json_object_get(work, "id"));
        c->attempt = (int)json_integer_value(json_object_get(work, "attempt"));
        if (strcmp(op, "step") == 0) {
            on_step(s, c, msg, work);
        } else if (strcmp(op, "serve") == 0) {
            c->kind = CONN_SERVER;
            dispatch(s);
        } else {
            conn_error(s, c, "unknown op");
        }
        return;
    }
    int code = (int)json_integer_value(json_object_get(msg, "exit"));
    if (c->kind == CONN_SRUN && strcmp(op, "done") == 0 && !c->srun_done) {
        c->srun_done = true;
        c->srun_exit = code;
        maybe_report(s, c);
    } else if (strcmp(op, "cancel") == 0 &&
               (c->kind == CONN_SRUN || c->kind == CONN_SERVER)) {
        cancel_step(s, c->id, c->attempt,
                    c->kind == CONN_SRUN ? c->step
                                         : (int)json_integer_value(
                                               json_object_get(msg, "step")));
    } else if (c->kind == CONN_SERVER && strcmp(op, "exit") == 0) {
        report_part(s, c->id, c->attempt,
                    (int)json_integer_value(json_object_get(msg, "step")),
                    code);
    } else {
        conn_error(s, c, "unexpected message");
    }
}

static void on_readable(struct loop *loop, int fd, uint32_t events, void *arg)
{
    (void)loop;
    (void)events;
    struct conn *c = arg;
    struct steps *s = c->owner;
    char chunk[65536];
    ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        /* An srun gone before saying how its part ended (killed): its
         * part ended badly. */
        if (c->kind == CONN_SRUN && !c->reported) {
            c->reported = true;
            report_part(s, c->id, c->attempt, c->step,
                        c->srun_done ? c->srun_exit : 1);
        }
        c->dead = true;
    } else if (c->len + (size_t)n > STEP_MSG_MAX) {
        conn_error(s, c, "message too long");
    } else {
        char *b = realloc(c->buf, c->len + (size_t)n + 1);
        if (!b) {
            c->dead = true;
        } else {
            c->buf = b;
            memcpy(c->buf + c->len, chunk, (size_t)n);
            c->len += (size_t)n;
        }
    }
    char *nl;
    while (!c->dead && (nl = memchr(c->buf, '\n', c->len)) != NULL) {
        size_t line = (size_t)(nl - c->buf);
        json_t *msg = json_loadb(c->buf, line, 0, NULL);
        memmove(c->buf, nl + 1, c->len - line - 1);
        c->len -= line + 1;
        if (!json_is_object(msg))
            conn_error(s, c, "not a JSON object");
        else
            on_message(s, c, msg);
        json_decref(msg);
    }
    reap(s);
}

static void on_accept(struct loop *loop, int fd, uint32_t events, void *arg)
{
    (void)events;
    struct steps *s = arg;
    int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (cfd < 0)
        return;
    struct conn *c = s->nconns < STEP_CONNS_MAX ? calloc(1, sizeof(*c)) : NULL;
    if (!c) {
        close(cfd);
        return;
    }
    c->fd = cfd;
    c->owner = s;
    c->step = -1;
    /* Who connects, at once: a process outside every job is turned away
     * before it holds a connection, and one job holds at most
     * STEP_CONNS_PER_JOB of them. */
    struct ucred cred;
    socklen_t len = sizeof(cred);
    const json_t *work = NULL;
    if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
        work = runs_work_of_pid(s->a->runs, cred.pid);
    int same = 0;
    if (work) {
        c->id = (uint64_t)json_integer_value(json_object_get(work, "id"));
        for (struct conn *o = s->conns; o; o = o->next)
            same += o->id == c->id && !o->dead;
    }
    if (!work || same >= STEP_CONNS_PER_JOB) {
        conn_error(s, c,
                   !work ? "not inside a job on this node: steps start only "
                           "from a job's own processes"
                         : "this job holds too many connections to the "
                           "agent (steps asked at once)");
        close(cfd);
        free(c);
        return;
    }
    if (loop_add_fd(loop, cfd, EPOLLIN, on_readable, c, NULL) < 0) {
        close(cfd);
        free(c);
        return;
    }
    c->next = s->conns;
    s->conns = c;
    s->nconns++;
}

/* <state>/bin/srun and scontrol, links to the shoal-step program. */
static int make_links(struct steps *s, struct sh_error *err)
{
    static const char *const names[] = {"srun", "scontrol"};
    if (mkdir(s->bin, 0755) < 0 && errno != EEXIST)
        return sh_errorf(err, SH_EINTERNAL, "cannot make %s: %s", s->bin,
                         strerror(errno));
    chmod(s->bin, 0755);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/%s", s->bin, names[i]);
        unlink(path);
        if (symlink(s->program, path) < 0)
            return sh_errorf(err, SH_EINTERNAL, "cannot link %s: %s", path,
                             strerror(errno));
    }
    return 0;
}

struct steps *steps_create(struct agent *a, const char *step_bin,
                           struct sh_error *err)
{
    struct steps *s = calloc(1, sizeof(*s));
    if (!s || !(s->sent = json_object())) {
        free(s);
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    s->a = a;
    s->listen_fd = -1;
    snprintf(s->program, sizeof(s->program), "%s", step_bin);
    snprintf(s->bin, sizeof(s->bin), "%s/bin", a->cfg.state_dir);
    int n =
        snprintf(s->sock, sizeof(s->sock), "%s/step.sock", a->cfg.state_dir);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (n < 0 || (size_t)n >= sizeof(addr.sun_path)) {
        sh_errorf(err, SH_EINVAL,
                  "the state folder's path is too long for "
                  "the step socket");
        goto fail;
    }
    memcpy(addr.sun_path, s->sock, (size_t)n + 1);
    if (make_links(s, err) < 0)
        goto fail;
    s->listen_fd =
        socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    unlink(s->sock);
    if (s->listen_fd < 0 ||
        bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
        chmod(s->sock, 0666) < 0 || listen(s->listen_fd, 64) < 0 ||
        loop_add_fd(a->loop, s->listen_fd, EPOLLIN, on_accept, s, NULL) < 0) {
        sh_errorf(err, SH_EINTERNAL, "step socket %s: %s", s->sock,
                  strerror(errno));
        goto fail;
    }
    return s;
fail:
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    json_decref(s->sent);
    free(s);
    return NULL;
}

void steps_destroy(struct steps *s)
{
    if (!s)
        return;
    while (s->conns)
        conn_close(s, s->conns);
    if (s->listen_fd >= 0) {
        loop_del_fd(s->a->loop, s->listen_fd);
        close(s->listen_fd);
        unlink(s->sock);
    }
    json_decref(s->work);
    json_decref(s->sent);
    free(s);
}
