/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the MIG profile tables, preset listing and expansion per model,
 * custom layouts, every validation rule, the placement planner and MIG
 * profile naming. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/model/preset.h"

#define MIB (UINT64_C(1) << 20)

static const char *const mig_models[] = {"A100-40GB", "A100-80GB", "H100-80GB",
                                         "H200-141GB"};

static int count_profile(const struct preset_layout *l, const char *p)
{
    int n = 0;
    for (int i = 0; i < l->nslices; i++)
        n += strcmp(l->slices[i].profile, p) == 0;
    return n;
}

Test(preset_tables, profiles_match_nvidia_tables)
{
    const struct preset_profile *p =
        preset_profile_find("H100-80GB", "1g.10gb");
    cr_assert_not_null(p);
    cr_expect_eq(p->id, 19);
    cr_expect_eq(p->compute_slices, 1);
    cr_expect_eq(p->memory_slices, 1);
    cr_expect_eq(p->max_instances, 7);
    cr_expect_eq(p->nplacements, 7);
    p = preset_profile_find("A100-40GB", "3g.20gb");
    cr_assert_not_null(p);
    cr_expect_eq(p->id, 9);
    cr_expect_eq(p->max_instances, 2);
    cr_expect_eq(p->placements[1], 4);
    p = preset_profile_by_id("H200-141GB", 0);
    cr_assert_not_null(p);
    cr_expect_str_eq(p->name, "7g.141gb");
    cr_expect_null(preset_profile_find("H100-80GB", "1g.5gb"));
    cr_expect_null(preset_profile_find("V100-16GB", "1g.5gb"));
    int n = -1;
    cr_expect_null(preset_profiles("V100-16GB", &n));
    cr_expect_eq(n, 0);
    cr_expect_null(preset_profiles("NoSuch-1GB", &n));
}

Test(preset_tables, required_profiles_exist)
{
    static const char *const want[][7] = {
        {"A100-40GB", "1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb",
         "1g.10gb"},
        {"A100-80GB", "1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
         "1g.20gb"},
        {"H100-80GB", "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb",
         "7g.80gb"},
        {"H200-141GB", "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb",
         "7g.141gb"},
    };
    for (size_t m = 0; m < sizeof(want) / sizeof(want[0]); m++) {
        for (int i = 1; i < 7; i++)
            cr_expect_not_null(preset_profile_find(want[m][0], want[m][i]),
                               "%s %s", want[m][0], want[m][i]);
    }
}

/* The name NVIDIA tools derive from an instance's memory equals the table's
 * name, so the agent can match devices' profiles to presets by name. */
Test(preset_tables, profile_names_follow_from_memory)
{
    for (size_t m = 0; m < sizeof(mig_models) / sizeof(mig_models[0]); m++) {
        const struct preset_model *pm = preset_model_find(mig_models[m]);
        cr_assert_not_null(pm);
        for (int i = 0; i < pm->nprofiles; i++) {
            const struct preset_profile *p = &pm->profiles[i];
            char name[GPU_PROFILE_MAX];
            preset_mig_name(p->compute_slices, p->compute_slices, p->mem_mib,
                            pm->mem_mib * MIB, name, sizeof(name));
            cr_expect_str_eq(name, p->name, "%s", pm->model);
        }
    }
}

Test(preset_tables, mig_name_shows_smaller_compute_instance)
{
    char name[GPU_PROFILE_MAX];
    preset_mig_name(3, 1, 40320, 81559 * MIB, name, sizeof(name));
    cr_expect_str_eq(name, "1c.3g.40gb");
    preset_mig_name(1, 1, 1024, 0, name, sizeof(name));
    cr_expect_str_eq(name, "1g.1gb");
}

Test(preset_list, lists_mig_and_shared_presets)
{
    char names[PRESET_LIST_MAX][PRESET_NAME_MAX];
    int n = preset_list("H100-80GB", names, PRESET_LIST_MAX);
    cr_assert_eq(n, 12);
    cr_expect_str_eq(names[0], "all-disabled");
    cr_expect_str_eq(names[1], "all-enabled");
    cr_expect_str_eq(names[2], "all-1g.10gb");
    cr_expect_str_eq(names[8], "all-balanced");
    cr_expect_str_eq(names[11], "shared-8");
    /* Every listed preset expands. */
    for (int i = 0; i < n; i++) {
        struct preset_layout l;
        struct sh_error err = {0};
        cr_expect_eq(preset_expand("H100-80GB", names[i], &l, &err), 0,
                     "%s: %s", names[i], err.msg);
    }
}

