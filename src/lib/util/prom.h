/* SPDX-License-Identifier: Apache-2.0 */
/* A writer of the Prometheus text exposition format (version 0.0.4): the
 * # HELP and # TYPE lines of a family, samples with escaped label values,
 * and histograms as cumulative buckets. It knows nothing of what is being
 * measured; shoald's /metrics decides that. Output is bounded: once the
 * maximum is reached further writes are dropped and the overflow flag set,
 * so a caller checks once at the end. */
#ifndef SHOAL_UTIL_PROM_H
#define SHOAL_UTIL_PROM_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/util/histogram.h"
#include "lib/util/strbuf.h"

struct prom {
    struct strbuf sb;
    bool overflow; /* something did not fit in max (or memory was short) */
};

/* Caller-allocated: an empty exposition of at most max bytes. */
void prom_init(struct prom *p, size_t max);
void prom_fini(struct prom *p);

/* The header of one family: type is "gauge", "counter" or "histogram";
 * help is one sentence (backslashes and newlines are escaped). */
void prom_family(struct prom *p, const char *name, const char *type,
                 const char *help);

/* One sample: name{k1="v1",...} value. labels is NULL or key, value pairs
 * ending with a NULL key; values are escaped (\\, \", \n). Whole numbers
 * print without a fraction, others with 9 significant digits, infinities
 * as +Inf/-Inf. All arguments borrowed for the call. */
void prom_sample(struct prom *p, const char *name, const char *const *labels,
                 double value);

/* A histogram's samples: name_bucket{labels,le="B"} cumulative counts for
 * every bound and +Inf, then name_sum and name_count. */
void prom_histogram(struct prom *p, const char *name, const char *const *labels,
                    const struct histogram *h);

/* Append v as a label value, escaped, to sb. -1 when it does not fit. */
int prom_escape_label(struct strbuf *sb, const char *v);

#endif
