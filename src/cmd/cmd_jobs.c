/* SPDX-License-Identifier: Apache-2.0 */
/* `shoal queue`, `shoal show`, `shoal cancel`, `shoal hold` and
 * `shoal release`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/cmd_format.h"
#include "cmd/cmd_opts.h"
#include "lib/util/clock.h"
#include "lib/util/parse.h"
#include "cmd/json_text.h"

/* --json fetches the jobs this many at a time. */
#define QUEUE_JSON_PAGE 5000
#define QUEUE_LIMIT_MAX 1000000

static const char queue_usage[] =
    "Usage: shoal queue [--all] [--state S[,S..]] [--user U|--me]\n"
    "                   [--project P] [--limit N] [--after ID] [--json]\n"
    "List jobs: pending and running by default, with the reason each\n"
    "pending job waits and its estimated start. The table shows one page\n"
    "(the terminal's height, 100 lines when not on a terminal) and says\n"
    "how many more there are; --json lists every job unless --limit says.\n"
    "\n"
    "  -a, --all          every job the controller keeps in memory\n"
    "  -s, --state LIST   pending, running, completed, failed, cancelled,\n"
    "                     preempted, timeout, node_fail (comma-separated)\n"
    "  -u, --user NAME    one user's jobs\n"
    "      --me           your own jobs\n"
    "  -p, --project NAME one project's jobs\n"
    "  -n, --limit N      at most N jobs (0: all of them)\n"
    "      --after ID     only jobs with a greater id (the next page)\n"
    "      --json         a JSON array of jobs\n"
    "  -o, --format FMT   squeue's -o: a line per job of %[.][WIDTH]X\n"
    "                     fields: %i id, %j name, %u user, %a project, %P\n"
    "                     partition, %q qos, %p priority, %T state, %t its\n"
    "                     code (PD, R, CD, F, CA, PR, TO, NF), %M time used,\n"
    "                     %l time limit, %D nodes, %R nodes or (reason), %N\n"
    "                     nodes, %b GPUs, %V submit, %S start, %e end time\n"
    "                     ('.' right-justifies; WIDTH pads and cuts)\n"
    "      --noheader     no header line with --format\n";

static const char show_usage[] = "Usage: shoal show JOB [--json]\n"
                                 "Show everything about one job.\n";

static const char cancel_usage[] =
    "Usage: shoal cancel JOB...\n"
    "       shoal cancel [-u USER] [-n NAME] [-t STATE[,STATE]] [-p "
    "PARTITION]\n"
    "                    [-A PROJECT] [JOB...]\n"
    "Cancel jobs: pending ones at once, running ones are stopped (SIGTERM,\n"
    "then SIGKILL after the grace period). ID of an array cancels every\n"
    "task, ID_TASK one. With filters (scancel's), every job you may see\n"
    "that matches them all (and is among the JOBs, when named):\n"
    "  -u, --user USER       of this user (me: yours)\n"
    "  -n, --name NAME       with this name\n"
    "  -t, --state LIST      in these states (default pending,running)\n"
    "  -p, --partition NAME  in this partition\n"
    "  -A, --account NAME    of this project\n"
    "Shoal has no --signal: a job gets SIGTERM (then SIGKILL) only as it\n"
    "ends.\n";

static const char hold_usage[] =
    "Usage: shoal hold JOB...\n"
    "Keep pending jobs out of scheduling until `shoal release`. Who may\n"
    "cancel a job may hold it; `shoal submit --hold` submits one held.\n";

static const char release_usage[] = "Usage: shoal release JOB...\n"
                                    "Let held jobs back into scheduling.\n";

