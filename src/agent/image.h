/* SPDX-License-Identifier: Apache-2.0 */
/* The node's image cache: an OCI image reference becomes an unpacked
 * bundle (rootfs + the image's config), cached by the digest the reference
 * resolves to. Tools from Debian do the work: skopeo resolves the digest
 * (`skopeo inspect`) and copies the image into a node-local OCI layout
 * (`skopeo copy`), umoci unpacks it (`umoci unpack`). Runs in the shim (it
 * blocks for as long as a pull takes).
 *
 * Cache folder:
 *   lock              held exclusively while pulling, unpacking, evicting
 *   incoming/NAME     a local image copied by its user (0700, theirs;
 *                     incoming/ is 0711, the cache folder 0711)
 *   oci/              the OCI layout, one tag per digest (hex)
 *   bundles/HEX/      an unpacked bundle; never written to (runs put an
 *                     overlay on top of its rootfs)
 *   bundles/HEX.size  its size in bytes
 *   bundles/HEX.lock  held shared by every run using the bundle; its mtime
 *                     is the last use (LRU)
 * A digest is unpacked once: the exclusive lock and a re-check make a
 * second run of the same digest wait and reuse. When the cache grows past
 * its size, the least recently used bundles no run holds are removed with
 * their tags, and the layout's unreferenced blobs collected. */
#ifndef SHOAL_AGENT_IMAGE_H
#define SHOAL_AGENT_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/user_open.h"

struct image_cache_cfg {
    const char *dir;    /* the cache folder (made when missing) */
    uint64_t max_bytes; /* evict beyond this; 0 = no limit */
    /* An image unpacking to more bytes or entries (files, folders,
     * links) fails the job, its partial bundle removed; 0 = no limit. */
    uint64_t max_unpacked;
    uint64_t max_files;
    bool tls_verify; /* verify registries' certificates */
    /* Registry credentials (the job's project's secret, all NULL: none):
     * skopeo gets them in a 0600 file of a private folder, removed after;
     * without them, an empty one, so root's own are never used. */
    const char *auth_registry; /* host[:port] */
    const char *auth_user;
    const char *auth_pass;
    const char *auth_secret; /* the secret's name, for the reason */
    /* The digest to run ("sha256:HEX": what the job's first node resolved
     * the reference to), or NULL to resolve the reference here. */
    const char *digest;
};

/* Told what the pull is doing ("pulling image (12 MB / 40 MB)",
 * "unpacking image"). */
typedef void (*image_progress_f)(void *arg, const char *note);
/* Told the digest once the reference is resolved (before the pull). */
typedef void (*image_resolved_f)(void *arg, const char *digest);

struct image_bundle {
    char dir[4096];  /* bundles/HEX */
    char digest[80]; /* "sha256:HEX" the reference resolved to */
    bool unpacked;   /* this call unpacked it (the cache did not hold it) */
    int lock_fd;     /* shared lock on the bundle: keep open while in use */
};

/* Resolve transport (a skopeo transport string, job_image_transport) to a
 * digest and make its bundle ready. 0, or -1 with why holding a sentence
 * for the job's reason (missing image, broken archive, refused
 * credentials ...). progress may be NULL.
 *
 * Local images (oci-archive:PATH, oci:DIR[:TAG]) are opened as user (NULL:
 * as this process): the archive must be a regular file, the layout a
 * folder, each one the user may read. Their manifest (read as the user)
 * must hash to the digest their index names, before the cache is used or
 * filled. skopeo reads them only as the user (inspect, and copy into
 * incoming/NAME, a folder of the cache only the user reaches); root takes
 * from that copy the manifest and the blobs it lists, through descriptors
 * it opened without following links, hashing each while it copies it into
 * oci/ (see image_import_copy, image_local.c). Every copy into the cache
 * is checked: the cache's own index must tag the digest with that digest,
 * or the copy is removed and the job fails.
 *
 * With cfg->digest, nothing is resolved: that digest is pulled (a
 * registry image as NAME@DIGEST) or must be the manifest the local
 * image holds; a registry that no longer has it, or a local image that
 * changed, fails the job with that reason. resolved (may be NULL) is told
 * the digest either way. */
int image_prepare(const struct image_cache_cfg *cfg, const char *transport,
                  const struct user_creds *user, image_progress_f progress,
                  image_resolved_f resolved, void *arg,
                  struct image_bundle *out, char *why, size_t size);

/* Release the bundle's lock. */
void image_bundle_release(struct image_bundle *b);

/* The sentence in a tool's error output (skopeo writes
 * `time=... level=fatal msg="..."`): the msg text unquoted, else the last
 * non-empty line, trimmed, into buf. */
void image_tool_error(const char *output, char *buf, size_t size);

/* The digest an OCI index (text) gives the manifest tagged tag
 * (org.opencontainers.image.ref.name), as a new string; NULL when none or
 * more than one. */
char *image_index_tag_digest(const char *index, const char *tag);

/* Whether len bytes at data hash to digest ("sha256:HEX"). */
bool image_sha256_is(const void *data, size_t len, const char *digest);

/* Bytes under path (files and folders, links not followed). */
uint64_t image_du(const char *path);

/* A pull's registry auth file lives in cache_dir/auth-XXXXXX, locked while
 * the pull runs and removed after it; a shim killed mid-pull leaves it
 * behind with a password in it. Remove every such folder no pull holds
 * that is older than IMAGE_AUTH_STALE_S (the agent calls this at start). */
#define IMAGE_AUTH_STALE_S 60
void image_sweep_auth(const char *cache_dir);

/* A local image's copy lives in cache_dir/incoming/NAME, the user's, made
 * after root's NAME.lock, which the pull holds until the folder is gone; a
 * killed pull leaves the folder behind, outside the cache's size limit.
 * Remove every folder whose lock no pull holds (one without a lock, made
 * by an older shim, two hours after this process first saw it; and locks
 * older than IMAGE_AUTH_STALE_S without a folder): each is first taken from
 * its user (moved into the root-only incoming/.trash, made root's), then
 * removed by root without following links or entering other mounts, a
 * bounded number of entries a call (the rest at the next). No process of
 * the user takes part. The agent calls this at start and every five
 * minutes (sooner while it returns 1: work left), a pull when it ends. */
int image_sweep_incoming(const char *cache_dir);

#endif
