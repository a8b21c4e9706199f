/* SPDX-License-Identifier: Apache-2.0 */
/* What the image cache's modules share (image.c: the pull; image_tool.c:
 * running skopeo and umoci; image_cache.c: the cache on disk;
 * image_local.c: local images). Not for other modules: image.h is their
 * interface. */
#ifndef SHOAL_AGENT_IMAGE_INT_H
#define SHOAL_AGENT_IMAGE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "agent/image.h"
#include "agent/user_open.h"

/* Index and manifest files are read up to this size. */
#define INDEX_MAX (1 << 20)

/* ---- running a tool (image_tool.c) ---- */

struct tool_run {
    char *out; /* stdout, NUL-terminated */
    size_t nout;
    char err[4096]; /* the end of stderr */
    size_t nerr;
    int status;
    bool stopped; /* a tick stopped it (SIGKILL) */
};

/* Called every TICK_MS while a tool runs: 0 to go on, -1 to stop it. */
typedef int (*tool_tick_f)(void *arg);

/* A tool run as a job's user (in a fresh private folder, see user_dir). */
struct tool_as {
    const struct user_creds *user;
    const char *home; /* its HOME and TMPDIR */
};

/* Run argv (found in PATH), collecting stdout and the tail of stderr;
 * tick (may be NULL) every TICK_MS while it runs, whatever the tool
 * writes meanwhile; a tick answering -1 kills the tool (r->stopped) and
 * the run goes on until its pipes close; as (may be NULL): as
 * that user, with only stdio open. 0 when it ran (its exit
 * status in r->status), -1 when it could not be started. */
int image_tool_run(char *const argv[], struct tool_run *r, tool_tick_f tick,
                   void *arg, const struct tool_as *as);
bool image_tool_ok(const struct tool_run *r);

/* ---- a pull (image.c) ---- */

struct pull {
    const struct image_cache_cfg *cfg;
    image_progress_f progress;
    image_resolved_f resolved;
    void *arg;
    char blobs[4200]; /* the layout's blobs folder */
    uint64_t before;  /* its size before the copy */
    uint64_t total;   /* bytes the image's layers hold; 0 unknown */
    const struct user_creds *user; /* who opens a local image */
    struct tool_as as;             /* skopeo as that user */
    char udir[4300];               /* its private folder (see user_dir) */
    int udir_fd;                   /* that folder, pinned; -1 */
    int udir_lock;                 /* its NAME.lock, locked; -1 */
    char uname[80];                /* its name under incoming/ */
    bool copied;                   /* the user's copy is in udir/layout */
    bool user_copying;             /* skopeo copies into udir as the user */
    bool archive;                  /* oci-archive: (else oci: layout) */
    char dir[4200];                /* the archive or layout, as given */
    char tag[256];                 /* the layout's tag, "" for none */
    int src_fd;                    /* the local image, opened as the user; -1 */
    char src[96 + 4200];           /* what skopeo reads (/proc/self/fd/N) */
    char authdir[4300];            /* a registry's auth file's folder */
    char authfile[4400];           /* that file ("" for none) */
    int auth_lock;                 /* authdir, locked while in use; -1 */
    char unpack_dir[4300];         /* the bundle being unpacked */
    int64_t next_walk_ms;          /* unpack_tick walks it again from then */
    const char *transport;         /* for the reasons below */
    char over[600]; /* why a tick stopped a tool: the image is over a cap */
};

/* why = "image TRANSPORT: WHAT: the tool's message". */
void image_fail(char *why, size_t size, const char *transport, const char *what,
                const struct tool_run *r);
/* As image_fail, the message's cause first. */
void image_fail_cause(char *why, size_t size, const char *transport,
                      const char *what, const struct tool_run *r);
/* Tell the pull's progress callback. */
void image_note(struct pull *p, const char *text);
/* The bytes of the layers of a manifest (0 for an index or unknown), as
 * it declares them: IMAGE_BYTES_BAD for a size that is not a whole number
 * of bytes (negative, fractional, a string) or a sum past 2^64. */
#define IMAGE_BYTES_BAD UINT64_MAX
uint64_t image_manifest_bytes(const char *raw);
/* The progress of a copy (a tool_tick_f): stops it when the image alone
 * outgrows the cache (p->over says so). */
int image_pull_tick(void *arg);

/* ---- the cache on disk (image_cache.c) ---- */

/* Bytes (allocated) and entries (files, folders, links, ...) under path,
 * path itself not counted; links not followed. */
void image_usage(const char *path, uint64_t *bytes, uint64_t *entries);

int image_lock_file(const char *path, int op);
bool image_is_dir(const char *path);
/* Remove least recently used bundles that no run holds until the cache
 * fits with reserve bytes more (keep: the bundle just made). Under the
 * cache lock. */
void image_evict(const struct image_cache_cfg *cfg, const char *keep,
                 uint64_t reserve);
/* Remove every device node of the bundle's rootfs. */
int image_drop_devices(const char *bundle);
/* What was copied is what digest names, or it is removed. 0, or -1. */
int image_check_copy(struct pull *p, const char *transport, const char *digest,
                     char *why, size_t size);
/* The cache's layout (oci/, root's alone), made when missing. */
int image_cache_layout(const struct image_cache_cfg *cfg, char *why,
                       size_t size);
/* Tag manifest digest as its hex in the cache's index. */
int image_cache_tag(const struct image_cache_cfg *cfg, const char *digest,
                    uint64_t len, const char *type, char *why, size_t size);

/* ---- local images (image_local.c) ---- */

char *image_read_small(const char *path, size_t max);
char *image_read_fd(int fd, size_t max, size_t *len);
bool image_is_local(const char *transport);
int image_open_local(struct pull *p, const char *transport, char *why,
                     size_t size);
int image_resolve_local(struct pull *p, char *digest, size_t dsize);
int image_verify_local(struct pull *p, const char *transport,
                       const char *digest, char *why, size_t size);
int image_user_dir(struct pull *p, const char *transport, char *why,
                   size_t size);
void image_user_dir_remove(struct pull *p);
int image_user_copy(struct pull *p, const char *transport, const char *digest,
                    char *why, size_t size);
int image_import_copy(struct pull *p, const char *transport, const char *digest,
                      char *why, size_t size);

#endif
