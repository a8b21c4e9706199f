/* SPDX-License-Identifier: Apache-2.0 */
/* Job output storage and serving (see logs.h). */
#include "shoald/logs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/loop/loop.h"
#include "lib/util/clock.h"
#include "lib/util/utf8.h"
#include "shoald/jobtab.h"

#define LOGS_TICK_MS 500

struct log_waiter {
    uint64_t job;
    char stream[8];
    int attempt;
    uint64_t offset;
    int64_t deadline_ms;
    logs_wake_f fn;
    void *arg;
    struct log_waiter *next;
};

struct logs {
    struct loop *loop;
    /* The controller's job table; through its owner's pointer, which a
     * reload after a failed commit replaces. */
    struct jobtab *const *jobs;
    char dir[4096];
    struct log_waiter *waiters;
    int64_t timer;
};

static void job_dir(const struct logs *l, uint64_t id, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%llu", l->dir, (unsigned long long)id);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static int append_file(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return close(fd);
}

static void answer(struct logs *l, struct log_waiter *w);

static int64_t tick(struct loop *loop, void *arg)
{
    struct logs *l = arg;
    (void)loop;
    int64_t now = clock_wall_ms();
    struct log_waiter **pp = &l->waiters;
    while (*pp) {
        struct log_waiter *w = *pp;
        if (w->deadline_ms <= now) {
            *pp = w->next;
            answer(l, w);
        } else {
            pp = &w->next;
        }
    }
    return LOGS_TICK_MS;
}

struct logs *logs_create(const char *state_dir, struct loop *loop,
                         struct jobtab *const *jobs, struct sh_error *err)
{
    struct logs *l = calloc(1, sizeof(*l));
    if (!l) {
        sh_errorf(err, SH_EINTERNAL, "out of memory");
        return NULL;
    }
    l->loop = loop;
    l->jobs = jobs;
    snprintf(l->dir, sizeof(l->dir), "%s/logs", state_dir);
    if (mkdir(l->dir, 0700) < 0 && errno != EEXIST) {
        sh_errorf(err, SH_EUNAVAILABLE, "cannot create %s: %s", l->dir,
                  strerror(errno));
        free(l);
        return NULL;
    }
    l->timer = loop_add_timer(loop, LOGS_TICK_MS, tick, l);
    return l;
}

void logs_destroy(struct logs *l)
{
    if (!l)
        return;
    while (l->waiters) {
        struct log_waiter *w = l->waiters;
        l->waiters = w->next;
        answer(l, w);
    }
    loop_del_timer(l->loop, l->timer);
    free(l);
}

static bool stream_valid(const char *s)
{
    return strcmp(s, "out") == 0 || strcmp(s, "err") == 0;
}

int logs_append(struct logs *l, const struct job *job, const char *node,
                const char *stream, uint64_t offset, const char *data,
                size_t len, uint64_t *stored, struct sh_error *err)
{
    char dir[4200], path[4400], all[4400];
    if (!stream_valid(stream))
        return sh_errorf(err, SH_EINVAL, "stream must be out or err");
    job_dir(l, job->id, dir, sizeof(dir));
    if (mkdir(dir, 0750) < 0 && errno != EEXIST)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot create %s: %s", dir,
                         strerror(errno));
    snprintf(path, sizeof(path), "%s/%d.%s.%s", dir, job_attempt(job), node,
             stream);
    snprintf(all, sizeof(all), "%s/%d.all", dir, job_attempt(job));
    uint64_t have = file_size(path);
    *stored = have;
    if (offset + len <= have)
        return 0; /* all of it came before */
    if (offset > have)
        return sh_errorf(err, SH_ECONFLICT,
                         "output of job %llu stream %s at offset %llu would "
                         "leave a gap: the controller has %llu bytes",
                         (unsigned long long)job->id, stream,
                         (unsigned long long)offset, (unsigned long long)have);
    if (offset < have) {
        data += have - offset;
        len -= (size_t)(have - offset);
    }
    uint64_t total = file_size(all);
    if (total >= LOGS_JOB_MAX)
        return 0;
    if (total + len > LOGS_JOB_MAX) {
        static const char marker[] =
            "\n[shoal: output beyond 256 MiB was dropped]\n";
        append_file(all, marker, sizeof(marker) - 1);
        len = 0;
    }
    if (append_file(path, data, len) < 0 || append_file(all, data, len) < 0)
        return sh_errorf(err, SH_EUNAVAILABLE, "cannot write %s: %s", path,
                         strerror(errno));
    *stored = have + len;
    logs_job_changed(l, job->id);
    return 0;
}

/* The file of one stream of one attempt. The current attempt's out/err is
 * its first node's; an earlier attempt ran elsewhere, so its first node's
 * file is found by name (the smallest "<attempt>.<node>.<stream>"). */
