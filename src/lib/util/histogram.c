/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed-bucket histograms (see histogram.h). */
#include "lib/util/histogram.h"

#include <string.h>

void histogram_init(struct histogram *h, const double *bounds, int n)
{
    memset(h, 0, sizeof(*h));
    if (n > HISTOGRAM_BOUNDS_MAX)
        n = HISTOGRAM_BOUNDS_MAX;
    for (int i = 0; i < n; i++)
        h->bounds[i] = bounds[i];
    h->nbounds = n < 0 ? 0 : n;
}

void histogram_observe(struct histogram *h, double v)
{
    int i = 0;
    while (i < h->nbounds && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += v;
}

uint64_t histogram_cumulative(const struct histogram *h, int i)
{
    uint64_t total = 0;
    if (i > h->nbounds)
        i = h->nbounds;
    for (int b = 0; b <= i; b++)
        total += h->counts[b];
    return total;
}