Test(preset_list, model_without_mig_gets_shared_presets_only)
{
    char names[PRESET_LIST_MAX][PRESET_NAME_MAX];
    int n = preset_list("V100-16GB", names, PRESET_LIST_MAX);
    cr_assert_eq(n, 4);
    cr_expect_str_eq(names[0], "all-disabled");
    cr_expect_str_eq(names[1], "shared-2");
    n = preset_list("Unknown-8GB", names, 2);
    cr_expect_eq(n, 2);
}

Test(preset_expand, every_preset_of_every_model_is_valid)
{
    for (size_t m = 0; m < sizeof(mig_models) / sizeof(mig_models[0]); m++) {
        char names[PRESET_LIST_MAX][PRESET_NAME_MAX];
        int n = preset_list(mig_models[m], names, PRESET_LIST_MAX);
        for (int i = 0; i < n; i++) {
            struct preset_layout l;
            struct sh_error err = {0};
            cr_assert_eq(preset_expand(mig_models[m], names[i], &l, &err), 0,
                         "%s %s: %s", mig_models[m], names[i], err.msg);
            cr_expect_eq(preset_validate(&l, &err), 0, "%s", err.msg);
            cr_expect_str_eq(l.model, mig_models[m]);
            cr_expect_str_eq(l.name, names[i]);
        }
    }
}

Test(preset_expand, all_1g_fills_the_gpu)
{
    struct preset_layout l;
    cr_assert_eq(preset_expand("A100-80GB", "all-1g.10gb", &l, NULL), 0);
    cr_expect(l.mig);
    cr_assert_eq(l.nslices, 7);
    for (int i = 0; i < 7; i++) {
        cr_expect_eq(l.slices[i].kind, GPU_SLICE_MIG);
        cr_expect_str_eq(l.slices[i].profile, "1g.10gb");
        cr_expect_eq(l.slices[i].share_num, 1);
        cr_expect_eq(l.slices[i].share_den, 7);
        cr_expect_eq(l.slices[i].compute_slices, 1);
        cr_expect_eq(l.slices[i].mem_bytes, 9728 * MIB);
    }
    cr_assert_eq(preset_expand("A100-40GB", "all-1g.5gb", &l, NULL), 0);
    cr_expect_eq(l.nslices, 7);
    cr_assert_eq(preset_expand("H200-141GB", "all-1g.18gb", &l, NULL), 0);
    cr_expect_eq(l.nslices, 7);
    cr_assert_eq(preset_expand("H100-80GB", "all-1g.20gb", &l, NULL), 0);
    cr_expect_eq(l.nslices, 4);
}

Test(preset_expand, all_3g_gives_two_halves)
{
    struct preset_layout l;
    cr_assert_eq(preset_expand("H100-80GB", "all-3g.40gb", &l, NULL), 0);
    cr_assert_eq(l.nslices, 2);
    cr_expect_eq(l.slices[0].share_num, 3);
    cr_expect_eq(l.slices[0].share_den, 7);
}

Test(preset_expand, balanced_is_mixed_and_largest_first)
{
    struct preset_layout l;
    cr_assert_eq(preset_expand("H100-80GB", "all-balanced", &l, NULL), 0);
    cr_assert_eq(l.nslices, 4);
    cr_expect_str_eq(l.slices[0].profile, "3g.40gb");
    cr_expect_str_eq(l.slices[1].profile, "2g.20gb");
    cr_expect_eq(count_profile(&l, "1g.10gb"), 2);
    cr_assert_eq(preset_expand("A100-40GB", "all-balanced", &l, NULL), 0);
    cr_expect_eq(count_profile(&l, "1g.5gb"), 2);
    cr_assert_eq(preset_expand("H200-141GB", "all-balanced", &l, NULL), 0);
    cr_expect_eq(count_profile(&l, "3g.71gb"), 1);
}

Test(preset_expand, disabled_and_enabled)
{
    struct preset_layout l;
    cr_assert_eq(preset_expand("H100-80GB", "all-disabled", &l, NULL), 0);
    cr_expect_not(l.mig);
    cr_expect_eq(l.nslices, 0);
    cr_assert_eq(preset_expand("V100-16GB", "all-disabled", &l, NULL), 0);
    cr_assert_eq(preset_expand("H100-80GB", "all-enabled", &l, NULL), 0);
    cr_expect(l.mig);
    cr_expect_eq(l.nslices, 0);
}

