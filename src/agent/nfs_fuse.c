/* SPDX-License-Identifier: Apache-2.0 */
/* shoal-nfs-fuse: a userspace NFS client (libnfs) presented as a FUSE
 * file system (libfuse3), for nodes whose kernel has no NFS client. The
 * agent's volume stages run it in the foreground when they mount an NFS
 * volume there (stage.c); it ends when the mount is unmounted.
 *
 *   shoal-nfs-fuse SERVER EXPORT MOUNTPOINT [--vers 3|4] [--port N] [--ro]
 *
 * One libnfs context serves every request, so FUSE runs single-threaded.
 * Each request is made with the caller's uid and gid (AUTH_SYS, as the
 * kernel client does), so the server sees the job's user and decides by
 * its own permissions and squashing (the kernel does not second-guess it:
 * no default_permissions, as NFSv4 owner names may not map to this node's
 * uids). Errors are libnfs's negative errno values, passed back as they
 * are. */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>

static struct nfs_context *nfs;
static int nfs_version; /* 3 or 4 */

/* libnfs 4.0 (Debian 12's) packs an NFSv4 request into a 4 KiB buffer
 * whatever the payload: a WRITE of more than about 3.9 KB overruns it
 * (fixed upstream in 2020, after 4.0), the server refuses the garbled
 * request and the caller reads EPERM. NFSv4 writes go in pieces that
 * leave room for the RPC header, the AUTH_SYS credentials (machine name,
 * up to 16 groups) and the compound's other operations. */
#define NFS4_WRITE_PIECE 2048

/* Speak for the process that made the request. */
static void as_caller(void)
{
    static uid_t uid = 0;
    static gid_t gid = 0;
    struct fuse_context *c = fuse_get_context();
    if (c && (c->uid != uid || c->gid != gid)) {
        nfs_set_uid(nfs, (int)c->uid);
        nfs_set_gid(nfs, (int)c->gid);
        uid = c->uid;
        gid = c->gid;
    }
}

static struct nfsfh *fh_of(const struct fuse_file_info *fi)
{
    return (struct nfsfh *)(uintptr_t)fi->fh;
}

static void stat_from(const struct nfs_stat_64 *n, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = (ino_t)n->nfs_ino;
    st->st_mode = (mode_t)n->nfs_mode;
    st->st_nlink = (nlink_t)n->nfs_nlink;
    st->st_uid = (uid_t)n->nfs_uid;
    st->st_gid = (gid_t)n->nfs_gid;
    st->st_size = (off_t)n->nfs_size;
    st->st_blksize = (blksize_t)n->nfs_blksize;
    st->st_blocks = (blkcnt_t)n->nfs_blocks;
    st->st_atim.tv_sec = (time_t)n->nfs_atime;
    st->st_atim.tv_nsec = (long)n->nfs_atime_nsec;
    st->st_mtim.tv_sec = (time_t)n->nfs_mtime;
    st->st_mtim.tv_nsec = (long)n->nfs_mtime_nsec;
    st->st_ctim.tv_sec = (time_t)n->nfs_ctime;
    st->st_ctim.tv_nsec = (long)n->nfs_ctime_nsec;
}

static int op_getattr(const char *path, struct stat *st,
                      struct fuse_file_info *fi)
{
    struct nfs_stat_64 n;
    as_caller();
    int rc = fi && fi->fh ? nfs_fstat64(nfs, fh_of(fi), &n)
                          : nfs_lstat64(nfs, path, &n);
    if (rc < 0)
        return rc;
    stat_from(&n, st);
    return 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
                      off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags)
{
    (void)off;
    (void)fi;
    (void)flags;
    struct nfsdir *d;
    as_caller();
    int rc = nfs_opendir(nfs, path, &d);
    if (rc < 0)
        return rc;
    struct nfsdirent *e;
    while ((e = nfs_readdir(nfs, d)) != NULL) {
        struct stat st;
        memset(&st, 0, sizeof(st));
        st.st_ino = (ino_t)e->inode;
        st.st_mode = (mode_t)e->mode;
        if (fill(buf, e->name, &st, 0, 0))
            break;
    }
    nfs_closedir(nfs, d);
    return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
    struct nfsfh *fh;
    as_caller();
    int rc = nfs_open(nfs, path, fi->flags & ~(O_CREAT | O_EXCL), &fh);
    if (rc < 0)
        return rc;
    fi->fh = (uint64_t)(uintptr_t)fh;
    return 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct nfsfh *fh;
    as_caller();
    int rc =
        nfs_open2(nfs, path, fi->flags | O_CREAT, (int)(mode & 07777), &fh);
    if (rc < 0)
        return rc;
    /* libnfs 4.0's NFSv4 OPEN creates the file 0600 whatever mode says:
     * give it the mode the caller asked (the kernel applied the umask). */
    if (nfs_version == 4 && (mode & 07777) != 0600) {
        rc = nfs_fchmod(nfs, fh, (int)(mode & 07777));
        if (rc < 0) {
            nfs_close(nfs, fh);
            return rc;
        }
    }
    fi->fh = (uint64_t)(uintptr_t)fh;
    return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)path;
    as_caller();
    return nfs_pread(nfs, fh_of(fi), (uint64_t)off, size, buf);
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)path;
    as_caller();
    if (nfs_version != 4)
        return nfs_pwrite(nfs, fh_of(fi), (uint64_t)off, size, buf);
    size_t done = 0;
    while (done < size) {
        size_t n =
            size - done < NFS4_WRITE_PIECE ? size - done : NFS4_WRITE_PIECE;
        int rc = nfs_pwrite(nfs, fh_of(fi), (uint64_t)off + done, n,
                            (char *)buf + done);
        if (rc < 0)
            return done ? (int)done : rc; /* what was written counts */
        done += (size_t)rc;
        if ((size_t)rc < n)
            break; /* a short write: the caller writes the rest again */
    }
    return (int)done;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    return nfs_close(nfs, fh_of(fi));
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync;
    return nfs_fsync(nfs, fh_of(fi));
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    as_caller();
    return fi && fi->fh ? nfs_ftruncate(nfs, fh_of(fi), (uint64_t)size)
                        : nfs_truncate(nfs, path, (uint64_t)size);
}

