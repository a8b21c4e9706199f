/* SPDX-License-Identifier: Apache-2.0 */
/* sd_notify for shoald and shoal-agent (service.h). */
#include "lib/service/service.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef SHOAL_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

bool service_supported(void)
{
#ifdef SHOAL_HAVE_LIBSYSTEMD
    return true;
#else
    return false;
#endif
}

bool service_managed(void)
{
    const char *s = getenv("NOTIFY_SOCKET");
    return s && *s;
}

static void notify(const char *msg)
{
#ifdef SHOAL_HAVE_LIBSYSTEMD
    sd_notify(0, msg);
#else
    (void)msg;
#endif
}

void service_ready(const char *status)
{
    char msg[512];
    if (status)
        snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
    else
        snprintf(msg, sizeof(msg), "READY=1");
    notify(msg);
}

void service_status(const char *fmt, ...)
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "STATUS=");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    notify(msg);
}

void service_stopping(void)
{
    notify("STOPPING=1");
}

int64_t service_watchdog_interval_ms(void)
{
#ifdef SHOAL_HAVE_LIBSYSTEMD
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        int64_t ms = (int64_t)(usec / 2000);
        return ms > 0 ? ms : 1;
    }
#endif
    return 0;
}

void service_watchdog(void)
{
    notify("WATCHDOG=1");
}
