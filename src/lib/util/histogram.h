/* SPDX-License-Identifier: Apache-2.0 */
/* A histogram with fixed bucket bounds, the kind Prometheus scrapes: a
 * count per bucket, the count of all observations and their sum. Plain
 * caller-allocated data (no heap), so a module keeps one inside its own
 * struct and a reader copies it. Not thread-safe: one owner observes. */
#ifndef SHOAL_UTIL_HISTOGRAM_H
#define SHOAL_UTIL_HISTOGRAM_H

#include <stdint.h>

#define HISTOGRAM_BOUNDS_MAX 24

struct histogram {
    int nbounds;
    double bounds[HISTOGRAM_BOUNDS_MAX]; /* upper bounds, increasing */
    /* counts[i]: observations v with bounds[i-1] < v <= bounds[i];
     * counts[nbounds]: those above the last bound (not cumulative). */
    uint64_t counts[HISTOGRAM_BOUNDS_MAX + 1];
    uint64_t count;
    double sum;
};

/* An empty histogram with the n upper bounds given (increasing; at most
 * HISTOGRAM_BOUNDS_MAX are kept). bounds is borrowed for the call. */
void histogram_init(struct histogram *h, const double *bounds, int n);

/* Count one observation. */
void histogram_observe(struct histogram *h, double v);

/* Observations <= bounds[i] (i = nbounds: all of them), as Prometheus'
 * cumulative "le" buckets show them. */
uint64_t histogram_cumulative(const struct histogram *h, int i);

#endif