Test(preset_expand, shared_works_for_any_model)
{
    struct preset_layout l;
    cr_assert_eq(preset_expand("V100-16GB", "shared-4", &l, NULL), 0);
    cr_expect_not(l.mig);
    cr_assert_eq(l.nslices, 4);
    cr_expect_eq(l.slices[0].kind, GPU_SLICE_SHARED);
    cr_expect_str_eq(l.slices[0].profile, "shared/4");
    cr_expect_eq(l.slices[0].share_num, 1);
    cr_expect_eq(l.slices[0].share_den, 4);
    cr_expect_eq(l.slices[0].mem_bytes, 4096 * MIB);
    cr_assert_eq(preset_expand("Made-Up-24GB", "shared-8", &l, NULL), 0);
    cr_expect_eq(l.nslices, 8);
    cr_expect_eq(l.slices[7].mem_bytes, 3072 * MIB);
    cr_assert_eq(preset_expand("H200-141GB", "shared-2", &l, NULL), 0);
    cr_assert_eq(preset_expand("H200-141GB", "shared-16", &l, NULL), 0);
    cr_expect_eq(l.nslices, 16);
}

Test(preset_expand, rejects_bad_names)
{
    struct preset_layout l;
    struct sh_error err = {0};
    memset(&l, 0x5a, sizeof(l));
    struct preset_layout before = l;
    cr_expect_eq(preset_expand("H100-80GB", "all-1g.5gb", &l, &err), -1);
    cr_expect_eq(err.code, SH_ENOTFOUND);
    cr_expect(strstr(err.msg, "1g.5gb") != NULL, "%s", err.msg);
    cr_expect_eq(preset_expand("V100-16GB", "all-balanced", &l, &err), -1);
    cr_expect_eq(err.code, SH_ENOTFOUND);
    cr_expect(strstr(err.msg, "no MIG") != NULL, "%s", err.msg);
    cr_expect_eq(preset_expand("H100-80GB", "shared-1", &l, &err), -1);
    cr_expect_eq(err.code, SH_EINVAL);
    cr_expect_eq(preset_expand("H100-80GB", "shared-17", &l, &err), -1);
    cr_expect_eq(preset_expand("H100-80GB", "shared-x", &l, &err), -1);
    cr_expect_eq(preset_expand("H100-80GB", "shared-", &l, &err), -1);
    cr_expect_eq(preset_expand("H100-80GB", "everything", &l, &err), -1);
    cr_expect_eq(err.code, SH_ENOTFOUND);
    cr_expect_eq(preset_expand("H100-80GB", "", &l, &err), -1);
    cr_expect_eq(err.code, SH_EINVAL);
    cr_expect_eq(memcmp(&l, &before, sizeof(l)), 0, "no side effects");
}

Test(preset_parse, custom_layouts)
{
    struct preset_layout l;
    struct sh_error err = {0};
    cr_assert_eq(
        preset_layout_parse("H100-80GB", "2x1g.10gb,4g.40gb,1g.20gb", &l, &err),
        0, "%s", err.msg);
    cr_expect(l.mig);
    cr_expect_str_eq(l.name, "custom");
    cr_assert_eq(l.nslices, 4);
    cr_expect_str_eq(l.slices[0].profile, "4g.40gb");
    cr_expect_eq(count_profile(&l, "1g.10gb"), 2);
    cr_assert_eq(preset_layout_parse("A100-40GB", "shared/3", &l, &err), 0);
    cr_expect_eq(l.nslices, 3);
    cr_expect_eq(l.slices[2].share_den, 3);
}

Test(preset_parse, rejects_malformed_layouts)
{
    struct preset_layout l;
    struct sh_error err = {0};
    cr_expect_eq(preset_layout_parse("H100-80GB", "", &l, &err), -1);
    cr_expect_eq(preset_layout_parse("H100-80GB", "1g.10gb,", &l, &err), -1);
    cr_expect(strstr(err.msg, "empty") != NULL, "%s", err.msg);
    cr_expect_eq(preset_layout_parse("H100-80GB", "0x1g.10gb", &l, &err), -1);
    cr_expect_eq(preset_layout_parse("H100-80GB", "99x1g.10gb", &l, &err), -1);
    cr_expect_eq(preset_layout_parse("H100-80GB", "ax1g.10gb", &l, &err), -1);
    cr_expect_eq(preset_layout_parse("H100-80GB", "9g.90gb", &l, &err), -1);
    cr_expect_eq(err.code, SH_ENOTFOUND);
    cr_expect_eq(preset_layout_parse("H100-80GB", "shared/0", &l, &err), -1);
    cr_expect_eq(preset_layout_parse("V100-16GB", "1g.10gb", &l, &err), -1);
    cr_expect_eq(err.code, SH_ENOTFOUND);
    char big[300];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cr_expect_eq(preset_layout_parse("H100-80GB", big, &l, &err), -1);
    cr_expect_eq(err.code, SH_ETOOLARGE);
}

