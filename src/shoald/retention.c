/* SPDX-License-Identifier: Apache-2.0 */
/* Pruning of ended jobs' output and history (retention.h). */
#include "shoald/retention.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util/log.h"
#include "lib/util/prom.h"
#include "shoald/commit.h"
#include "shoald/jobtab.h"
#include "shoald/shoald.h"
#include "store/store.h"

/* History rows deleted per transaction: a pass over a long backlog holds
 * the store for short moments, several in a row. */
#define PRUNE_BATCH 1000
#define PRUNE_BATCHES_PER_PASS 50

struct retention {
    int64_t next_ms; /* when the next pass is due; 0: at the first tick */
    uint64_t output_bytes, output_jobs, history_jobs; /* last pass */
    uint64_t output_pruned, history_pruned;           /* since start */
    bool measured;                                    /* a pass ran */
};

struct job_output {
    uint64_t id;
    int64_t mtime_ms; /* of its newest file */
    uint64_t bytes;
};

struct retention *retention_create(struct sh_error *err)
{
    struct retention *r = calloc(1, sizeof(*r));
    if (!r)
        sh_errorf(err, SH_EINTERNAL, "out of memory");
    return r;
}

void retention_destroy(struct retention *r)
{
    free(r);
}

/* The size and newest write of one job's output folder. */
static int measure(const char *dir, struct job_output *o)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(dp)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (fstatat(dirfd(dp), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode))
            continue;
        o->bytes += (uint64_t)st.st_size;
        int64_t ms =
            (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        if (ms > o->mtime_ms)
            o->mtime_ms = ms;
    }
    closedir(dp);
    return 0;
}

static void remove_output(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(dp), e->d_name, 0);
    }
    closedir(dp);
    if (rmdir(dir) < 0)
        sh_log(LOG_WARNING, "retention", "cannot remove %s: %s", dir,
               strerror(errno));
}

static int by_age(const void *a, const void *b)
{
    const struct job_output *x = a, *y = b;
    if (x->mtime_ms != y->mtime_ms)
        return x->mtime_ms < y->mtime_ms ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* A job whose output may go: ended, or gone from memory (ended long ago). */
static bool job_ended(const struct shoald *d, uint64_t id)
{
    const struct job *j = d->jobs ? jobtab_get(d->jobs, id) : NULL;
    return !j || j->end_ms > 0;
}

static void prune_output(struct shoald *d, struct retention *r, int64_t now)
{
    char logs[4200];
    snprintf(logs, sizeof(logs), "%s/logs", d->cfg.state_dir);
    DIR *dp = opendir(logs);
    if (!dp) {
        r->output_bytes = r->output_jobs = 0;
        return;
    }
    struct job_output *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *e;
    char dir[4500];
    while ((e = readdir(dp)) != NULL) {
        char *end;
        unsigned long long id = strtoull(e->d_name, &end, 10);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end)
            continue;
        struct job_output o = {.id = id};
        snprintf(dir, sizeof(dir), "%s/%s", logs, e->d_name);
        if (measure(dir, &o) < 0)
            continue;
        total += o.bytes;
        if (!job_ended(d, id))
            continue; /* counted, never pruned */
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            struct job_output *nv = realloc(v, ncap * sizeof(*v));
            if (!nv)
                break;
            v = nv;
            cap = ncap;
        }
        v[n++] = o;
    }
    closedir(dp);
    if (n > 1)
        qsort(v, n, sizeof(*v), by_age);
    uint64_t jobs = 0, pruned = 0;
    int64_t keep_ms = d->cfg.keep_output_ms;
    uint64_t cap_bytes = d->cfg.keep_output_size;
    for (size_t i = 0; i < n; i++) {
        bool old = keep_ms > 0 && v[i].mtime_ms < now - keep_ms;
        bool over = cap_bytes > 0 && total > cap_bytes;
        if (!old && !over)
            continue;
        snprintf(dir, sizeof(dir), "%s/%llu", logs,
                 (unsigned long long)v[i].id);
        remove_output(dir);
        total -= v[i].bytes;
        pruned++;
    }
    free(v);
    /* Count what is left (pending and running jobs' output included). */
    dp = opendir(logs);
    while (dp && (e = readdir(dp)) != NULL)
        jobs += e->d_name[0] >= '0' && e->d_name[0] <= '9';
    if (dp)
        closedir(dp);
    if (pruned)
        sh_log(LOG_INFO, "retention",
               "removed the output of %llu ended jobs; %llu bytes kept",
               (unsigned long long)pruned, (unsigned long long)total);
    r->output_pruned += pruned;
    r->output_bytes = total;
    r->output_jobs = jobs;
}

static void prune_history(struct shoald *d, struct retention *r, int64_t now)
{
    struct sh_error err;
    int64_t keep_ms = d->cfg.keep_history_ms;
    uint64_t total = 0;
    for (int i = 0; keep_ms > 0 && i < PRUNE_BATCHES_PER_PASS; i++) {
        int n = 0;
        if (store_prune_jobs(d->store, now - keep_ms, PRUNE_BATCH, &n, &err) <
            0) {
            sh_log(LOG_WARNING, "retention", "%s", err.msg);
            break;
        }
        total += (uint64_t)n;
        if (n < PRUNE_BATCH)
            break;
    }
    if (total)
        sh_log(LOG_INFO, "retention",
               "removed %llu jobs that ended over --keep-history ago",
               (unsigned long long)total);
    r->history_pruned += total;
    uint64_t kept;
    if (store_count_jobs(d->store, &kept, &err) == 0)
        r->history_jobs = kept;
}

void retention_tick(struct shoald *d, int64_t now)
{
    struct retention *r = d->retention;
    if (!r || now < r->next_ms)
        return;
    /* History goes between commits only (store.h); output any time. */
    if (commit_dirty(d->commit))
        return;
    r->next_ms = now + d->cfg.retention_interval_ms;
    prune_output(d, r, now);
    prune_history(d, r, now);
    r->measured = true;
}

void retention_figures(const struct shoald *d, struct prom *p)
{
    const struct retention *r = d->retention;
    if (!r || !r->measured)
        return;
    prom_family(p, "shoal_output_kept_bytes", "gauge",
                "Bytes of job output the controller keeps (at the last "
                "retention pass).");
    prom_sample(p, "shoal_output_kept_bytes", NULL, (double)r->output_bytes);
    prom_family(p, "shoal_output_kept_jobs", "gauge",
                "Jobs whose output the controller keeps.");
    prom_sample(p, "shoal_output_kept_jobs", NULL, (double)r->output_jobs);
    prom_family(p, "shoal_history_kept_jobs", "gauge",
                "Jobs the store keeps (the history).");
    prom_sample(p, "shoal_history_kept_jobs", NULL, (double)r->history_jobs);
    prom_family(p, "shoal_output_pruned_jobs_total", "counter",
                "Jobs whose output retention removed (--keep-output, "
                "--keep-output-size).");
    prom_sample(p, "shoal_output_pruned_jobs_total", NULL,
                (double)r->output_pruned);
    prom_family(p, "shoal_history_pruned_jobs_total", "counter",
                "Jobs retention removed from the store (--keep-history).");
    prom_sample(p, "shoal_history_pruned_jobs_total", NULL,
                (double)r->history_pruned);
}
