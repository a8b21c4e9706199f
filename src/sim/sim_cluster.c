/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster shapes for the simulator: "NxGxMODEL" terms (N nodes of G GPUs of
 * MODEL) joined by '+', each optionally followed by "/CPUS/MEM" (the host
 * CPUs and memory each node gives jobs, e.g. "/128/1T"; without it they
 * are not counted), "@S" (topology groups,
 * e.g. switches, of S nodes) and ":PRESET" (every GPU sliced with a preset
 * of src/lib/model/preset.h, e.g. "all-1g.10gb" or "shared-4"). A spec that
 * names a readable file is read from it: terms separated by '+', spaces or
 * lines, '#' starts a comment. Nodes are named n00000, n00001, ...
 */
#include "sim/sim.h"

#include <stdlib.h>
#include <string.h>

#include "lib/model/preset.h"
#include "lib/util/parse.h"

#define SPEC_MAX 65536 /* bytes of a spec or spec file */
#define POOLS_MAX 4096
#define CLUSTER_NODES_MAX 1000000

/* GiB from a model name ending in "-<n>GB" ("H100-80GB"), else 0. */
static uint64_t model_mem(const char *model)
{
    const struct preset_model *pm = preset_model_find(model);
    if (pm)
        return pm->mem_mib * 1024 * 1024;
    const char *dash = strrchr(model, '-');
    if (!dash)
        return 0;
    char *end;
    long gb = strtol(dash + 1, &end, 10);
    if (end == dash + 1 || strcmp(end, "GB") != 0 || gb <= 0 || gb > 4096)
        return 0;
    return (uint64_t)gb << 30;
}

/* The hook for slicing presets: fill the pool's per-GPU slices. */
static int pool_preset(struct sim_pool *p, const char *preset,
                       struct sh_error *err)
{
    struct preset_layout l;
    if (preset_expand(p->model, preset, &l, err) < 0)
        return sh_error_prefix(err, "cluster %dx%dx%s:%s: ", p->nodes, p->gpus,
                               p->model, preset);
    snprintf(p->preset, sizeof(p->preset), "%s", preset);
    p->nslices = l.nslices;
    for (int k = 0; k < l.nslices; k++) {
        struct gpu_slice *s = &p->slices[k];
        memset(s, 0, sizeof(*s));
        s->kind = l.slices[k].kind;
        snprintf(s->profile, sizeof(s->profile), "%s", l.slices[k].profile);
        s->mem_bytes = l.slices[k].mem_bytes;
        s->gi_id = s->ci_id = -1;
        s->share_num = l.slices[k].share_num;
        s->share_den = l.slices[k].share_den;
    }
    return 0;
}