static const char requeue_usage[] =
    "Usage: shoal requeue JOB...\n"
    "Put jobs back in the queue, same id, next attempt: a running one is\n"
    "stopped first (SIGTERM, SIGKILL after the grace), an ended one goes\n"
    "back at once.\n";

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static long long num(const json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* "8", "2x8", "1g.10gb", "-"; --gpus-total: "16 any" until placed, then
 * the shape picked ("2x8"). */
static void format_shape(const json_t *j, char *buf, size_t size)
{
    const char *slice = str(j, "slice");
    long long nodes = num(j, "nodes"), gpus = num(j, "gpus");
    const json_t *place = json_object_get(j, "placement");
    if (num(j, "gpus_total") && json_array_size(place) == 0) {
        snprintf(buf, size, "%lld any", num(j, "gpus_total"));
        return;
    }
    if (num(j, "gpus_total")) {
        nodes = (long long)json_array_size(place);
        gpus = (long long)json_array_size(
            json_object_get(json_array_get(place, 0), "gpus"));
    }
    if (slice)
        snprintf(buf, size, "%s%s", nodes > 1 ? "n x " : "", slice);
    else if (gpus == 0)
        snprintf(buf, size, "%s", nodes > 1 ? "cpu x n" : "0");
    else if (nodes > 1)
        snprintf(buf, size, "%lldx%lld", nodes, gpus);
    else
        snprintf(buf, size, "%lld", gpus);
}

static long long iso_ms(const char *iso)
{
    int64_t ms = 0;
    if (iso)
        clock_parse_date("time", iso, &ms, NULL);
    return ms;
}

static void format_where(const json_t *j, char *buf, size_t size)
{
    const char *state = str(j, "state");
    if (strcmp(state, "pending") == 0) {
        const char *reason = str(j, "reason");
        char est[160] = "";
        long long e = iso_ms(str(j, "estimated_start"));
        if (e) {
            char ago[32];
            cmd_format_ago(e, ago, sizeof(ago));
            snprintf(est, sizeof(est), " (start %s)", ago);
        } else if (str(j, "estimate")) {
            snprintf(est, sizeof(est), " (%s)", str(j, "estimate"));
        }
        snprintf(buf, size, "%s%s", reason ? reason : "waiting to be scheduled",
                 est);
        return;
    }
    size_t o = 0;
    buf[0] = '\0';
    json_t *pl = json_object_get(j, "placement");
    size_t i;
    json_t *a;
    json_array_foreach (pl, i, a) {
        o += (size_t)snprintf(buf + o, o < size ? size - o : 0, "%s%s",
                              i ? "," : "", str(a, "node"));
        if (o >= size)
            break;
    }
    if (!buf[0]) {
        const char *reason = str(j, "reason");
        snprintf(buf, size, "%s", reason ? reason : "-");
    } else if (json_is_true(json_object_get(j, "idle"))) {
        snprintf(buf + o, o < size ? size - o : 0, " (idle)");
    }
}

static void print_queue(json_t *jobs)
{
    static const char *const hdr[] = {"ID",    "NAME", "USER", "PROJECT",
                                      "STATE", "GPUS", "TIME", "NODES/REASON"};
    struct table *t = table_create(8, hdr);
    size_t i;
    json_t *j;
    long long now = clock_wall_ms();
    size_t n = json_array_size(jobs);
    for (i = 0; i < n; i++) {
        j = json_array_get(jobs, i);
        char id[64], shape[48], tm[32], where[300];
        snprintf(id, sizeof(id), "%lld", num(j, "id"));
        if (json_object_get(j, "array_id")) {
            /* A task: ID_TASK; a run of pending tasks of one array that
             * wait for the same reason is one line, ID_[FIRST-LAST]. */
            long long aid = num(j, "array_id"), first = num(j, "array_task");
            size_t k = i;
            while (strcmp(str(j, "state"), "pending") == 0 && k + 1 < n) {
                const json_t *x = json_array_get(jobs, k + 1);
                const char *ra = str(j, "reason"), *rb = str(x, "reason");
                if (!json_object_get(x, "array_id") ||
                    num(x, "array_id") != aid ||
                    strcmp(str(x, "state"), "pending") != 0 ||
                    strcmp(ra ? ra : "", rb ? rb : "") != 0)
                    break;
                k++;
            }
            if (k > i) {
                long long last = num(json_array_get(jobs, k), "array_task");
                size_t count = k - i + 1;
                if ((long long)count == last - first + 1)
                    snprintf(id, sizeof(id), "%lld_[%lld-%lld]", aid, first,
                             last);
                else
                    snprintf(id, sizeof(id), "%lld_[%lld-%lld] (%zu)", aid,
                             first, last, count);
                i = k; /* the run is one line */
            } else {
                snprintf(id, sizeof(id), "%lld_%lld", aid, first);
            }
        }
        format_shape(j, shape, sizeof(shape));
        long long start = iso_ms(str(j, "start_time"));
        long long end = iso_ms(str(j, "end_time"));
        long long submit = iso_ms(str(j, "submit_time"));
        long long from = start ? start : submit;
        long long to = end ? end : now;
        format_duration((to - from) / 1000, tm, sizeof(tm));
        format_where(j, where, sizeof(where));
        const char *row[] = {id,
                             str(j, "name"),
                             str(j, "user"),
                             str(j, "project"),
                             str(j, "state"),
                             shape,
                             tm,
                             where};
        table_add(t, row);
    }
    table_print(t);
    table_destroy(t);
}

/* --format: squeue -o lines (cmd_format.h), a job per line. */
static void print_format(const char *format, const json_t *jobs, bool header)
{
    struct strbuf line;
    strbuf_init(&line, 1 << 20);
    if (header) {
        queue_format_header(format, &line);
        puts(strbuf_str(&line));
    }
    size_t i;
    json_t *j;
    int64_t now = clock_wall_ms();
    json_array_foreach (jobs, i, j) {
        strbuf_reset(&line);
        queue_format_row(format, j, now, &line);
        puts(strbuf_str(&line));
    }
    strbuf_fini(&line);
}

/* The table's default page: the terminal's height less the header, the
 * "more" line and the prompt; 100 lines when not on a terminal. */
static int64_t page_lines(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
        ws.ws_row > 0)
        return ws.ws_row > 13 ? ws.ws_row - 3 : 10;
    return 100;
}

