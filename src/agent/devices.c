/* SPDX-License-Identifier: Apache-2.0 */
/* GPU device nodes and which of them a job may open (see devices.h). */
#include "agent/devices.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "lib/util/log.h"

/* Linux keeps char majors 240-254 for local and experimental use; take
 * the first one no driver of this host registered (/proc/devices). */
static unsigned sim_major(void)
{
    bool used[256] = {false};
    FILE *f = fopen("/proc/devices", "re");
    char line[128];
    bool chars = false;
    while (f && fgets(line, sizeof(line), f)) {
        unsigned m;
        if (strncmp(line, "Character", 9) == 0)
            chars = true;
        else if (strncmp(line, "Block", 5) == 0)
            chars = false;
        else if (chars && sscanf(line, "%u", &m) == 1 && m < 256)
            used[m] = true;
    }
    if (f)
        fclose(f);
    for (unsigned m = 240; m <= 254; m++) {
        if (!used[m])
            return m;
    }
    return 0;
}

/* Make the simulated node when it is missing; anyone may open it (the
 * cgroup, not the mode, is what is checked). */
static void sim_make(const char *path, unsigned major, int minor)
{
    struct stat st;
    if (lstat(path, &st) == 0)
        return;
    if (mknod(path, S_IFCHR | 0666, makedev(major, (unsigned)minor)) < 0) {
        sh_log(LOG_WARNING, "devices", "cannot make %s: %s", path,
               strerror(errno));
        return;
    }
    chmod(path, 0666);
}

void gpu_devices_find(struct gpu_devices *d, const struct gpu_info *gpus,
                      int ngpus, const char *sim_dir)
{
    unsigned major = 0;
    d->n = 0;
    if (sim_dir) {
        major = sim_major();
        if (mkdir(sim_dir, 0755) < 0 && errno != EEXIST)
            sh_log(LOG_WARNING, "devices", "cannot create %s: %s", sim_dir,
                   strerror(errno));
        if (major == 0)
            sh_log(LOG_WARNING, "devices",
                   "no free device major for simulated GPUs");
    }
    for (int i = 0; i < ngpus && d->n < GPU_PER_NODE_MAX; i++) {
        struct gpu_device *g = &d->dev[d->n];
        if (gpus[i].minor < 0) {
            sh_log(LOG_WARNING, "devices",
                   "GPU %s: no minor number, its device cannot be fenced",
                   gpus[i].uuid);
            continue;
        }
        snprintf(g->path, sizeof(g->path), "%s/nvidia%d",
                 sim_dir ? sim_dir : "/dev", gpus[i].minor);
        if (sim_dir && major)
            sim_make(g->path, major, gpus[i].minor);
        struct stat st;
        if (stat(g->path, &st) < 0 || !S_ISCHR(st.st_mode)) {
            sh_log(LOG_WARNING, "devices",
                   "GPU %s: %s is not a device node, it cannot be fenced",
                   gpus[i].uuid, g->path);
            continue;
        }
        snprintf(g->uuid, sizeof(g->uuid), "%s", gpus[i].uuid);
        g->dev.major = major(st.st_rdev);
        g->dev.minor = minor(st.st_rdev);
        d->n++;
    }
}

static bool in_array(const json_t *arr, const char *uuid)
{
    size_t i;
    const json_t *v;
    json_array_foreach (arr, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), uuid) == 0)
            return true;
    }
    return false;
}

/* The run uses GPU g when it holds the GPU or one of its slices. */
static bool run_uses(const struct gpu_info *gpus, int ngpus, const char *uuid,
                     const json_t *work_gpus)
{
    if (in_array(work_gpus, uuid))
        return true;
    for (int i = 0; i < ngpus; i++) {
        if (strcmp(gpus[i].uuid, uuid) != 0)
            continue;
        for (int s = 0; s < gpus[i].nslices; s++) {
            if (in_array(work_gpus, gpus[i].slices[s].uuid))
                return true;
        }
    }
    return false;
}

int gpu_devices_denied(const struct gpu_devices *d, const struct gpu_info *gpus,
                       int ngpus, const json_t *work_gpus,
                       struct cgroup_device *out, int max)
{
    int n = 0;
    for (int i = 0; i < d->n && n < max; i++) {
        if (!run_uses(gpus, ngpus, d->dev[i].uuid, work_gpus))
            out[n++] = d->dev[i].dev;
    }
    return n;
}

json_t *gpu_devices_container(const struct gpu_devices *d,
                              const struct gpu_info *gpus, int ngpus,
                              const json_t *work_gpus)
{
    json_t *out = json_array();
    for (int i = 0; out && i < d->n; i++) {
        if (!run_uses(gpus, ngpus, d->dev[i].uuid, work_gpus))
            continue;
        /* /dev/nvidiaN inside, whatever folder the node keeps it in. */
        const char *base = strrchr(d->dev[i].path, '/');
        char path[320];
        snprintf(path, sizeof(path), "/dev/%s",
                 base ? base + 1 : d->dev[i].path);
        json_array_append_new(out,
                              json_pack("{s:s, s:i, s:i}", "path", path,
                                        "major", (int)d->dev[i].dev.major,
                                        "minor", (int)d->dev[i].dev.minor));
    }
    return out;
}
