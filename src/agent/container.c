/* SPDX-License-Identifier: Apache-2.0 */
/* The OCI runtime config of a run in a container (see container.h). */
#include "agent/container.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#if defined(__x86_64__)
#define LIB_DIR "/usr/lib/x86_64-linux-gnu"
#define LDCONFIG_ARCH "x86-64"
#elif defined(__aarch64__)
#define LIB_DIR "/usr/lib/aarch64-linux-gnu"
#define LDCONFIG_ARCH "AArch64"
#else
#define LIB_DIR "/usr/lib"
#define LDCONFIG_ARCH ""
#endif

#define DEFAULT_PATH                                                           \
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The driver's libraries a CUDA program may load (as sonames). */
static const char *const driver_libs[] = {
    "libcuda.so.",
    "libnvidia-ml.so.",
    "libnvidia-ptxjitcompiler.so.",
    "libnvidia-nvvm.so.",
    "libcudadebugger.so.",
    "libnvidia-opencl.so.",
    "libnvidia-cfg.so.",
    "libnvidia-allocator.so.",
    "libnvidia-gpucomp.so.",
    NULL,
};

static bool env_key_in(char *const *env, const char *kv)
{
    size_t n = strcspn(kv, "=");
    for (int i = 0; env && env[i]; i++) {
        if (strncmp(env[i], kv, n) == 0 && env[i][n] == '=')
            return true;
    }
    return false;
}

static json_t *process_env(const struct container_input *in,
                           const struct container_proc *proc)
{
    json_t *env = json_array();
    size_t i;
    json_t *v;
    /* The image's variables (PATH, CUDA_HOME, ...) unless the job set
     * them; then the job's contract. */
    json_array_foreach (
        json_object_get(json_object_get(in->image_config, "process"), "env"), i,
        v) {
        const char *kv = json_string_value(v);
        if (kv && strchr(kv, '=') && !env_key_in(proc->env, kv))
            json_array_append(env, v);
    }
    bool path = false;
    for (int k = 0; proc->env[k]; k++) {
        json_array_append_new(env, json_string(proc->env[k]));
        path |= strncmp(proc->env[k], "PATH=", 5) == 0;
    }
    json_array_foreach (env, i, v)
        path |= strncmp(json_string_value(v), "PATH=", 5) == 0;
    if (!path)
        json_array_append_new(env, json_string("PATH=" DEFAULT_PATH));
    return env;
}

json_t *container_process(const struct container_input *in,
                          const struct container_proc *proc)
{
    const char *cwd =
        json_string_value(json_object_get(in->container, "workdir"));
    if (!cwd)
        cwd = json_string_value(json_object_get(
            json_object_get(in->image_config, "process"), "cwd"));
    if (!cwd || cwd[0] != '/')
        cwd = "/";
    json_t *args = json_array();
    for (int i = 0; proc->argv[i]; i++)
        json_array_append_new(args, json_string(proc->argv[i]));
    json_t *groups = json_array();
    for (int i = 0; i < proc->ngroups; i++)
        json_array_append_new(groups, json_integer(proc->groups[i]));
    json_t *caps =
        json_pack("{s:[], s:[], s:[], s:[], s:[]}", "bounding", "effective",
                  "inheritable", "permitted", "ambient");
    /* umask: crun runs with 0 (its device nodes keep their 0666), the
     * job gets the usual 022. */
    return json_pack("{s:b, s:{s:i, s:i, s:i, s:o}, s:o, s:o, s:s, s:o, s:b}",
                     "terminal", 0, "user", "uid", (int)proc->uid, "gid",
                     (int)proc->gid, "umask", 022, "additionalGids", groups,
                     "args", args, "env", process_env(in, proc), "cwd", cwd,
                     "capabilities", caps, "noNewPrivileges", 1);
}

static void add_mount(json_t *mounts, const char *dst, const char *type,
                      const char *src, json_t *options)
{
    json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:o}",
                                            "destination", dst, "type", type,
                                            "source", src, "options", options));
}

/* Volumes, container mounts, the run folder and driver libraries: never
 * setuid programs or device nodes from them (the job's GPUs come through
 * linux.devices only). */
static void add_bind(json_t *mounts, const char *src, const char *dst,
                     bool readonly)
{
    add_mount(mounts, dst, "bind", src,
              readonly
                  ? json_pack("[s, s, s, s]", "rbind", "ro", "nosuid", "nodev")
                  : json_pack("[s, s, s]", "rbind", "nosuid", "nodev"));
}