/* One page of GET path (which ends in '?' or '&'): at most
 * QUEUE_JSON_PAGE jobs after id after, no more than limit - done when
 * limit > 0. The answer's text (the caller frees it), its jobs array in
 * *jobs and its "more" count in *more; dies on an error. */
static char *queue_page(struct client *cl, const char *path, int64_t limit,
                        int64_t done, int64_t after, struct jtext *jobs,
                        long long *more)
{
    int64_t want = QUEUE_JSON_PAGE;
    if (limit > 0 && limit - done < want)
        want = limit - done;
    char page[1200];
    snprintf(page, sizeof(page), "%slimit=%lld&after=%lld", path,
             (long long)want, (long long)after);
    char *text = NULL;
    size_t len = 0;
    struct sh_error err;
    if (client_call_raw(cl, "GET", page, NULL, 0, &text, &len, NULL, &err) < 0)
        die("%s", err.msg);
    struct jtext ans, v;
    if (!jtext_value(text, text + len, &ans) ||
        !jtext_member(&ans, "jobs", jobs) || !jtext_member(&ans, "more", &v))
        die("the controller sent malformed JSON");
    *more = strtoll(v.p, NULL, 10);
    return text;
}

/* --json: every job asked for, fetched a page at a time and printed as
 * each page arrives, straight from the controller's text (the layout is
 * json_dumps' JSON_INDENT(2), as `--json` always printed). */
static void queue_json(struct client *cl, const char *path, int64_t limit,
                       int64_t after)
{
    int64_t printed = 0;
    bool more = true;
    fputs("[", stdout);
    while (more && (limit == 0 || printed < limit)) {
        struct jtext jobs, job, v;
        long long left;
        char *text = queue_page(cl, path, limit, printed, after, &jobs, &left);
        more = left > 0;
        const char *cur = NULL;
        int64_t n = 0;
        while (jtext_next(&jobs, &cur, &job)) {
            fputs(printed++ ? ",\n  " : "\n  ", stdout);
            jtext_print(stdout, &job, 1);
            n++;
        }
        /* The next page starts after this one's last job. */
        if (n > 0) {
            if (!jtext_member(&job, "id", &v))
                die("the controller sent a job without an id");
            after = strtoll(v.p, NULL, 10);
        }
        free(text);
        if (n == 0)
            break;
    }
    puts(printed ? "\n]" : "]");
}

/* The table's jobs, fetched a page at a time; each job is kept as a small
 * object of the members the table shows, cut out of the controller's text
 * (a jansson tree of every member of 10,000 jobs cost most of the time of
 * `--limit 0`). *more: how many further jobs match after the last one. */
