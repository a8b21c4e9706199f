/* SPDX-License-Identifier: Apache-2.0 */
/* bench-store: the store alone, without the controller: commits of batches
 * of B new jobs (each with a record the size of a real one), one after the
 * other, and prints commits/s and jobs/s. Tells how much of the controller's
 * submission rate the store's group commit allows, for each backend.
 *
 *   bench-store URL [JOBS] [BATCH]
 * URL: a SQLite path (sqlite:PATH) or postgresql://... (an empty database).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/util/clock.h"
#include "store/store.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench-store URL [JOBS] [BATCH]\n");
        return 2;
    }
    long jobs = argc > 2 ? atol(argv[2]) : 50000;
    long batch = argc > 3 ? atol(argv[3]) : 32;
    if (jobs < 1 || batch < 1) {
        fprintf(stderr, "bench-store: JOBS and BATCH must be positive\n");
        return 2;
    }
    struct sh_error err;
    struct store *st = store_open(argv[1], &err);
    if (!st) {
        fprintf(stderr, "bench-store: %s\n", err.msg);
        return 1;
    }
    uint64_t epoch;
    char leader[256];
    if (store_leader_try(st, "bench", &epoch, leader, sizeof(leader), &err) !=
        1) {
        fprintf(stderr, "bench-store: cannot lead: %s\n", err.msg);
        return 1;
    }
    struct store_batch *b = store_batch_create();
    json_t *rec = json_pack(
        "{s:I, s:s, s:s, s:s, s:[s,s], s:i, s:s, s:I, s:{s:s, s:s}}", "id",
        (json_int_t)0, "state", "pending", "user", "alice", "project", "vision",
        "command", "python", "train.py", "gpus", 1, "gpu_model", "H100-80GB",
        "submit_time", (json_int_t)clock_wall_ms(), "env", "PATH",
        "/usr/bin:/bin", "HOME", "/home/alice");
    int64_t t0 = clock_mono_us();
    long commits = 0;
    for (long id = 1; id <= jobs;) {
        for (long i = 0; i < batch && id <= jobs; i++, id++) {
            json_object_set_new(rec, "id", json_integer(id));
            struct store_job_row row = {
                .id = (uint64_t)id,
                .state = "pending",
                .user = "alice",
                .project = "vision",
                .submit_ms = clock_wall_ms(),
            };
            store_batch_put_job(b, &row, rec);
        }
        if (store_commit(st, b, &err) < 0) {
            fprintf(stderr, "bench-store: commit: %s\n", err.msg);
            return 1;
        }
        commits++;
    }
    double s = (double)(clock_mono_us() - t0) / 1e6;
    printf("store_commit_batch_%ld: %.0f commits/s, %.0f jobs/s, %.2f ms per "
           "commit\n",
           batch, commits / s, jobs / s, s * 1000 / commits);
    json_decref(rec);
    store_batch_destroy(b);
    store_close(st);
    return 0;
}
