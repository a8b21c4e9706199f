/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the Prometheus text writer: HELP/TYPE lines, label values escaped
 * as the format asks, number formatting, histograms with cumulative
 * buckets, and a bounded output that flags what did not fit. */
#include <criterion/criterion.h>
#include <math.h>

#include "lib/util/histogram.h"
#include "lib/util/prom.h"

Test(prom, family_and_samples_with_escaped_labels)
{
    struct prom p;
    prom_init(&p, 4096);
    prom_family(&p, "x_total", "counter", "Things \\ done\nso far.");
    const char *l[] = {"node", "a\"b\\c\nd", "gpu", "0", NULL};
    prom_sample(&p, "x_total", l, 3);
    prom_sample(&p, "x_total", NULL, 0.25);
    prom_sample(&p, "x_total", NULL, 85899345920.0);
    prom_sample(&p, "x_total", NULL, INFINITY);
    cr_assert_not(p.overflow);
    cr_assert_str_eq(strbuf_str(&p.sb),
                     "# HELP x_total Things \\\\ done\\nso far.\n"
                     "# TYPE x_total counter\n"
                     "x_total{node=\"a\\\"b\\\\c\\nd\",gpu=\"0\"} 3\n"
                     "x_total 0.25\n"
                     "x_total 85899345920\n"
                     "x_total +Inf\n");
    prom_fini(&p);
}

Test(prom, histogram_buckets_are_cumulative_with_sum_and_count)
{
    static const double bounds[] = {0.001, 0.01, 0.1};
    struct histogram h;
    histogram_init(&h, bounds, 3);
    histogram_observe(&h, 0.0005);
    histogram_observe(&h, 0.001); /* on a bound: counted in it */
    histogram_observe(&h, 0.05);
    histogram_observe(&h, 2.0);
    cr_assert_eq(histogram_cumulative(&h, 0), 2);
    cr_assert_eq(histogram_cumulative(&h, 1), 2);
    cr_assert_eq(histogram_cumulative(&h, 2), 3);
    cr_assert_eq(histogram_cumulative(&h, 3), 4);
    struct prom p;
    prom_init(&p, 4096);
    const char *l[] = {"kind", "pass", NULL};
    prom_histogram(&p, "d_seconds", l, &h);
    cr_assert_str_eq(strbuf_str(&p.sb),
                     "d_seconds_bucket{kind=\"pass\",le=\"0.001\"} 2\n"
                     "d_seconds_bucket{kind=\"pass\",le=\"0.01\"} 2\n"
                     "d_seconds_bucket{kind=\"pass\",le=\"0.1\"} 3\n"
                     "d_seconds_bucket{kind=\"pass\",le=\"+Inf\"} 4\n"
                     "d_seconds_sum{kind=\"pass\"} 2.0515\n"
                     "d_seconds_count{kind=\"pass\"} 4\n");
    prom_fini(&p);
}

Test(prom, output_past_the_maximum_sets_overflow)
{
    struct prom p;
    prom_init(&p, 32);
    prom_family(&p, "a_metric_with_a_long_name", "gauge", "Help text.");
    cr_assert(p.overflow);
    prom_fini(&p);
}