static json_t *queue_rows(struct client *cl, const char *path, int64_t limit,
                          int64_t after, long long *more)
{
    static const char *const keys[] = {
        "id",       "array_id",    "array_task", "state",
        "reason",   "name",        "user",       "project",
        "slice",    "nodes",       "gpus",       "estimated_start",
        "estimate", "placement",   "idle",       "start_time",
        "end_time", "submit_time", "partition",  "qos",
        "priority", "time_limit",  "gpus_total"};
    json_t *rows = json_array();
    int64_t got = 0;
    *more = 1;
    while (*more > 0 && (limit == 0 || got < limit)) {
        struct jtext jobs, job, v;
        char *text = queue_page(cl, path, limit, got, after, &jobs, more);
        const char *cur = NULL;
        int64_t n = 0;
        while (jtext_next(&jobs, &cur, &job)) {
            json_t *row = json_object();
            for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++) {
                if (!jtext_member(&job, keys[k], &v))
                    continue;
                json_t *x = json_loadb(v.p, (size_t)(v.end - v.p),
                                       JSON_DECODE_ANY, NULL);
                if (!x)
                    die("the controller sent malformed JSON");
                json_object_set_new(row, keys[k], x);
            }
            if (!json_is_integer(json_object_get(row, "id")))
                die("the controller sent a job without an id");
            after = json_integer_value(json_object_get(row, "id"));
            json_array_append_new(rows, row);
            n++;
        }
        free(text);
        got += n;
        if (n == 0)
            break;
    }
    return rows;
}

int cmd_queue(int argc, char **argv)
{
    static const struct option opts[] = {
        {"all", no_argument, NULL, 'a'},
        {"state", required_argument, NULL, 's'},
        {"user", required_argument, NULL, 'u'},
        {"me", no_argument, NULL, 'M'},
        {"project", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"limit", required_argument, NULL, 'n'},
        {"after", required_argument, NULL, 'A'},
        {"format", required_argument, NULL, 'o'},
        {"noheader", no_argument, NULL, 'H'},
        {NULL, 0, NULL, 0},
    };
    const char *state = "active", *user = NULL, *project = NULL;
    bool json_out = false, noheader = false;
    const char *format = NULL;
    int64_t limit = -1, after = 0; /* -1: the default page */
    struct sh_error err;
    int c;
    struct cmd_opts p;
    cmd_opts_init(&p, "queue", queue_usage, opts, "as:u:p:n:o:", false, argc,
                  argv);
    while ((c = cmd_opts_next(&p)) != -1) {
        switch (c) {
        case 'a':
            state = NULL;
            break;
        case 's':
            state = p.arg;
            break;
        case 'u':
            user = p.arg;
            break;
        case 'M':
            user = "me";
            break;
        case 'p':
            project = p.arg;
            break;
        case 'j':
            json_out = true;
            break;
        case 'o':
            if (queue_format_check(p.arg, &err) < 0)
                cmd_opts_fail(&p, "%s", err.msg);
            format = p.arg;
            break;
        case 'H':
            noheader = true;
            break;
        case 'n':
            if (parse_int64("--limit", p.arg, 0, QUEUE_LIMIT_MAX, &limit,
                            &err) < 0)
                cmd_opts_fail(&p, "%s", err.msg);
            break;
        case 'A':
            if (parse_int64("--after", p.arg, 0, INT64_MAX, &after, &err) < 0)
                cmd_opts_fail(&p, "%s", err.msg);
            break;
        default: /* CMD_OPT_ARG */
            cmd_opts_fail(&p, "unexpected argument '%s'", p.arg);
        }
    }
    if (limit < 0)
        limit = json_out ? 0 : page_lines();
    char path[1024] = "/v1/jobs?";
    char enc[300];
    if (state) {
        client_urlencode(state, enc, sizeof(enc));
        strncat(path, "state=", sizeof(path) - strlen(path) - 1);
        strncat(path, enc, sizeof(path) - strlen(path) - 1);
        strncat(path, "&", sizeof(path) - strlen(path) - 1);
    }
    if (user) {
        client_urlencode(user, enc, sizeof(enc));
        strncat(path, "user=", sizeof(path) - strlen(path) - 1);
        strncat(path, enc, sizeof(path) - strlen(path) - 1);
        strncat(path, "&", sizeof(path) - strlen(path) - 1);
    }
    if (project) {
        client_urlencode(project, enc, sizeof(enc));
        strncat(path, "project=", sizeof(path) - strlen(path) - 1);
        strncat(path, enc, sizeof(path) - strlen(path) - 1);
        strncat(path, "&", sizeof(path) - strlen(path) - 1);
    }
    struct client *cl = cmd_connect();
    if (json_out) {
        queue_json(cl, path, limit, after);
        client_destroy(cl);
        return 0;
    }
    long long more = 0;
    json_t *jobs = queue_rows(cl, path, limit, after, &more);
    if (format)
        print_format(format, jobs, !noheader);
    else
        print_queue(jobs);
    size_t n = json_array_size(jobs);
    if (more > 0 && n > 0)
        printf("... %lld more; the next page: --after %lld, all of them: "
               "--limit 0\n",
               more, num(json_array_get(jobs, n - 1), "id"));
    json_decref(jobs);
    client_destroy(cl);
    return 0;
}

