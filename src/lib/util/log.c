/* SPDX-License-Identifier: Apache-2.0 */
/* Implementation of the logger declared in log.h. Process-wide settings live
 * here (set once from main), which is the one deliberate exception to "no
 * global state outside main.c": a logger has to be reachable from anywhere. */
#include "lib/util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static const char *log_program = "shoal";
static int log_level = LOG_INFO;
static char log_debug[256];

void sh_log_init(const char *program)
{
    log_program = program;
}

void sh_log_set_level(int level)
{
    log_level = level;
}

void sh_log_set_debug(const char *components)
{
    snprintf(log_debug, sizeof(log_debug), "%s", components ? components : "");
    if (log_debug[0] && log_level < LOG_DEBUG)
        log_level = LOG_DEBUG;
}

bool sh_log_debug_enabled(const char *component)
{
    if (!log_debug[0] || log_level < LOG_DEBUG)
        return false;
    if (strcmp(log_debug, "all") == 0)
        return true;
    size_t n = strlen(component);
    const char *p = log_debug;
    while ((p = strstr(p, component)) != NULL) {
        bool starts = (p == log_debug || p[-1] == ',');
        bool ends = (p[n] == '\0' || p[n] == ',');
        if (starts && ends)
            return true;
        p += n;
    }
    return false;
}

static const char *level_name(int level)
{
    switch (level) {
    case LOG_EMERG:
    case LOG_ALERT:
    case LOG_CRIT:
        return "CRIT";
    case LOG_ERR:
        return "ERROR";
    case LOG_WARNING:
        return "WARN";
    case LOG_NOTICE:
        return "NOTICE";
    case LOG_INFO:
        return "INFO";
    default:
        return "DEBUG";
    }
}

void sh_log(int level, const char *component, const char *fmt, ...)
{
    if (level > log_level)
        return;
    struct timeval tv;
    struct tm tm;
    char ts[32];
    char line[2048];
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    int n = snprintf(line, sizeof(line), "%s.%03dZ %s %s[%s]: ", ts,
                     (int)(tv.tv_usec / 1000), level_name(level), log_program,
                     component);
    if (n < 0 || (size_t)n >= sizeof(line))
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One write per line keeps lines whole when several processes share
     * a terminal or a log file. */
    fprintf(stderr, "%s\n", line);
}
