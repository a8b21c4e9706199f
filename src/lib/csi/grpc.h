/* SPDX-License-Identifier: Apache-2.0 */
/* A small gRPC client: one unary call at a time over a unix socket, as a
 * CSI plugin serves it. HTTP/2 framing is nghttp2's; the caller packs and
 * unpacks the protobuf messages (protobuf-c). Why not gRPC's own C core:
 * its C API is not a stable public interface, and a CSI node client needs
 * exactly one call in flight. */
#ifndef SHOAL_AGENT_GRPC_H
#define SHOAL_AGENT_GRPC_H

#include <stddef.h>
#include <stdint.h>

/* gRPC status codes the caller acts on. */
#define GRPC_OK 0
#define GRPC_DEADLINE_EXCEEDED 4
#define GRPC_RESOURCE_EXHAUSTED 8
#define GRPC_UNAVAILABLE 14
#define GRPC_INTERNAL 13

struct grpc_reply {
    int status;        /* gRPC status; GRPC_UNAVAILABLE when unreachable */
    char message[512]; /* grpc-message, or what went wrong on our side */
    uint8_t *body;     /* the response message (malloc'd), NULL if none */
    size_t len;
};

/* Call path ("/csi.v1.Node/NodeStageVolume") on the server at the unix
 * socket, with the packed request, waiting at most timeout_ms. Always
 * fills reply (free its body with grpc_reply_fini); returns reply->status.
 */
int grpc_call(const char *socket_path, const char *path, const uint8_t *req,
              size_t len, int timeout_ms, struct grpc_reply *reply);

void grpc_reply_fini(struct grpc_reply *reply);

/* The name of a status code ("UNAVAILABLE"). */
const char *grpc_status_name(int status);

#endif