static const char *job_id_arg(const char *s)
{
    return cmd_job_ref(s);
}

static void show_line(const char *key, const char *value)
{
    printf("%-16s %s\n", key, value ? value : "-");
}

/* "attempt 1: preempted, 10:00:00Z to 10:05:00Z on n1,n2 (why)". */
static const char *format_attempt(const json_t *a, char *buf, size_t size)
{
    size_t o = (size_t)snprintf(
        buf, size, "attempt %lld: %s, %s to %s", num(a, "attempt"),
        str(a, "state") ? str(a, "state") : "-",
        str(a, "start_time") ? str(a, "start_time") : "not started",
        str(a, "end_time") ? str(a, "end_time") : "-");
    size_t k;
    json_t *n;
    json_array_foreach (json_object_get(a, "nodes"), k, n)
        o += (size_t)snprintf(buf + o, o < size ? size - o : 0, "%s%s",
                              k ? "," : " on ", json_string_value(n));
    if (json_is_integer(json_object_get(a, "exit_code")))
        o += (size_t)snprintf(buf + o, o < size ? size - o : 0, ", exit %lld",
                              num(a, "exit_code"));
    if (str(a, "reason"))
        snprintf(buf + o, o < size ? size - o : 0, " (%s)", str(a, "reason"));
    return buf;
}