static json_t *config_mounts(const struct container_input *in)
{
    json_t *m = json_array();
    /* The node's /proc, bound: the container has no pid namespace of its
     * own, and a user namespace may not mount a proc of the host's. */
    add_mount(m, "/proc", "bind", "/proc",
              json_pack("[s, s, s, s]", "rbind", "nosuid", "noexec", "nodev"));
    add_mount(m, "/dev", "tmpfs", "tmpfs",
              json_pack("[s, s, s, s]", "nosuid", "strictatime", "mode=755",
                        "size=65536k"));
    /* No /dev/pts: crun 1.8 (Debian 12), mounting a devpts in a user
     * namespace, now and then hands the kernel a garbled option string
     * (the start fails: "devpts: Unknown parameter" in the kernel log,
     * about one start in ten here). A batch job's processes have no
     * terminal. */
    if (in->shm_dir)
        add_mount(m, "/dev/shm", "bind", in->shm_dir,
                  json_pack("[s, s, s]", "bind", "nosuid", "nodev"));
    else
        add_mount(m, "/dev/shm", "tmpfs", "shm",
                  json_pack("[s, s, s, s]", "nosuid", "noexec", "nodev",
                            "mode=1777"));
    /* The node's /sys, bound read-only: a user namespace without a
     * network namespace of its own may not mount a sysfs, and crun's
     * fallback (a bind of /sys) kept it writable though "ro" was asked.
     * Read-only, nosuid, nodev and noexec all the way down ("rro" and the
     * like, through mount_setattr): where the bind brings the node's
     * submounts (/sys/fs/cgroup, ...), "ro" alone leaves them writable.
     * (crun 1.8.1's fallback binds /sys without them: below it lie only
     * its own masks, read-only.) */
    add_mount(m, "/sys", "bind", "/sys",
              json_pack("[s, s, s, s, s, s, s, s, s]", "rbind", "ro", "rro",
                        "nosuid", "rnosuid", "noexec", "rnoexec", "nodev",
                        "rnodev"));
    if (in->passwd_file)
        add_bind(m, in->passwd_file, "/etc/passwd", true);
    if (in->group_file)
        add_bind(m, in->group_file, "/etc/group", true);
    if (in->home_src && in->home_dst)
        add_bind(m, in->home_src, in->home_dst, false);
    /* The script and the deadline file, where the env contract says. */
    add_bind(m, in->run_dir, in->run_dir, true);
    size_t i;
    json_t *v;
    json_array_foreach (in->volumes, i, v) {
        const char *path = json_string_value(json_object_get(v, "path"));
        if (path)
            add_bind(m, path, path,
                     json_is_true(json_object_get(v, "readonly")));
    }
    json_array_foreach (json_object_get(in->container, "mounts"), i, v)
        add_bind(m, json_string_value(json_object_get(v, "src")),
                 json_string_value(json_object_get(v, "dst")),
                 json_is_true(json_object_get(v, "readonly")));
    json_array_foreach (json_object_get(in->container, "libs"), i, v)
        add_bind(m, json_string_value(json_object_get(v, "src")),
                 json_string_value(json_object_get(v, "dst")), true);
    return m;
}

static json_t *config_devices(const struct container_input *in)
{
    json_t *devs = json_array();
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(in->container, "devices"), i, v) {
        json_array_append_new(
            devs,
            json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:i}", "path",
                      json_string_value(json_object_get(v, "path")), "type",
                      "c", "major",
                      json_integer_value(json_object_get(v, "major")), "minor",
                      json_integer_value(json_object_get(v, "minor")),
                      "fileMode", 0666, "uid", 0, "gid", 0));
    }
    return devs;
}

/* One id, mapped to itself. */
static json_t *id_map(unsigned id)
{
    return json_pack("{s:I, s:I, s:i}", "containerID", (json_int_t)id, "hostID",
                     (json_int_t)id, "size", 1);
}

/* The user namespace maps the job's uid, its gid and its groups, each to
 * itself, and nothing else: root and every other id of the node are
 * unmapped inside (they show as nobody), so nothing in the container can
 * act as them. */
static json_t *uid_mappings(const struct container_proc *proc)
{
    return json_pack("[o]", id_map((unsigned)proc->uid));
}

static json_t *gid_mappings(const struct container_proc *proc)
{
    json_t *maps = json_pack("[o]", id_map((unsigned)proc->gid));
    for (int i = 0; i < proc->ngroups; i++) {
        bool seen = proc->groups[i] == proc->gid;
        for (int k = 0; k < i && !seen; k++)
            seen = proc->groups[k] == proc->groups[i];
        if (!seen)
            json_array_append_new(maps, id_map((unsigned)proc->groups[i]));
    }
    return maps;
}

