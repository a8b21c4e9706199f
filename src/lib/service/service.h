/* SPDX-License-Identifier: Apache-2.0 */
/* What a daemon tells systemd when it runs as a Type=notify service
 * (shoald.service, shoal-agent.service): READY=1 once it serves, WATCHDOG=1
 * from its event loop while WatchdogSec= is set, STOPPING=1 when it stops,
 * and a STATUS= line for `systemctl status`. Through libsystemd's
 * sd_notify; outside systemd (no NOTIFY_SOCKET) every call does nothing.
 * Built without libsystemd, the calls do nothing either and
 * service_supported() says so (shoald and the agent warn when started by
 * systemd then). */
#ifndef SHOAL_SERVICE_H
#define SHOAL_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

/* Whether this build can talk to systemd. */
bool service_supported(void);

/* Whether a service manager is listening (NOTIFY_SOCKET is set). */
bool service_managed(void);

/* READY=1 with a status line (may be NULL). */
void service_ready(const char *status);

/* STATUS=...: a free-form line for `systemctl status`. */
void service_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* STOPPING=1. */
void service_stopping(void);

/* How often to send WATCHDOG=1: half of WatchdogSec= in milliseconds, or 0
 * when systemd watches no watchdog for this process. */
int64_t service_watchdog_interval_ms(void);

/* WATCHDOG=1. */
void service_watchdog(void);

#endif