static void print_job(const json_t *j)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "%lld", num(j, "id"));
    show_line("id:", buf);
    show_line("name:", str(j, "name"));
    show_line("user:", str(j, "user"));
    show_line("project:", str(j, "project"));
    if (str(j, "partition"))
        show_line("partition:", str(j, "partition"));
    if (str(j, "qos"))
        show_line("qos:", str(j, "qos"));
    show_line("state:", str(j, "state"));
    show_line("reason:", str(j, "reason"));
    show_line("priority:", str(j, "priority"));
    if (num(j, "gpus_total") &&
        json_array_size(json_object_get(j, "placement")))
        snprintf(buf, sizeof(buf), "%lld GPU(s) in all (--gpus-total), ",
                 num(j, "gpus_total"));
    else
        buf[0] = '\0';
    size_t b = strlen(buf);
    format_shape(j, buf + b, sizeof(buf) - b);
    if (num(j, "gpus_total") &&
        !json_array_size(json_object_get(j, "placement")))
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
                 " GPU(s) in all (--gpus-total): the fewest nodes that "
                 "hold them");
    else
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
                 " GPU(s) on %lld node(s)",
                 num(j, "gpus_total") ? (long long)json_array_size(
                                            json_object_get(j, "placement"))
                                      : num(j, "nodes"));
    show_line("shape:", buf);
    show_line("gpu type:", str(j, "gpu_type"));
    if (str(j, "nodelist"))
        show_line("nodelist:", str(j, "nodelist"));
    if (str(j, "exclude"))
        show_line("exclude:", str(j, "exclude"));
    if (str(j, "constraint"))
        show_line("constraint:", str(j, "constraint"));
    if (json_is_true(json_object_get(j, "exclusive")))
        show_line("exclusive:", "yes (whole nodes)");
    if (str(j, "begin"))
        show_line("begin:", str(j, "begin"));
    if (num(j, "time_limit")) {
        format_duration(num(j, "time_limit"), buf, sizeof(buf));
        show_line("time limit:", buf);
    }
    if (num(j, "mem")) {
        format_size((uint64_t)num(j, "mem"), buf, sizeof(buf));
        show_line("memory:", buf);
    }
    if (num(j, "cpus")) {
        snprintf(buf, sizeof(buf), "%lld", num(j, "cpus"));
        show_line("cpus:", buf);
    }
    show_line("submitted:", str(j, "submit_time"));
    show_line("started:", str(j, "start_time"));
    show_line("ended:", str(j, "end_time"));
    if (str(j, "estimated_start"))
        show_line("estimated start:", str(j, "estimated_start"));
    else if (str(j, "estimate"))
        show_line("estimated start:", str(j, "estimate"));
    json_t *ec = json_object_get(j, "exit_code");
    json_t *sig = json_object_get(j, "exit_signal");
    if (json_is_integer(ec) || json_is_integer(sig)) {
        snprintf(buf, sizeof(buf), "%lld%s%lld",
                 (long long)json_integer_value(ec),
                 json_is_integer(sig) ? ", signal " : "",
                 json_is_integer(sig) ? (long long)json_integer_value(sig) : 0);
        if (!json_is_integer(sig))
            snprintf(buf, sizeof(buf), "%lld",
                     (long long)json_integer_value(ec));
        show_line("exit:", buf);
    }
    size_t i, o = 0;
    json_t *v;
    buf[0] = '\0';
    json_array_foreach (json_object_get(j, "command"), i, v)
        o += (size_t)snprintf(buf + o, o < sizeof(buf) ? sizeof(buf) - o : 0,
                              "%s%s", i ? " " : "", json_string_value(v));
    show_line("command:", json_object_get(j, "script") ? "(script)" : buf);
    show_line("workdir:", str(j, "workdir"));
    if (str(j, "image")) {
        show_line("image:", str(j, "image"));
        show_line("image digest:", str(j, "image_digest"));
    }
    /* A run starts its tasks only once every volume is mounted (else it
     * fails with the reason), so the state follows from the job's. */
    const char *st = str(j, "state");
    const char *mstate = !st                          ? "-"
                         : strcmp(st, "running") == 0 ? "mounted"
                         : strcmp(st, "pending") == 0 ? "not mounted yet"
                                                      : "unmounted";
    json_array_foreach (json_object_get(j, "volumes"), i, v) {
        snprintf(buf, sizeof(buf), "%s at %s (%s%s)", str(v, "name"),
                 str(v, "path"), mstate,
                 json_is_true(json_object_get(v, "readonly")) ? ", read-only"
                                                              : "");
        show_line(i ? "" : "volumes:", buf);
    }
    json_array_foreach (json_object_get(j, "placement"), i, v) {
        size_t k;
        json_t *g;
        o = (size_t)snprintf(buf, sizeof(buf), "%s:", str(v, "node"));
        json_array_foreach (json_object_get(v, "gpus"), k, g)
            o +=
                (size_t)snprintf(buf + o, o < sizeof(buf) ? sizeof(buf) - o : 0,
                                 " %s", json_string_value(g));
        show_line(i ? "" : "placement:", buf);
    }
    /* srun's steps of a running batch job: "0: completed, exit 0, 2 tasks
     * on node1,node2: hostname". */
    json_array_foreach (json_object_get(j, "steps"), i, v) {
        size_t k;
        json_t *x;
        o = (size_t)snprintf(buf, sizeof(buf), "%lld: %s", num(v, "step"),
                             str(v, "state"));
        if (json_is_integer(json_object_get(v, "exit")))
            o +=
                (size_t)snprintf(buf + o, o < sizeof(buf) ? sizeof(buf) - o : 0,
                                 ", exit %lld", num(v, "exit"));
        o += (size_t)snprintf(buf + o, o < sizeof(buf) ? sizeof(buf) - o : 0,
                              ", %lld tasks on", num(v, "ntasks"));
        json_array_foreach (json_object_get(v, "nodes"), k, x)
            o +=
                (size_t)snprintf(buf + o, o < sizeof(buf) ? sizeof(buf) - o : 0,
                                 "%s%s", k ? "," : " ", json_string_value(x));
        o += (size_t)snprintf(buf + o, o < sizeof(buf) ? sizeof(buf) - o : 0,
                              ":");
        json_array_foreach (json_object_get(v, "command"), k, x)
            o +=
                (size_t)snprintf(buf + o, o < sizeof(buf) ? sizeof(buf) - o : 0,
                                 " %s", json_string_value(x));
        show_line(i ? "" : "steps:", buf);
    }
    if (num(j, "requeues")) {
        snprintf(buf, sizeof(buf), "%lld", num(j, "requeues"));
        show_line("requeues:", buf);
        snprintf(buf, sizeof(buf),
                 "%lld, 0 to %lld, each with its own output (shoal logs "
                 "--attempt N)",
                 num(j, "attempt") + 1, num(j, "attempt"));
        show_line("attempts:", buf);
        /* Each attempt kept, with its own times (the oldest may be
         * dropped: a job keeps its last ones). */
        json_array_foreach (json_object_get(j, "attempts"), i, v)
            show_line("", format_attempt(v, buf, sizeof(buf)));
    }
}

