/* SPDX-License-Identifier: Apache-2.0 */
/* Host CPU and memory request forms, resolved per node
 * (cmd_resources.h). */
#include "cmd/cmd_resources.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static const char *const cpu_keys[] = {"cpus", CMD_RES_CPUS_PER_TASK,
                                       CMD_RES_CPUS_PER_GPU};
static const char *const cpu_opts[] = {"--cpus", "--cpus-per-task",
                                       "--cpus-per-gpu"};
static const char *const mem_keys[] = {"mem", CMD_RES_MEM_PER_GPU,
                                       CMD_RES_MEM_PER_CPU};
static const char *const mem_opts[] = {"--mem", "--mem-per-gpu",
                                       "--mem-per-cpu"};

static bool any_of(const json_t *o, const char *const *keys)
{
    for (int i = 0; i < 3; i++) {
        if (json_object_get(o, keys[i]))
            return true;
    }
    return false;
}

void cmd_resources_prefer(json_t *job, const json_t *cli)
{
    const char *const *sets[] = {cpu_keys, mem_keys};
    for (int s = 0; s < 2; s++) {
        if (!any_of(cli, sets[s]))
            continue;
        for (int i = 0; i < 3; i++) {
            if (!json_object_get(cli, sets[s][i]))
                json_object_del(job, sets[s][i]);
        }
    }
}

/* The one form of a resource given: its index, -1 for none; -2 (err set)
 * for two. */
static int one_form(const json_t *job, const char *const *keys,
                    const char *const *opts, struct sh_error *err)
{
    int got = -1;
    for (int i = 0; i < 3; i++) {
        if (!json_object_get(job, keys[i]))
            continue;
        if (got >= 0) {
            sh_errorf(err, SH_EINVAL, "%s and %s both give the %s: keep one",
                      opts[got], opts[i], keys == cpu_keys ? "CPUs" : "memory");
            return -2;
        }
        got = i;
    }
    return got;
}

/* GPUs per node for a per-GPU form, or -1 with err set. */
static int64_t gpus_per_node(const json_t *job, const char *opt,
                             struct sh_error *err)
{
    if (json_object_get(job, "gpus_total")) {
        sh_errorf(err, SH_EINVAL,
                  "%s needs the GPUs per node: give --gpus and --nodes, not "
                  "the GPUs in all",
                  opt);
        return -1;
    }
    if (json_object_get(job, "slice"))
        return 1;
    int64_t g = json_integer_value(json_object_get(job, "gpus"));
    if (g <= 0) {
        sh_errorf(err, SH_EINVAL, "%s needs GPUs (--gpus)", opt);
        return -1;
    }
    return g;
}

int cmd_resources_resolve(json_t *job, struct sh_error *err)
{
    int c = one_form(job, cpu_keys, cpu_opts, err);
    int m = c == -2 ? -2 : one_form(job, mem_keys, mem_opts, err);
    if (c == -2 || m == -2)
        return -1;
    int64_t cpus = json_integer_value(json_object_get(job, "cpus"));
    if (c == 1) {
        int64_t tpn =
            json_integer_value(json_object_get(job, "tasks_per_node"));
        cpus = json_integer_value(json_object_get(job, CMD_RES_CPUS_PER_TASK)) *
               (tpn > 0 ? tpn : 1);
    } else if (c == 2) {
        int64_t g = gpus_per_node(job, "--cpus-per-gpu", err);
        if (g < 0)
            return -1;
        cpus =
            json_integer_value(json_object_get(job, CMD_RES_CPUS_PER_GPU)) * g;
    }
    if (c > 0)
        json_object_set_new(job, "cpus", json_integer(cpus));
    if (m == 1) {
        int64_t g = gpus_per_node(job, "--mem-per-gpu", err);
        if (g < 0)
            return -1;
        json_int_t per =
            json_integer_value(json_object_get(job, CMD_RES_MEM_PER_GPU));
        json_object_set_new(job, "mem", json_integer(per * g));
    } else if (m == 2) {
        if (cpus <= 0)
            return sh_errorf(err, SH_EINVAL,
                             "--mem-per-cpu needs a CPU count: --cpus, "
                             "--cpus-per-task or --cpus-per-gpu");
        json_int_t per =
            json_integer_value(json_object_get(job, CMD_RES_MEM_PER_CPU));
        json_object_set_new(job, "mem", json_integer(per * cpus));
    }
    for (int i = 1; i < 3; i++) {
        json_object_del(job, cpu_keys[i]);
        json_object_del(job, mem_keys[i]);
    }
    return 0;
}