json_t *container_config(const struct container_input *in,
                         const struct container_proc *proc, char *why,
                         size_t size)
{
    json_t *process = container_process(in, proc);
    if (!process) {
        snprintf(why, size, "cannot describe the container's process");
        return NULL;
    }
    json_t *masked =
        json_pack("[s, s, s, s, s, s, s, s]", "/proc/acpi", "/proc/kcore",
                  "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
                  "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware");
    json_t *ro =
        json_pack("[s, s, s, s, s, s]", "/proc/asound", "/proc/bus", "/proc/fs",
                  "/proc/irq", "/proc/sys", "/proc/sysrq-trigger");
    json_t *cfg = json_pack(
        "{s:s, s:o, s:{s:s, s:b}, s:s, s:o,"
        " s:{s:[{s:s}, {s:s}, {s:s}], s:o, s:o, s:o, s:o, s:o}}",
        "ociVersion", "1.0.2", "process", process, "root", "path", in->rootfs,
        "readonly", 0, "hostname", in->hostname ? in->hostname : "shoal",
        "mounts", config_mounts(in), "linux", "namespaces", "type", "mount",
        "type", "uts", "type", "user", "uidMappings", uid_mappings(proc),
        "gidMappings", gid_mappings(proc), "devices", config_devices(in),
        "maskedPaths", masked, "readonlyPaths", ro);
    if (!cfg)
        snprintf(why, size, "cannot describe the container");
    return cfg;
}

/* ---- the node's driver ---- */

json_t *container_libs_from_ldconfig(const char *text)
{
    json_t *libs = json_array();
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        if (n < sizeof(buf)) {
            memcpy(buf, line, n);
            buf[n] = '\0';
            char *name = buf + strspn(buf, " \t");
            char *arrow = strstr(buf, " => ");
            char *sp = strchr(name, ' ');
            bool arch = !LDCONFIG_ARCH[0] || strstr(buf, LDCONFIG_ARCH);
            if (arrow && sp && arch && arrow[4] == '/') {
                *sp = '\0';
                for (int k = 0; driver_libs[k]; k++) {
                    size_t kl = strlen(driver_libs[k]);
                    /* a soname: the prefix and a version, no more dots */
                    if (strncmp(name, driver_libs[k], kl) == 0 && name[kl] &&
                        !strchr(name + kl, '.')) {
                        json_array_append_new(
                            libs, json_pack("{s:s, s:s}", "src", arrow + 4,
                                            "dst", arrow + 4));
                        break;
                    }
                }
            }
        }
        line = end ? end + 1 : NULL;
    }
    return libs;
}

json_t *container_driver_libs(const char *nvml_lib)
{
    json_t *libs = NULL;
    FILE *f = popen("ldconfig -p 2>/dev/null", "re");
    if (f) {
        char *text = calloc(1, 1 << 20);
        size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
        if (text) {
            text[n] = '\0';
            libs = container_libs_from_ldconfig(text);
        }
        free(text);
        pclose(f);
    }
    if (!libs)
        libs = json_array();
    /* Keep only files that are there. */
    for (size_t i = 0; i < json_array_size(libs);) {
        struct stat st;
        const char *src =
            json_string_value(json_object_get(json_array_get(libs, i), "src"));
        if (stat(src, &st) == 0 && S_ISREG(st.st_mode))
            i++;
        else
            json_array_remove(libs, i);
    }
    struct stat st;
    if (nvml_lib && strchr(nvml_lib, '/') && stat(nvml_lib, &st) == 0) {
        char *abs = realpath(nvml_lib, NULL);
        if (abs) {
            json_array_append_new(libs,
                                  json_pack("{s:s, s:s}", "src", abs, "dst",
                                            LIB_DIR "/libnvidia-ml.so.1"));
            free(abs);
        }
    }
    return libs;
}

static void add_device(json_t *devices, const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISCHR(st.st_mode))
        json_array_append_new(devices,
                              json_pack("{s:s, s:i, s:i}", "path", path,
                                        "major", (int)major(st.st_rdev),
                                        "minor", (int)minor(st.st_rdev)));
}

void container_control_devices(json_t *devices)
{
    add_device(devices, "/dev/nvidiactl");
    add_device(devices, "/dev/nvidia-uvm");
    add_device(devices, "/dev/nvidia-uvm-tools");
    char path[300];
    for (int i = 0; i < 4096; i++) {
        snprintf(path, sizeof(path), "/dev/nvidia-caps/nvidia-cap%d", i);
        struct stat st;
        if (stat(path, &st) < 0) {
            if (i > 256)
                break;
            continue;
        }
        add_device(devices, path);
    }
}
