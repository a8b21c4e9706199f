/* SPDX-License-Identifier: Apache-2.0 */
/* CSI node calls (see csi.h). Each call packs its request with protobuf-c,
 * makes it with grpc_call() and retries the transient failures the
 * specification names. */
#include "lib/csi/csi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SHOAL_HAVE_CSI
#include "lib/csi/csi.pb-c.h"
#include "lib/csi/grpc.h"
#include "lib/util/clock.h"
#endif

/* A node call's whole budget, retries included. */
#define CSI_TIMEOUT_MS 30000
#define CSI_TRIES 4
/* The controller makes its calls in its loop: kept short. */
#define CSI_CONTROLLER_TIMEOUT_MS 5000
#define CSI_CONTROLLER_TRIES 2

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

#ifndef SHOAL_HAVE_CSI

bool csi_available(void)
{
    return false;
}

static int unavailable(const json_t *m, char *why, size_t size)
{
    snprintf(why, size,
             "volume %s: this agent was built without CSI support "
             "(libprotobuf-c-dev, protobuf-c-compiler, libnghttp2-dev)",
             str(m, "name"));
    return -1;
}

int csi_stages(const json_t *m, char *why, size_t size)
{
    return unavailable(m, why, size);
}

int csi_stage(const json_t *m, const char *staging, char *why, size_t size)
{
    (void)staging;
    return unavailable(m, why, size);
}

int csi_unstage(const json_t *m, const char *staging, char *why, size_t size)
{
    (void)staging;
    return unavailable(m, why, size);
}

int csi_publish(const json_t *m, const char *staging, const char *target,
                char *why, size_t size)
{
    (void)staging;
    (void)target;
    return unavailable(m, why, size);
}

int csi_unpublish(const json_t *m, const char *target, char *why, size_t size)
{
    (void)target;
    return unavailable(m, why, size);
}

int csi_create_volume(const char *socket, const char *name, int64_t capacity,
                      bool readonly, const json_t *parameters, char **volume_id,
                      json_t **context, char *why, size_t size)
{
    (void)socket;
    (void)capacity;
    (void)readonly;
    (void)parameters;
    (void)volume_id;
    (void)context;
    snprintf(why, size,
             "volume %s: this controller was built without CSI support "
             "(libprotobuf-c-dev, protobuf-c-compiler, libnghttp2-dev)",
             name);
    return -1;
}

int csi_delete_volume(const char *socket, const char *volume_id, char *why,
                      size_t size)
{
    (void)socket;
    snprintf(why, size,
             "volume %s: this controller was built without CSI support",
             volume_id);
    return -1;
}

#else

bool csi_available(void)
{
    return true;
}

static bool transient(int status)
{
    return status == GRPC_UNAVAILABLE || status == GRPC_RESOURCE_EXHAUSTED ||
           status == GRPC_DEADLINE_EXCEEDED;
}

/* Make one call, retrying transient failures, all within timeout_ms: the
 * deadline covers every attempt and the pauses between them, so a plugin
 * that never answers costs the caller timeout_ms, not tries times it. The
 * reply's body is the caller's to free (grpc_reply_fini) on success. */
static int call_at(const char *socket, const char *what, const char *method,
                   const uint8_t *req, size_t len, int timeout_ms, int tries,
                   struct grpc_reply *reply, char *why, size_t size)
{
    char path[128];
    snprintf(path, sizeof(path), "/csi.v1.%s", method);
    int64_t until = clock_mono_ms() + timeout_ms;
    int delay_ms = 200;
    for (int attempt = 1;; attempt++) {
        int64_t left = until - clock_mono_ms();
        int st =
            grpc_call(socket, path, req, len, left > 0 ? (int)left : 1, reply);
        if (st == GRPC_OK)
            return 0;
        left = until - clock_mono_ms();
        if (!transient(st) || attempt == tries || left <= delay_ms) {
            snprintf(why, size, "%s: CSI %s: %s: %s", what,
                     strrchr(method, '/') + 1, grpc_status_name(st),
                     reply->message);
            grpc_reply_fini(reply);
            return -1;
        }
        grpc_reply_fini(reply);
        struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        delay_ms *= 2;
    }
}

/* A node call for the volume of mount entry m. */
static int call(const json_t *m, const char *method, const uint8_t *req,
                size_t len, struct grpc_reply *reply, char *why, size_t size)
{
    char what[200];
    snprintf(what, sizeof(what), "volume %s", str(m, "name"));
    return call_at(str(m, "socket"), what, method, req, len, CSI_TIMEOUT_MS,
                   CSI_TRIES, reply, why, size);
}

/* String maps: the protobuf-c entries point into the JSON object. */
struct kv {
    ProtobufCMessage base;
    char *key;
    char *value;
};