static void stream_path(struct logs *l, const struct job *job, int attempt,
                        const char *stream, char *path, size_t size)
{
    char dir[4200];
    job_dir(l, job->id, dir, sizeof(dir));
    if (strcmp(stream, "all") == 0) {
        snprintf(path, size, "%s/%d.all", dir, attempt);
        return;
    }
    if (attempt == job_attempt(job) && job->nalloc) {
        snprintf(path, size, "%s/%d.%s.%s", dir, attempt, job->alloc[0].node,
                 stream);
        return;
    }
    char prefix[32], best[256] = "";
    int plen = snprintf(prefix, sizeof(prefix), "%d.", attempt);
    DIR *dp = opendir(dir);
    struct dirent *e;
    while (dp && (e = readdir(dp)) != NULL) {
        size_t n = strlen(e->d_name), sl = strlen(stream);
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0 ||
            n <= (size_t)plen + sl + 1 || n >= sizeof(best) ||
            e->d_name[n - sl - 1] != '.' ||
            strcmp(e->d_name + n - sl, stream) != 0)
            continue;
        if (!best[0] || strcmp(e->d_name, best) < 0)
            snprintf(best, sizeof(best), "%s", e->d_name);
    }
    if (dp)
        closedir(dp);
    snprintf(path, size, "%s/%s", dir, best[0] ? best : "-");
}

/* Fill the answer for a read of one attempt at offset: data (UTF-8,
 * invalid bytes replaced), next offset, whether more is there and whether
 * the attempt will write no more (an earlier attempt never does). */
static json_t *read_answer(struct logs *l, const struct job *job, int attempt,
                           const char *stream, uint64_t offset)
{
    char path[4400];
    stream_path(l, job, attempt, stream, path, sizeof(path));
    uint64_t size = file_size(path);
    char *buf = NULL;
    size_t n = 0;
    if (offset < size) {
        uint64_t want = size - offset;
        if (want > LOGS_READ_MAX)
            want = LOGS_READ_MAX;
        buf = malloc((size_t)want);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (buf && fd >= 0) {
            ssize_t r = pread(fd, buf, (size_t)want, (off_t)offset);
            n = r > 0 ? (size_t)r : 0;
        }
        if (fd >= 0)
            close(fd);
    }
    /* Cut at the last complete UTF-8 sequence so a character split across
     * reads is not mangled. */
    size_t keep = utf8_complete_prefix(buf, n, offset + n < size);
    char *text = utf8_sanitize(buf ? buf : "", keep);
    free(buf);
    bool finished = attempt < job_attempt(job) ||
                    (job_state_is_terminal(job->state) && !job->releasing);
    json_t *o = json_pack(
        "{s:s, s:I, s:b, s:b, s:i, s:i}", "data", text ? text : "", "offset",
        (json_int_t)(offset + keep), "more", offset + keep < size, "eof",
        finished && offset + keep >= size, "attempt", attempt, "attempts",
        job_attempt(job) + 1);
    free(text);
    return o;
}

static void answer(struct logs *l, struct log_waiter *w)
{
    const struct job *job = jobtab_get(*l->jobs, w->job);
    w->fn(w->job,
          job ? read_answer(l, job, w->attempt, w->stream, w->offset) : NULL,
          w->arg);
    free(w);
}

void logs_job_changed(struct logs *l, uint64_t job_id)
{
    if (!l)
        return;
    struct log_waiter **pp = &l->waiters;
    while (*pp) {
        struct log_waiter *w = *pp;
        if (w->job == job_id) {
            *pp = w->next;
            answer(l, w);
        } else {
            pp = &w->next;
        }
    }
}

json_t *logs_read(struct logs *l, const struct job *job, int attempt,
                  const char *stream, uint64_t offset, uint64_t tail,
                  uint64_t *start, struct sh_error *err)
{
    if (strcmp(stream, "all") != 0 && !stream_valid(stream)) {
        sh_errorf(err, SH_EINVAL, "stream must be all, out or err");
        return NULL;
    }
    if (attempt >= 0 && job->spec.output) {
        sh_errorf(err, SH_EINVAL,
                  "job %llu wrote its output to its --output file, where "
                  "every attempt appends: no output is kept per attempt",
                  (unsigned long long)job->id);
        return NULL;
    }
    if (attempt > job_attempt(job)) {
        if (job_attempt(job) == 0)
            sh_errorf(err, SH_ENOTFOUND,
                      "job %llu has no attempt %d: it has one, attempt 0",
                      (unsigned long long)job->id, attempt);
        else
            sh_errorf(err, SH_ENOTFOUND,
                      "job %llu has no attempt %d: its attempts are 0 to %d",
                      (unsigned long long)job->id, attempt, job_attempt(job));
        return NULL;
    }
    if (attempt < 0)
        attempt = job_attempt(job);
    if (tail > 0) {
        /* The last tail bytes; the answer's offset continues from there. */
        char path[4400];
        stream_path(l, job, attempt, stream, path, sizeof(path));
        uint64_t size = file_size(path);
        offset = size > tail ? size - tail : 0;
    }
    *start = offset;
    return read_answer(l, job, attempt, stream, offset);
}

int logs_wait(struct logs *l, const struct job *job, int attempt,
              const char *stream, uint64_t offset, int64_t deadline_ms,
              logs_wake_f fn, void *arg, struct sh_error *err)
{
    struct log_waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    snprintf(w->stream, sizeof(w->stream), "%s", stream);
    w->attempt = attempt < 0 ? job_attempt(job) : attempt;
    w->offset = offset;
    w->job = job->id;
    w->deadline_ms = deadline_ms;
    w->fn = fn;
    w->arg = arg;
    w->next = l->waiters;
    l->waiters = w;
    return 0;
}