int cmd_show(int argc, char **argv)
{
    struct cmd_flag flags[] = {{"json", false, NULL, false},
                               {NULL, false, NULL, false}};
    const char *pos[2];
    int npos = cmd_opts_collect("show", show_usage, flags, argc, argv, pos, 2);
    if (npos > 1)
        die("show takes one job id");
    if (npos == 0)
        die("which job? (shoal show JOB)");
    bool json_out = flags[0].set;
    const char *id = pos[0];
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%s", job_id_arg(id));
    struct client *c = cmd_connect();
    json_t *j = cmd_call(c, "GET", path, NULL);
    if (json_out)
        cmd_print_json(j);
    else {
        print_job(j);
        json_decref(j);
    }
    client_destroy(c);
    return 0;
}

/* POST /v1/jobs/ID/ACTION for every job named (all ids checked first);
 * "DONE job ID" for each that worked. */
static int each_job(int argc, char **argv, const char *usage,
                    const char *action, const char *done)
{
    const char **ids = calloc((size_t)argc, sizeof(*ids));
    if (!ids)
        die("out of memory");
    int n = cmd_opts_collect(argv[0], usage, NULL, argc, argv, ids, argc);
    if (n == 0)
        die("which jobs? (shoal %s JOB...)", argv[0]);
    for (int i = 0; i < n; i++)
        job_id_arg(ids[i]); /* all ids valid before acting on any */
    struct client *c = cmd_connect();
    int failed = 0;
    for (int i = 0; i < n; i++) {
        char path[96];
        /* `shoal cancel ID` of an array cancels all its tasks (Slurm's
         * scancel); ID_TASK one task. */
        bool whole = strcmp(action, "cancel") == 0 && !strchr(ids[i], '_');
        snprintf(path, sizeof(path), "/v1/jobs/%s/%s%s", job_id_arg(ids[i]),
                 action, whole ? "?array=true" : "");
        json_t *out = NULL;
        struct sh_error err;
        if (client_call(c, "POST", path, NULL, &out, NULL, &err) < 0) {
            warn("%s", err.msg);
            failed++;
            if (err.code == SH_EUNAVAILABLE)
                break;
            continue;
        }
        printf("%s job %s\n", done, ids[i]);
        json_decref(out);
    }
    client_destroy(c);
    free(ids);
    return failed ? 1 : 0;
}

/* Whether job j is among the ids named (none named: all are). */
static bool named(const json_t *j, const char **ids, int n)
{
    if (n == 0)
        return true;
    char id[64], task[64];
    snprintf(id, sizeof(id), "%lld", num(j, "id"));
    snprintf(task, sizeof(task), "%lld_%lld", num(j, "array_id"),
             num(j, "array_task"));
    for (int i = 0; i < n; i++) {
        if (strcmp(ids[i], id) == 0 ||
            (json_object_get(j, "array_id") &&
             (strcmp(ids[i], task) == 0 ||
              strtoll(ids[i], NULL, 10) == num(j, "array_id"))))
            return true;
    }
    return false;
}