static void **map_from(const json_t *obj, size_t *n,
                       const ProtobufCMessageDescriptor *desc)
{
    size_t count = json_object_size(obj), i = 0;
    *n = 0;
    if (count == 0)
        return NULL;
    void **arr = calloc(count, sizeof(void *));
    struct kv *e = calloc(count, sizeof(*e));
    if (!arr || !e) {
        free(arr);
        free(e);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)obj, k, v) {
        protobuf_c_message_init(desc, &e[i]);
        e[i].key = (char *)k;
        e[i].value = (char *)json_string_value(v);
        arr[i] = &e[i];
        i++;
    }
    *n = count;
    return arr;
}

static void map_free(void **arr)
{
    if (arr) {
        free(arr[0]);
        free(arr);
    }
}

/* The capability every call carries: a mounted file system, shared by the
 * node's jobs, read-only when the volume is. */
struct capability {
    Csi__V1__VolumeCapability cap;
    Csi__V1__VolumeCapability__MountVolume mount;
    Csi__V1__VolumeCapability__AccessMode mode;
    char *flags[32];
};

static void capability_init(struct capability *c, const json_t *m)
{
    csi__v1__volume_capability__init(&c->cap);
    csi__v1__volume_capability__mount_volume__init(&c->mount);
    csi__v1__volume_capability__access_mode__init(&c->mode);
    c->mount.fs_type = (char *)(str(m, "fs_type") ? str(m, "fs_type") : "");
    size_t i;
    json_t *f;
    json_array_foreach (json_object_get(m, "mount_flags"), i, f) {
        if (c->mount.n_mount_flags < 32)
            c->flags[c->mount.n_mount_flags++] = (char *)json_string_value(f);
    }
    c->mount.mount_flags = c->flags;
    c->mode.mode =
        json_is_true(json_object_get(m, "readonly"))
            ? CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY
            : CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER;
    c->cap.access_type_case = CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
    c->cap.mount = &c->mount;
    c->cap.access_mode = &c->mode;
}

/* Pack msg and make the call; the answer's body is dropped. */
static int simple_call(const json_t *m, const char *method,
                       const ProtobufCMessage *msg, char *why, size_t size)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    protobuf_c_message_pack(msg, buf);
    struct grpc_reply reply;
    int rc = call(m, method, buf, len, &reply, why, size);
    if (rc == 0)
        grpc_reply_fini(&reply);
    free(buf);
    return rc;
}

int csi_stages(const json_t *m, char *why, size_t size)
{
    Csi__V1__NodeGetCapabilitiesRequest req =
        CSI__V1__NODE_GET_CAPABILITIES_REQUEST__INIT;
    uint8_t buf[8];
    size_t len = csi__v1__node_get_capabilities_request__pack(&req, buf);
    struct grpc_reply reply;
    if (call(m, "Node/NodeGetCapabilities", buf, len, &reply, why, size) < 0)
        return -1;
    Csi__V1__NodeGetCapabilitiesResponse *resp =
        csi__v1__node_get_capabilities_response__unpack(NULL, reply.len,
                                                        reply.body);
    grpc_reply_fini(&reply);
    if (!resp) {
        snprintf(why, size,
                 "volume %s: CSI NodeGetCapabilities: an answer that does "
                 "not parse",
                 str(m, "name"));
        return -1;
    }
    int stages = 0;
    for (size_t i = 0; i < resp->n_capabilities; i++) {
        const Csi__V1__NodeServiceCapability *c = resp->capabilities[i];
        if (c->type_case == CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC &&
            c->rpc &&
            c->rpc->type ==
                CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__STAGE_UNSTAGE_VOLUME)
            stages = 1;
    }
    csi__v1__node_get_capabilities_response__free_unpacked(resp, NULL);
    return stages;
}

int csi_stage(const json_t *m, const char *staging, char *why, size_t size)
{
    struct capability cap;
    capability_init(&cap, m);
    Csi__V1__NodeStageVolumeRequest req =
        CSI__V1__NODE_STAGE_VOLUME_REQUEST__INIT;
    req.volume_id = (char *)str(m, "volume_id");
    req.staging_target_path = (char *)staging;
    req.volume_capability = &cap.cap;
    req.volume_context =
        (Csi__V1__NodeStageVolumeRequest__VolumeContextEntry **)map_from(
            json_object_get(m, "attributes"), &req.n_volume_context,
            &csi__v1__node_stage_volume_request__volume_context_entry__descriptor);
    int rc = simple_call(m, "Node/NodeStageVolume", &req.base, why, size);
    map_free((void **)req.volume_context);
    return rc;
}

int csi_unstage(const json_t *m, const char *staging, char *why, size_t size)
{
    Csi__V1__NodeUnstageVolumeRequest req =
        CSI__V1__NODE_UNSTAGE_VOLUME_REQUEST__INIT;
    req.volume_id = (char *)str(m, "volume_id");
    req.staging_target_path = (char *)staging;
    return simple_call(m, "Node/NodeUnstageVolume", &req.base, why, size);
}

