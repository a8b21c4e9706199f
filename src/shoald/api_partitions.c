/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/partitions and /v1/qos: the REST face of partitions.c. Every user
 * sees them (Slurm users list partitions with sinfo); only cluster admins
 * create and delete them (the routes say so). One that pending or running
 * jobs name cannot be deleted. */
#include <stdio.h>
#include <string.h>

#include "lib/model/partition.h"
#include "lib/util/utf8.h"
#include "shoald/api_handlers.h"
#include "shoald/partitions.h"

static const char *const list_key[] = {"partitions", "qos"};
static const char *const kind_name[] = {"partition", "qos"};

static void list(struct shoald *d, struct api_req *req,
                 enum partitions_kind kind)
{
    json_t *all = partitions_list(d->partitions, kind);
    api_reply_json(req, 200, json_pack("{s:o}", list_key[kind], all));
}

static void show(struct shoald *d, struct api_req *req,
                 enum partitions_kind kind)
{
    const json_t *rec = partitions_get(d->partitions, kind, api_param(req, 0));
    if (!rec) {
        api_errorf(req, SH_ENOTFOUND, "%s %.*s does not exist", kind_name[kind],
                   UTF8_CUT(api_param(req, 0), 64));
        return;
    }
    api_reply_json(req, 200, json_deep_copy(rec));
}

static void create(struct shoald *d, struct api_req *req,
                   enum partitions_kind kind)
{
    struct sh_error err;
    json_t *body = api_body(req);
    if (!body)
        return;
    json_t *rec = kind == PARTITIONS_QOS
                      ? qos_from_request(body, shoald_now_ms(d), &err)
                      : partition_from_request(body, shoald_now_ms(d), &err);
    if (!rec ||
        partitions_add(d->partitions, shoald_batch(d), kind, rec, &err) < 0) {
        json_decref(rec);
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 201, rec); /* steals rec */
}

static void delete_one(struct shoald *d, struct api_req *req,
                       enum partitions_kind kind)
{
    struct sh_error err;
    const char *name = api_param(req, 0);
    unsigned long long first = 0;
    int n = partitions_users(d->jobs, kind, name, &first);
    if (n > 0) {
        api_errorf(req, SH_ECONFLICT,
                   "%d pending or running jobs use %s %.*s (job %llu "
                   "first): cancel them or wait",
                   n, kind_name[kind], UTF8_CUT(name, 64), first);
        return;
    }
    if (partitions_delete(d->partitions, shoald_batch(d), kind, name, &err) <
        0) {
        api_reply_error(req, &err);
        return;
    }
    api_reply_json(req, 200, json_pack("{s:s}", "deleted", name));
}

void api_partitions_list(struct shoald *d, struct api_req *req)
{
    list(d, req, PARTITIONS_PARTITION);
}

void api_partitions_show(struct shoald *d, struct api_req *req)
{
    show(d, req, PARTITIONS_PARTITION);
}

void api_partitions_create(struct shoald *d, struct api_req *req)
{
    create(d, req, PARTITIONS_PARTITION);
}

void api_partitions_delete(struct shoald *d, struct api_req *req)
{
    delete_one(d, req, PARTITIONS_PARTITION);
}

void api_qos_list(struct shoald *d, struct api_req *req)
{
    list(d, req, PARTITIONS_QOS);
}

void api_qos_show(struct shoald *d, struct api_req *req)
{
    show(d, req, PARTITIONS_QOS);
}

void api_qos_create(struct shoald *d, struct api_req *req)
{
    create(d, req, PARTITIONS_QOS);
}

void api_qos_delete(struct shoald *d, struct api_req *req)
{
    delete_one(d, req, PARTITIONS_QOS);
}