static int op_mkdir(const char *path, mode_t mode)
{
    as_caller();
    return nfs_mkdir2(nfs, path, (int)(mode & 07777));
}

static int op_unlink(const char *path)
{
    as_caller();
    return nfs_unlink(nfs, path);
}

static int op_rmdir(const char *path)
{
    as_caller();
    return nfs_rmdir(nfs, path);
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
    if (flags)
        return -EINVAL; /* RENAME_NOREPLACE/EXCHANGE: NFS has neither */
    as_caller();
    return nfs_rename(nfs, from, to);
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    (void)fi;
    as_caller();
    return nfs_chmod(nfs, path, (int)(mode & 07777));
}

static int op_utimens(const char *path, const struct timespec tv[2],
                      struct fuse_file_info *fi)
{
    (void)fi;
    struct timeval t[2];
    struct timeval now;
    gettimeofday(&now, NULL);
    for (int i = 0; i < 2; i++) {
        if (tv[i].tv_nsec == UTIME_NOW || tv[i].tv_nsec == UTIME_OMIT) {
            t[i] = now;
        } else {
            t[i].tv_sec = tv[i].tv_sec;
            t[i].tv_usec = tv[i].tv_nsec / 1000;
        }
    }
    as_caller();
    return nfs_utimes(nfs, path, t);
}

static int op_statfs(const char *path, struct statvfs *st)
{
    struct nfs_statvfs_64 s;
    int rc = nfs_statvfs64(nfs, path, &s);
    if (rc < 0)
        return rc;
    memset(st, 0, sizeof(*st));
    st->f_bsize = (unsigned long)s.f_bsize;
    st->f_frsize = (unsigned long)s.f_frsize;
    st->f_blocks = (fsblkcnt_t)s.f_blocks;
    st->f_bfree = (fsblkcnt_t)s.f_bfree;
    st->f_bavail = (fsblkcnt_t)s.f_bavail;
    st->f_files = (fsfilcnt_t)s.f_files;
    st->f_ffree = (fsfilcnt_t)s.f_ffree;
    st->f_namemax = (unsigned long)s.f_namemax;
    return 0;
}

static const struct fuse_operations ops = {
    .getattr = op_getattr,
    .readdir = op_readdir,
    .open = op_open,
    .create = op_create,
    .read = op_read,
    .write = op_write,
    .release = op_release,
    .fsync = op_fsync,
    .truncate = op_truncate,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .rename = op_rename,
    .chmod = op_chmod,
    .utimens = op_utimens,
    .statfs = op_statfs,
};

static void usage(void)
{
    fprintf(stderr, "usage: shoal-nfs-fuse SERVER EXPORT MOUNTPOINT [--vers "
                    "3|4] [--port N] [--ro]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        usage();
    const char *server = argv[1], *export = argv[2], *mnt = argv[3];
    int vers = 4;
    long port = 0;
    bool ro = false;
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--vers") == 0 && i + 1 < argc)
            vers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
            port = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--ro") == 0)
            ro = true;
        else
            usage();
    }
    if ((vers != 3 && vers != 4) || port < 0 || port > 65535 ||
        export[0] != '/')
        usage();
    nfs_version = vers;
    nfs = nfs_init_context();
    if (!nfs) {
        fprintf(stderr, "[CRT] cannot make an NFS context\n");
        return 1;
    }
    char url[1200], portarg[32] = "";
    if (port)
        snprintf(portarg, sizeof(portarg), "&nfsport=%ld", port);
    snprintf(url, sizeof(url), "nfs://%s%s?version=%d%s", server, export, vers,
             portarg);
    struct nfs_url *u = nfs_parse_url_dir(nfs, url);
    if (!u) {
        fprintf(stderr, "[CRT] bad NFS address %s:%s: %s\n", server, export,
                nfs_get_error(nfs));
        return 1;
    }
    if (nfs_mount(nfs, u->server, u->path) != 0) {
        fprintf(stderr, "[CRT] cannot mount %s:%s: %s\n", server, export,
                nfs_get_error(nfs));
        return 1;
    }
    nfs_destroy_url(u);
    char opts[1400];
    snprintf(opts, sizeof(opts),
             "allow_other,fsname=nfs:%s:%s,"
             "subtype=shoal-nfs%s",
             server, export, ro ? ",ro" : "");
    char *fargv[] = {argv[0], (char *)mnt, "-f", "-s", "-o", opts, NULL};
    int rc = fuse_main(6, fargv, &ops, NULL);
    nfs_destroy_context(nfs);
    return rc;
}