/* Validation rules, one test each. */

static void mig_layout(struct preset_layout *l, const char *model,
                       const char *spec)
{
    /* Build without validation: fill from the table directly. */
    memset(l, 0, sizeof(*l));
    snprintf(l->model, sizeof(l->model), "%s", model);
    l->mig = true;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        int count = 1;
        char *x = strchr(tok, 'x');
        if (x) {
            count = (int)strtol(tok, NULL, 10);
            tok = x + 1;
        }
        const struct preset_profile *p = preset_profile_find(model, tok);
        for (int i = 0; i < count; i++) {
            struct preset_slice *s = &l->slices[l->nslices++];
            s->kind = GPU_SLICE_MIG;
            snprintf(s->profile, sizeof(s->profile), "%s", tok);
            s->compute_slices = p ? p->compute_slices : 1;
            s->memory_slices = p ? p->memory_slices : 1;
            s->share_num = s->compute_slices;
            s->share_den = 7;
        }
    }
}

static void expect_invalid(const struct preset_layout *l, enum sh_errc code,
                           const char *needle)
{
    struct sh_error err = {0};
    cr_expect_eq(preset_validate(l, &err), -1);
    cr_expect_eq(err.code, code, "%s", err.msg);
    cr_expect(strstr(err.msg, needle) != NULL, "'%s' lacks '%s'", err.msg,
              needle);
}

Test(preset_validate, accepts_a_full_mixed_layout)
{
    struct preset_layout l;
    struct sh_error err = {0};
    mig_layout(&l, "A100-40GB", "4g.20gb,2g.10gb,1g.5gb");
    cr_expect_eq(preset_validate(&l, &err), 0, "%s", err.msg);
    mig_layout(&l, "H100-80GB", "2x2g.20gb,1x3g.40gb");
    cr_expect_eq(preset_validate(&l, &err), 0, "%s", err.msg);
}

Test(preset_validate, rejects_unknown_model)
{
    struct preset_layout l;
    mig_layout(&l, "V100-16GB", "");
    l.nslices = 0;
    expect_invalid(&l, SH_ENOTFOUND, "no MIG profiles");
}

Test(preset_validate, rejects_profile_the_model_lacks)
{
    struct preset_layout l;
    mig_layout(&l, "H100-80GB", "1g.5gb");
    expect_invalid(&l, SH_ENOTFOUND, "1g.5gb does not exist on H100-80GB");
}

Test(preset_validate, rejects_more_than_max_instances)
{
    struct preset_layout l;
    mig_layout(&l, "H100-80GB", "2x4g.40gb");
    expect_invalid(&l, SH_EINVAL, "at most 1");
    mig_layout(&l, "H100-80GB", "8x1g.10gb");
    expect_invalid(&l, SH_EINVAL, "at most 7");
}

Test(preset_validate, rejects_more_than_seven_compute_slices)
{
    struct preset_layout l;
    mig_layout(&l, "H100-80GB", "4g.40gb,3g.40gb,1g.10gb");
    expect_invalid(&l, SH_EINVAL, "8 compute slices");
}

Test(preset_validate, rejects_more_than_eight_memory_slices)
{
    struct preset_layout l;
    /* 4 + 2x2 + 2 = 10 memory slices, 4 + 1 + 1 + 1 = 7 compute slices. */
    mig_layout(&l, "H100-80GB", "4g.40gb,3x1g.20gb");
    expect_invalid(&l, SH_EINVAL, "10 memory slices");
}

/* With NVIDIA's tables, a layout within the slice sums nearly always has a
 * placement, but only when the instances are placed with care: these need
 * the planner to avoid first-fit (3g.40gb at 0, or a 1g.20gb at 4). */