/* scancel's filters: the matching jobs, each cancelled by its own id. */
static int cancel_matching(const char *user, const char *name,
                           const char *state, const char *partition,
                           const char *project, const char **ids, int nids)
{
    char path[1024], enc[300];
    path[0] = '\0';
    client_urlencode(state ? state : "pending,running", enc, sizeof(enc));
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "state=%s", enc);
    if (user) {
        client_urlencode(user, enc, sizeof(enc));
        snprintf(path + strlen(path), sizeof(path) - strlen(path), "&user=%s",
                 enc);
    }
    if (project) {
        client_urlencode(project, enc, sizeof(enc));
        snprintf(path + strlen(path), sizeof(path) - strlen(path),
                 "&project=%s", enc);
    }
    struct client *c = cmd_connect();
    /* Every match first, a page at a time (the controller bounds a
     * page), then the cancels: a cancel changes no later page. */
    json_t *all = json_array();
    long long after = 0;
    for (bool more = true; more && all;) {
        char page[1200];
        snprintf(page, sizeof(page), "/v1/jobs?limit=%d&after=%lld&%s",
                 QUEUE_JSON_PAGE, after, path);
        json_t *ans = cmd_call(c, "GET", page, NULL);
        json_t *jobs = json_object_get(ans, "jobs");
        size_t k;
        json_t *jk;
        json_array_foreach (jobs, k, jk) {
            json_array_append(all, jk);
            after = num(jk, "id");
        }
        more = json_integer_value(json_object_get(ans, "more")) > 0 &&
               json_array_size(jobs) > 0;
        json_decref(ans);
    }
    if (!all)
        die("out of memory");
    int failed = 0, done = 0;
    size_t i;
    json_t *j;
    json_array_foreach (all, i, j) {
        const char *jn = str(j, "name"), *jp = str(j, "partition");
        if ((name && (!jn || strcmp(jn, name) != 0)) ||
            (partition && (!jp || strcmp(jp, partition) != 0)) ||
            !named(j, ids, nids))
            continue;
        char p[96];
        snprintf(p, sizeof(p), "/v1/jobs/%lld/cancel", num(j, "id"));
        json_t *out = NULL;
        struct sh_error err;
        if (client_call(c, "POST", p, NULL, &out, NULL, &err) < 0) {
            warn("%s", err.msg);
            failed++;
            continue;
        }
        json_decref(out);
        done++;
        if (json_object_get(j, "array_id"))
            printf("cancelled job %lld_%lld\n", num(j, "array_id"),
                   num(j, "array_task"));
        else
            printf("cancelled job %lld\n", num(j, "id"));
    }
    if (!done && !failed)
        printf("no job matches\n");
    json_decref(all);
    client_destroy(c);
    return failed ? 1 : 0;
}

int cmd_cancel(int argc, char **argv)
{
    static const struct option opts[] = {
        {"user", required_argument, NULL, 'u'},
        {"name", required_argument, NULL, 'n'},
        {"state", required_argument, NULL, 't'},
        {"partition", required_argument, NULL, 'p'},
        {"account", required_argument, NULL, 'A'},
        {"signal", required_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    const char *user = NULL, *name = NULL, *state = NULL, *partition = NULL,
               *project = NULL;
    const char **ids = calloc((size_t)argc + 1, sizeof(*ids));
    int nids = 0, c;
    bool filtered = false;
    struct cmd_opts p;
    if (!ids)
        die("out of memory");
    cmd_opts_init(&p, "cancel", cancel_usage, opts, "u:n:t:p:A:s:", false, argc,
                  argv);
    while ((c = cmd_opts_next(&p)) != -1) {
        filtered |= c != CMD_OPT_ARG;
        switch (c) {
        case 'u':
            user = p.arg;
            break;
        case 'n':
            name = p.arg;
            break;
        case 't':
            state = p.arg;
            break;
        case 'p':
            partition = p.arg;
            break;
        case 'A':
            project = p.arg;
            break;
        case 's':
            cmd_opts_fail(&p, "--signal: Shoal signals a job only as it ends "
                              "(SIGTERM, then SIGKILL after the grace period); "
                              "leave --signal out to cancel");
        default: /* CMD_OPT_ARG */
            ids[nids++] = job_id_arg(p.arg);
        }
    }
    if (!filtered) {
        free(ids);
        return each_job(argc, argv, cancel_usage, "cancel", "cancelled");
    }
    int rc = cancel_matching(user, name, state, partition, project, ids, nids);
    free(ids);
    return rc;
}

int cmd_hold(int argc, char **argv)
{
    return each_job(argc, argv, hold_usage, "hold", "held");
}

int cmd_release(int argc, char **argv)
{
    return each_job(argc, argv, release_usage, "release", "released");
}

int cmd_requeue(int argc, char **argv)
{
    return each_job(argc, argv, requeue_usage, "requeue", "requeued");
}