int csi_publish(const json_t *m, const char *staging, const char *target,
                char *why, size_t size)
{
    struct capability cap;
    capability_init(&cap, m);
    Csi__V1__NodePublishVolumeRequest req =
        CSI__V1__NODE_PUBLISH_VOLUME_REQUEST__INIT;
    req.volume_id = (char *)str(m, "volume_id");
    req.staging_target_path = (char *)(staging ? staging : "");
    req.target_path = (char *)target;
    req.volume_capability = &cap.cap;
    req.readonly = json_is_true(json_object_get(m, "readonly"));
    req.volume_context =
        (Csi__V1__NodePublishVolumeRequest__VolumeContextEntry **)map_from(
            json_object_get(m, "attributes"), &req.n_volume_context,
            &csi__v1__node_publish_volume_request__volume_context_entry__descriptor);
    int rc = simple_call(m, "Node/NodePublishVolume", &req.base, why, size);
    map_free((void **)req.volume_context);
    return rc;
}

int csi_unpublish(const json_t *m, const char *target, char *why, size_t size)
{
    Csi__V1__NodeUnpublishVolumeRequest req =
        CSI__V1__NODE_UNPUBLISH_VOLUME_REQUEST__INIT;
    req.volume_id = (char *)str(m, "volume_id");
    req.target_path = (char *)target;
    return simple_call(m, "Node/NodeUnpublishVolume", &req.base, why, size);
}

int csi_create_volume(const char *socket, const char *name, int64_t capacity,
                      bool readonly, const json_t *parameters, char **volume_id,
                      json_t **context, char *why, size_t size)
{
    json_t *m = json_pack("{s:b}", "readonly", readonly);
    struct capability cap;
    capability_init(&cap, m);
    Csi__V1__CapacityRange range = CSI__V1__CAPACITY_RANGE__INIT;
    range.required_bytes = capacity;
    Csi__V1__VolumeCapability *caps[1] = {&cap.cap};
    Csi__V1__CreateVolumeRequest req = CSI__V1__CREATE_VOLUME_REQUEST__INIT;
    req.name = (char *)name;
    req.capacity_range = capacity > 0 ? &range : NULL;
    req.n_volume_capabilities = 1;
    req.volume_capabilities = caps;
    req.parameters = (Csi__V1__CreateVolumeRequest__ParametersEntry **)map_from(
        parameters, &req.n_parameters,
        &csi__v1__create_volume_request__parameters_entry__descriptor);
    size_t len = csi__v1__create_volume_request__get_packed_size(&req);
    uint8_t *buf = malloc(len ? len : 1);
    char what[200];
    snprintf(what, sizeof(what), "volume %s", name);
    struct grpc_reply reply;
    int rc = -1;
    if (buf) {
        csi__v1__create_volume_request__pack(&req, buf);
        rc = call_at(socket, what, "Controller/CreateVolume", buf, len,
                     CSI_CONTROLLER_TIMEOUT_MS, CSI_CONTROLLER_TRIES, &reply,
                     why, size);
    } else {
        snprintf(why, size, "out of memory");
    }
    free(buf);
    map_free((void **)req.parameters);
    json_decref(m);
    if (rc < 0)
        return -1;
    Csi__V1__CreateVolumeResponse *resp =
        csi__v1__create_volume_response__unpack(NULL, reply.len, reply.body);
    grpc_reply_fini(&reply);
    if (!resp || !resp->volume || !resp->volume->volume_id ||
        !*resp->volume->volume_id) {
        snprintf(why, size, "%s: CSI CreateVolume: an answer without a volume",
                 what);
        if (resp)
            csi__v1__create_volume_response__free_unpacked(resp, NULL);
        return -1;
    }
    *volume_id = strdup(resp->volume->volume_id);
    *context = json_object();
    for (size_t i = 0; i < resp->volume->n_volume_context; i++)
        json_object_set_new(
            *context, resp->volume->volume_context[i]->key,
            json_string(resp->volume->volume_context[i]->value));
    csi__v1__create_volume_response__free_unpacked(resp, NULL);
    return *volume_id ? 0 : -1;
}

int csi_delete_volume(const char *socket, const char *volume_id, char *why,
                      size_t size)
{
    Csi__V1__DeleteVolumeRequest req = CSI__V1__DELETE_VOLUME_REQUEST__INIT;
    req.volume_id = (char *)volume_id;
    size_t len = csi__v1__delete_volume_request__get_packed_size(&req);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    csi__v1__delete_volume_request__pack(&req, buf);
    char what[300];
    snprintf(what, sizeof(what), "volume id %s", volume_id);
    struct grpc_reply reply;
    int rc = call_at(socket, what, "Controller/DeleteVolume", buf, len,
                     CSI_CONTROLLER_TIMEOUT_MS, CSI_CONTROLLER_TRIES, &reply,
                     why, size);
    if (rc == 0)
        grpc_reply_fini(&reply);
    free(buf);
    return rc;
}

#endif
