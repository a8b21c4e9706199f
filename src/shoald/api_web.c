/* SPDX-License-Identifier: Apache-2.0 */
/* GET /: the dashboard, one page built into shoald (web/dashboard.html):
 * nodes and GPUs (busy, idle, sliced), the queue with the reason each job
 * waits, projects with their quotas, and usage; a job's own view (#job/ID:
 * spec, state, reason, estimate, attempts, the tail of its output) with
 * the hold, release, cancel and requeue buttons its "actions" allow; and
 * sign-out, which makes the browser forget the token. The page asks for a
 * token and reads the same /v1 API as the CLI, so it shows what that token
 * may see and offers what it may do. */
#include <stdlib.h>
#include <string.h>

#include "shoald/api_handlers.h"

extern const unsigned char web_dashboard_html[];
extern const size_t web_dashboard_html_len;

void api_web_dashboard(struct shoald *d, struct api_req *req)
{
    (void)d;
    char *page = malloc(web_dashboard_html_len);
    if (!page) {
        api_errorf(req, SH_EINTERNAL, "out of memory");
        return;
    }
    memcpy(page, web_dashboard_html, web_dashboard_html_len);
    api_reply_text(req, 200, "text/html; charset=utf-8", page,
                   web_dashboard_html_len);
}
