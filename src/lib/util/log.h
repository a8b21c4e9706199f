/* SPDX-License-Identifier: Apache-2.0 */
/* The one logger: one line per event on stderr,
 *   2026-11-30T07:24:49.123Z INFO shoald[api]: message key=value ...
 * with syslog levels. Debug output is per component and costs one flag test
 * when off. Never log tokens or environment values.
 */
#ifndef SHOAL_UTIL_LOG_H
#define SHOAL_UTIL_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Name printed before "[component]" (e.g. "shoald"). Borrowed: must outlive
 * all logging (a string literal in main). */
void sh_log_init(const char *program);

/* Messages above this syslog level are dropped (default LOG_INFO). */
void sh_log_set_level(int level);

/* Enable debug output for a comma-separated list of components, or "all".
 * Borrowed for the call. */
void sh_log_set_debug(const char *components);

/* True when LOG_DEBUG messages of component would be printed. */
bool sh_log_debug_enabled(const char *component);

void sh_log(int level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define sh_debug(component, ...)                                               \
    do {                                                                       \
        if (sh_log_debug_enabled(component))                                   \
            sh_log(LOG_DEBUG, component, __VA_ARGS__);                         \
    } while (0)

#endif
