/* SPDX-License-Identifier: Apache-2.0 */
/* A job's container: the OCI image it runs in and how (extra bind mounts,
 * working directory and environment inside the image). Plain data, its
 * validation and its JSON fields; no I/O. The agent turns it into an OCI
 * bundle (agent/image.c, agent/container.c).
 *
 * Image references (job_image_ref_parse):
 *   oci-archive:/abs/path.tar          an OCI archive on shared storage
 *   oci:/abs/dir[:TAG]                 an OCI layout folder (TAG "latest")
 *   docker://host[:port]/name[:tag|@sha256:HEX]
 *   host[:port]/name[:tag|@sha256:HEX] a registry image, as `docker pull`
 *                                       names it ("docker://" implied)
 */
#ifndef SHOAL_MODEL_JOB_CONTAINER_H
#define SHOAL_MODEL_JOB_CONTAINER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/util/error.h"

#define JOB_IMAGE_MAX 1024 /* bytes of an image reference */
#define JOB_CONTAINER_MOUNTS_MAX 32

enum job_image_kind {
    JOB_IMAGE_OCI_ARCHIVE = 0,
    JOB_IMAGE_OCI_DIR,
    JOB_IMAGE_REGISTRY,
};

struct job_cmount {
    char *src; /* absolute path on the node */
    char *dst; /* absolute path inside the container */
    bool readonly;
};

struct job_cenv {
    char *key;
    char *value;
};

struct job_container {
    char *image; /* the reference as given; NULL = no container */
    struct job_cmount *mounts;
    int nmounts;
    char *workdir; /* inside the image; NULL = the image's own */
    struct job_cenv *env;
    int nenv;
};

void job_container_init(struct job_container *c);
void job_container_fini(struct job_container *c);
/* Deep copy into dst (initialised here). -1 on out of memory. */
int job_container_copy(struct job_container *dst,
                       const struct job_container *src);

/* Check the whole container part: a valid reference, mounts, workdir and
 * env names; no container_* field without an image. */
int job_container_validate(const struct job_container *c, struct sh_error *err);

/* Parse "SRC:DST[:ro|:rw]" into m (strings owned by m). */
int job_cmount_parse(const char *text, struct job_cmount *m,
                     struct sh_error *err);

/* One JSON submission field ("image", "container_mounts",
 * "container_workdir", "container_env"). 0, -1 with err, or 1 when key is
 * not one of them. */
int job_container_field(const char *key, const json_t *v,
                        struct job_container *c, struct sh_error *err);

/* Add the container fields to a spec object (nothing without an image). */
void job_container_to_json(const struct job_container *c, json_t *o);

/* ---- references ---- */

/* Classify ref and check its grammar; the message names what is wrong. */
int job_image_ref_parse(const char *ref, enum job_image_kind *kind,
                        struct sh_error *err);

/* The reference as a skopeo/containers-image transport string into buf
 * ("oci-archive:/p", "oci:/d:tag", "docker://host/name:tag"). -1 when it
 * does not parse or does not fit. */
int job_image_transport(const char *ref, char *buf, size_t size);

/* ---- digests ---- */

#define JOB_IMAGE_DIGEST_LEN 71 /* "sha256:" and 64 hex digits */

/* Whether d is an image digest as Shoal takes one from a node:
 * "sha256:" and exactly 64 lowercase hex digits, nothing else. */
bool job_image_digest_valid(const char *d);

/* Whether ref names its image by digest already (a registry reference
 * with @sha256:...): every node pulls that, none resolves anything. */
bool job_image_ref_pinned(const char *ref);

#endif
