/* SPDX-License-Identifier: Apache-2.0 */
/* Focus: the CSI client's deadlines. A plugin that accepts and never
 * answers costs a call its deadline once, retries included (the
 * controller's CreateVolume waited 30 s twice, freezing shoald for a
 * minute); a plugin whose socket accepts no connection at all (stopped,
 * backlog full) fails the call at once instead of holding connect(). */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/csi/csi.h"
#include "lib/csi/grpc.h"
#include "lib/util/clock.h"

static char dir[64];
static char sock_path[128];

/* A unix socket that listens with the given backlog and never accepts. */
static int silent_plugin(int backlog)
{
    snprintf(dir, sizeof(dir), "/tmp/shoal-csi-test.XXXXXX");
    cr_assert(mkdtemp(dir));
    snprintf(sock_path, sizeof(sock_path), "%s/csi.sock", dir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, sock_path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    cr_assert(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    cr_assert(listen(fd, backlog) == 0);
    return fd;
}

static void cleanup(int fd)
{
    close(fd);
    unlink(sock_path);
    rmdir(dir);
}

Test(csi, a_call_to_a_silent_plugin_ends_at_its_deadline)
{
    int fd = silent_plugin(8);
    struct grpc_reply r;
    int64_t t0 = clock_mono_ms();
    int st = grpc_call(sock_path, "/csi.v1.Node/NodeGetCapabilities",
                       (const uint8_t *)"", 0, 300, &r);
    int64_t took = clock_mono_ms() - t0;
    cr_assert_eq(st, GRPC_DEADLINE_EXCEEDED, "%d: %s", st, r.message);
    cr_assert(took >= 290 && took < 3000, "took %lld ms", (long long)took);
    grpc_reply_fini(&r);
    cleanup(fd);
}

Test(csi, the_controller_budget_covers_every_retry)
{
    if (!csi_available())
        cr_skip_test("built without CSI support");
    int fd = silent_plugin(8);
    char *id = NULL;
    json_t *ctx = NULL;
    char why[600] = "";
    int64_t t0 = clock_mono_ms();
    int rc = csi_create_volume(sock_path, "vol", 0, false, NULL, &id, &ctx, why,
                               sizeof(why));
    int64_t took = clock_mono_ms() - t0;
    cr_assert_eq(rc, -1);
    cr_assert(strstr(why, "DEADLINE_EXCEEDED"), "%s", why);
    /* 5 s in all: before, each of two tries waited 30 s. */
    cr_assert(took < 10000, "took %lld ms: %s", (long long)took, why);
    cleanup(fd);
}

Test(csi, a_plugin_that_accepts_nothing_fails_the_call_at_once)
{
    int fd = silent_plugin(0);
    /* Fill the backlog until the kernel refuses more. */
    int held[16], nheld = 0;
    for (; nheld < 16; nheld++) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        strcpy(sa.sun_path, sock_path);
        held[nheld] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(held[nheld], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            cr_assert_eq(errno, EAGAIN, "%s", strerror(errno));
            close(held[nheld]);
            break;
        }
    }
    cr_assert(nheld < 16, "the backlog never filled");
    struct grpc_reply r;
    int64_t t0 = clock_mono_ms();
    int st = grpc_call(sock_path, "/csi.v1.Node/NodeGetCapabilities",
                       (const uint8_t *)"", 0, 60000, &r);
    int64_t took = clock_mono_ms() - t0;
    cr_assert_eq(st, GRPC_UNAVAILABLE, "%d: %s", st, r.message);
    cr_assert(strstr(r.message, "accepts no connection"), "%s", r.message);
    cr_assert(took < 3000, "took %lld ms", (long long)took);
    grpc_reply_fini(&r);
    for (int i = 0; i < nheld; i++)
        close(held[i]);
    cleanup(fd);
}