Test(preset_validate, accepts_layouts_that_need_careful_placement)
{
    struct preset_layout l;
    struct sh_error err = {0};
    mig_layout(&l, "H100-80GB", "3g.40gb,2g.20gb,2x1g.10gb");
    cr_expect_eq(preset_validate(&l, &err), 0, "%s", err.msg);
    mig_layout(&l, "H100-80GB", "4g.40gb,1g.20gb,2x1g.10gb");
    cr_expect_eq(preset_validate(&l, &err), 0, "%s", err.msg);
    mig_layout(&l, "H100-80GB", "6x1g.10gb,1g.20gb");
    cr_expect_eq(preset_validate(&l, &err), 0, "%s", err.msg);
}

Test(preset_fit, reports_when_no_placement_exists)
{
    /* Both items need memory slices 2..3. */
    struct preset_fit_item items[2] = {
        {.size = 4, .nstarts = 1, .starts = {0}},
        {.size = 4, .nstarts = 1, .starts = {2}},
    };
    int chosen[2];
    cr_expect_eq(preset_fit(items, 2, chosen), -1);
    /* Seven 1-slice items with starts 0..5 only: one too many. */
    struct preset_fit_item ones[7];
    for (int i = 0; i < 7; i++)
        ones[i] = (struct preset_fit_item){
            .size = 1, .nstarts = 6, .starts = {0, 1, 2, 3, 4, 5}};
    int chosen7[7];
    cr_expect_eq(preset_fit(ones, 7, chosen7), -1);
    cr_expect_eq(preset_fit(ones, 6, chosen7), 0);
}

Test(preset_validate, rejects_mixed_kinds)
{
    struct preset_layout l;
    mig_layout(&l, "H100-80GB", "1g.10gb");
    l.slices[0].kind = GPU_SLICE_SHARED;
    expect_invalid(&l, SH_EINVAL, "cannot be mixed");
    preset_shared_layout("H100-80GB", 2, 0, &l);
    l.slices[1].kind = GPU_SLICE_MIG;
    expect_invalid(&l, SH_EINVAL, "cannot be mixed");
}

Test(preset_validate, rejects_bad_shares)
{
    struct preset_layout l;
    preset_shared_layout("H100-80GB", 4, 0, &l);
    l.slices[0].share_den = 0;
    expect_invalid(&l, SH_EINVAL, "share");
    preset_shared_layout("H100-80GB", 4, 0, &l);
    l.slices[0].share_num = 5;
    expect_invalid(&l, SH_EINVAL, "share");
    preset_shared_layout("H100-80GB", 2, 0, &l);
    l.slices[0].share_num = 2;
    l.slices[0].share_den = 3;
    expect_invalid(&l, SH_EINVAL, "more than the whole GPU");
    mig_layout(&l, "H100-80GB", "1g.10gb");
    l.slices[0].share_num = 0;
    expect_invalid(&l, SH_EINVAL, "share");
}

Test(preset_validate, accepts_uneven_shares_that_fit)
{
    struct preset_layout l;
    struct sh_error err = {0};
    preset_shared_layout("H100-80GB", 3, 0, &l);
    l.slices[0].share_num = 1;
    l.slices[0].share_den = 2;
    l.slices[1].share_den = 4;
    l.slices[2].share_den = 4;
    cr_expect_eq(preset_validate(&l, &err), 0, "%s", err.msg);
}

Test(preset_validate, rejects_slice_count_out_of_range)
{
    struct preset_layout l;
    preset_shared_layout("H100-80GB", 2, 0, &l);
    l.nslices = GPU_SLICES_MAX + 1;
    expect_invalid(&l, SH_EINVAL, "slices");
    l.nslices = -1;
    expect_invalid(&l, SH_EINVAL, "slices");
}

Test(preset_fit, finds_the_non_greedy_assignment)
{
    /* 3g first-fit at 0 would strand the two 1g's at 6 and 7. */
    struct preset_fit_item items[] = {
        {.size = 4, .nstarts = 2, .starts = {0, 4}},
        {.size = 2, .nstarts = 3, .starts = {0, 2, 4}},
        {.size = 1, .nstarts = 7, .starts = {0, 1, 2, 3, 4, 5, 6}},
        {.size = 1, .nstarts = 7, .starts = {0, 1, 2, 3, 4, 5, 6}},
    };
    int chosen[4];
    cr_assert_eq(preset_fit(items, 4, chosen), 0);
    cr_expect_eq(chosen[0], 4);
    cr_expect_eq(chosen[1], 0);
    cr_expect_eq(chosen[2], 2);
    cr_expect_eq(chosen[3], 3);
    cr_expect_eq(preset_fit(items, 0, chosen), 0);
}