static int parse_count(const char **p, int max, int *out)
{
    long v;
    if (parse_digits(p, max, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* "/CPUS/MEM" after the model: *s at the first '/', left after MEM. */
static int host_part(const char *term, const char **s, struct sim_pool *p,
                     struct sh_error *err)
{
    const char *q = *s + 1;
    char size[32];
    size_t n;
    if (parse_count(&q, 100000, &p->cpus) < 0 || p->cpus < 1 || *q++ != '/' ||
        (n = strcspn(q, "@:")) == 0 || n >= sizeof(size))
        return sh_errorf(err, SH_EINVAL,
                         "cluster term '%s': /CPUS/MEM must be a CPU count "
                         ">= 1 and a size such as 1T or 512G",
                         term);
    memcpy(size, q, n);
    size[n] = '\0';
    if (parse_size("cluster /CPUS/MEM", size, &p->host_mem, err) < 0)
        return sh_error_prefix(err, "cluster term '%s': ", term);
    *s = q + n;
    return 0;
}

static int parse_term(const char *term, struct sim_pool *p,
                      struct sh_error *err)
{
    const char *s = term;
    memset(p, 0, sizeof(*p));
    if (parse_count(&s, CLUSTER_NODES_MAX, &p->nodes) < 0 || p->nodes < 1 ||
        *s++ != 'x' || parse_count(&s, GPU_PER_NODE_MAX, &p->gpus) < 0 ||
        p->gpus < 1 || *s++ != 'x')
        return sh_errorf(err, SH_EINVAL,
                         "cluster term '%s' must be "
                         "NODESxGPUSxMODEL[/CPUS/MEM][@GROUP][:PRESET] with "
                         "1..%d GPUs "
                         "per node",
                         term, GPU_PER_NODE_MAX);
    size_t n = strcspn(s, "/@:");
    if (n == 0 || n >= sizeof(p->model))
        return sh_errorf(err, SH_EINVAL,
                         "cluster term '%s': the GPU model "
                         "must be 1..%zu bytes",
                         term, sizeof(p->model) - 1);
    memcpy(p->model, s, n);
    p->model[n] = '\0';
    if (!job_ident_valid(p->model))
        return sh_errorf(err, SH_EINVAL,
                         "cluster term '%s': '%s' is not a "
                         "GPU model name",
                         term, p->model);
    p->mem_bytes = model_mem(p->model);
    s += n;
    if (*s == '/' && host_part(term, &s, p, err) < 0)
        return -1;
    if (*s == '@') {
        s++;
        if (parse_count(&s, CLUSTER_NODES_MAX, &p->group_size) < 0 ||
            p->group_size < 1)
            return sh_errorf(err, SH_EINVAL,
                             "cluster term '%s': @GROUP "
                             "must be a node count >= 1",
                             term);
    }
    if (*s == ':')
        return pool_preset(p, s + 1, err);
    if (*s)
        return sh_errorf(err, SH_EINVAL,
                         "cluster term '%s': unexpected "
                         "'%s'",
                         term, s);
    return 0;
}

static int add_terms(char *text, struct sim_cluster *c, struct sh_error *err)
{
    char *save = NULL;
    int cap = 0;
    for (char *t = strtok_r(text, "+ \t\r\n", &save); t;
         t = strtok_r(NULL, "+ \t\r\n", &save)) {
        if (c->npools == POOLS_MAX)
            return sh_errorf(err, SH_ETOOLARGE, "at most %d cluster terms",
                             POOLS_MAX);
        if (c->npools == cap) {
            cap = cap ? cap * 2 : 4;
            void *np = realloc(c->pools, sizeof(*c->pools) * (size_t)cap);
            if (!np)
                return sh_errorf(err, SH_EINTERNAL, "out of memory");
            c->pools = np;
        }
        struct sim_pool *p = &c->pools[c->npools];
        if (parse_term(t, p, err) < 0)
            return -1;
        if (c->nodes + p->nodes > CLUSTER_NODES_MAX)
            return sh_errorf(err, SH_ETOOLARGE, "at most %d nodes",
                             CLUSTER_NODES_MAX);
        c->nodes += p->nodes;
        c->gpus += p->nodes * p->gpus;
        c->npools++;
    }
    return 0;
}

/* Strip '#' comments, line by line. */
static void strip_comments(char *text)
{
    bool comment = false;
    for (char *p = text; *p; p++) {
        if (*p == '#')
            comment = true;
        else if (*p == '\n')
            comment = false;
        if (comment)
            *p = ' ';
    }
}

int sim_cluster_parse(const char *spec, struct sim_cluster *c,
                      struct sh_error *err)
{
    memset(c, 0, sizeof(*c));
    char *text = malloc(SPEC_MAX + 1);
    int rc = -1;
    if (!text)
        return sh_errorf(err, SH_EINTERNAL, "out of memory");
    /* A readable file of that name wins over the spec syntax. */
    FILE *f = fopen(spec, "r");
    if (f) {
        size_t n = fread(text, 1, SPEC_MAX + 1, f);
        fclose(f);
        if (n > SPEC_MAX) {
            sh_errorf(err, SH_ETOOLARGE,
                      "cluster file %s is larger than %d "
                      "bytes",
                      spec, SPEC_MAX);
            goto out;
        }
        text[n] = '\0';
        strip_comments(text);
    } else {
        if (strlen(spec) > SPEC_MAX) {
            sh_errorf(err, SH_ETOOLARGE, "cluster spec longer than %d bytes",
                      SPEC_MAX);
            goto out;
        }
        snprintf(text, SPEC_MAX + 1, "%s", spec);
    }
    if (add_terms(text, c, err) < 0)
        goto out;
    if (c->npools == 0) {
        sh_errorf(err, SH_EINVAL,
                  "cluster '%s' has no nodes (want e.g. "
                  "16x8xH100-80GB)",
                  spec);
        goto out;
    }
    rc = 0;
out:
    free(text);
    return rc;
}

void sim_cluster_fini(struct sim_cluster *c)
{
    if (!c)
        return;
    free(c->pools);
    memset(c, 0, sizeof(*c));
}

int sim_cluster_apply(const struct sim_cluster *c, struct sched *s,
                      struct sh_error *err)
{
    int idx = 0;
    struct sched_gpu_desc g[GPU_PER_NODE_MAX];
    for (int pi = 0; pi < c->npools; pi++) {
        const struct sim_pool *p = &c->pools[pi];
        memset(g, 0, sizeof(g));
        for (int i = 0; i < p->gpus; i++) {
            g[i].model = p->model;
            g[i].mem_bytes = p->mem_bytes;
            g[i].nvlink_group = 0;
            g[i].nslices = p->nslices;
            g[i].slices = p->nslices ? p->slices : NULL;
        }
        for (int n = 0; n < p->nodes; n++, idx++) {
            char name[16], group[32];
            snprintf(name, sizeof(name), "n%05d", idx);
            snprintf(group, sizeof(group), "g%d-%d", pi,
                     p->group_size ? n / p->group_size : 0);
            struct sched_node_desc d = {.name = name,
                                        .group = p->group_size ? group : NULL,
                                        .state = SCHED_NODE_UP,
                                        .ngpus = p->gpus,
                                        .gpus = g,
                                        .cpus = p->cpus,
                                        .mem = p->host_mem};
            if (sched_node_set(s, &d, err) < 0)
                return -1;
        }
    }
    return 0;
}

int64_t sim_cluster_units(const struct sim_cluster *c, const char *node,
                          int gpu, int slice)
{
    long idx = strtol(node + 1, NULL, 10);
    (void)gpu;
    if (slice < 0)
        return SCHED_UNITS_PER_GPU;
    for (int pi = 0; pi < c->npools; pi++) {
        const struct sim_pool *p = &c->pools[pi];
        if (idx < p->nodes) {
            if (slice >= p->nslices)
                return 0;
            return SCHED_UNITS_PER_GPU * p->slices[slice].share_num /
                   p->slices[slice].share_den;
        }
        idx -= p->nodes;
    }
    return 0;
}
