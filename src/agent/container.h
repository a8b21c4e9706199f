/* SPDX-License-Identifier: Apache-2.0 */
/* A run in an OCI container: the bundle's config.json for crun, computed
 * from the image's own config (as umoci unpacked it) and the run's launch
 * description, and the driver libraries a GPU job needs inside.
 *
 * What goes in (and nothing else):
 *   process  the job's command and env contract, as the job's Unix user
 *            and groups, no capabilities, no_new_privs; cwd
 *            container_workdir, else the image's, else /
 *   root     the bundle's rootfs under a per-run overlay (the cache stays
 *            unchanged; writes go to a tmpfs charged to the job)
 *   mounts   /proc (the node's, bound), /dev (no /dev/pts: see
 *            container.c), /dev/shm (the run's, shared by its
 *            tasks), /sys (the node's, bound read-only: crun cannot mount
 *            a sysfs in a user namespace without a network namespace, and
 *            its fallback bind dropped "ro"); /etc/passwd and /etc/group
 *            (the image's plus the job's user and groups, read-only, so
 *            `whoami` and `id` name them); a per-run HOME folder when
 *            neither a mount nor the image has the user's home; the
 *            run's folder (read-only: the script, the deadline file); the
 *            job's volumes at their paths; container_mounts; the host
 *            driver's user-space libraries, read-only
 *   devices  the job's GPUs' device nodes, nvidiactl, nvidia-uvm(-tools)
 *            and the MIG capability devices when the node has them, mode
 *            0666 as the driver makes them on the node (the job's devices
 *            cgroup is the fence): crun makes them under its own umask,
 *            so the shim runs crun with umask 0 and gives the job's
 *            process umask 022 in the config
 *   namespaces  mount, uts, user: the user namespace maps only the job's
 *            uid, gid and groups, each to itself (root is unmapped inside;
 *            crun, started as root, sets it up; README "Containers" says
 *            why not rootless crun). Not ipc (the ranks of a node share SysV
 *            memory as bare jobs do), not pid (the agent's stop signals and
 *            the cgroup kill reach the job's processes as for a bare job),
 *            not network (rendezvous over the node's addresses), not
 *            cgroup: crun runs with --cgroup-manager=disabled, so the
 *            container stays in the job's cgroup the shim put crun in.
 *
 * The launch description's "container" object (launch.c):
 *   {"image", "transport", "cache_dir", "cache_size", "max_size",
 *    "max_files", "tls_verify",
 *    "mounts": [{"src", "dst", "readonly"}], "workdir", "env": ["K=V"],
 *    "devices": [{"path", "major", "minor"}],
 *    "libs": [{"src", "dst"}] (read-only binds)}
 */
#ifndef SHOAL_AGENT_CONTAINER_H
#define SHOAL_AGENT_CONTAINER_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

struct container_proc {
    char *const *argv;
    char *const *env; /* NULL-terminated, the contract's */
    uid_t uid;
    gid_t gid;
    const gid_t *groups;
    int ngroups;
};

struct container_input {
    const json_t *image_config; /* the bundle's config.json (umoci) */
    const json_t *container;    /* launch.json "container" */
    const json_t *volumes;      /* launch.json "mounts", or NULL */
    const char *rootfs;         /* absolute, or relative to the bundle */
    const char *run_dir;
    const char *shm_dir; /* bound at /dev/shm (shared by the tasks) */
    const char *hostname;
    /* The run's /etc/passwd and /etc/group (the image's and the job's
     * user), bound read-only; NULL: the image's own. */
    const char *passwd_file;
    const char *group_file;
    /* A per-run folder of the user's, bound at home_dst (the user's home)
     * when neither a mount nor the image gives one; NULL: none. */
    const char *home_src;
    const char *home_dst;
};

/* The OCI runtime config for the run (new reference), or NULL with why. */
json_t *container_config(const struct container_input *in,
                         const struct container_proc *proc, char *why,
                         size_t size);

/* The "process" object alone (for `crun exec --process`), env and cwd
 * resolved the same way. New reference. */
json_t *container_process(const struct container_input *in,
                          const struct container_proc *proc);

/* ---- found on the node by the agent ---- */

/* The driver's user-space libraries found in `ldconfig -p` (libcuda,
 * libnvidia-ml, libnvidia-ptxjitcompiler, ...) as a JSON array of
 * {"src", "dst"} binds (the same path inside); empty without a driver.
 * nvml_lib (the agent's --nvml-lib, may be NULL), when it is a path, goes
 * in as libnvidia-ml.so.1 of the system's library folder, so simulated
 * GPUs bring libsimgpu. New reference. */
json_t *container_driver_libs(const char *nvml_lib);

/* Parse `ldconfig -p` output into the driver libraries it lists (for the
 * unit test and container_driver_libs). New reference. */
json_t *container_libs_from_ldconfig(const char *text);

/* The control devices the node has (nvidiactl, nvidia-uvm,
 * nvidia-uvm-tools, /dev/nvidia-caps/...): appended to devices as
 * {"path", "major", "minor"}. */
void container_control_devices(json_t *devices);

#endif
