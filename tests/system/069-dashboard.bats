#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the dashboard's job view. Through the API: a job says which
# actions (cancel, hold, release, requeue) its caller may take now, and its
# output can be read from the end (tail). In headless Chromium
# (tests/browser/dashboard.py, WebDriver through Debian's chromium-driver
# and python3-selenium): sign in, the cluster view, open a job and see its
# reason, hold it, release it, cancel it, see a job the user may not touch
# offered no action, and sign out.

load lib/cluster

teardown() { shoal_cluster_stop; }

# actions JOB TOKEN: the actions the token's user is offered, in a line.
actions() {
    curl -sf -H "Authorization: Bearer $2" "$SHOAL_URL/v1/jobs/$1" |
        jq -r '.actions | to_entries | map(select(.value) | .key) | join(",")'
}
actions_are() { [ "$(actions "$1" "$2")" = "$3" ]; }
logs_have() { curl -sf -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_URL/v1/jobs/$1/logs?tail=$2" | jq -r .data | grep -q -- "$3"; }

@test "dash-001 a job lists what its caller may do; logs read from the end" {
    shoal_cluster_start 1 2
    alice=$(shoal user create alice | tail -n1)
    bob=$(shoal user create bob | tail -n1)
    r=$(submit --gpus 1 -- sh -c 'seq 1 2000; sleep 1000')
    wait_job_state "$r" running
    p=$(SHOAL_TOKEN=$alice submit --gpus 2 -- true) # waits for r's GPU
    actions_are "$p" "$alice" cancel,hold
    actions_are "$p" "$SHOAL_TOKEN" cancel,hold # the cluster admin
    actions_are "$p" "$bob" ""                  # a member: sees it, may not touch it
    SHOAL_TOKEN=$alice shoal hold "$p"
    actions_are "$p" "$alice" cancel,release
    SHOAL_TOKEN=$alice shoal cancel "$p"
    actions_are "$p" "$alice" requeue
    actions_are "$r" "$SHOAL_TOKEN" cancel,requeue
    wait_for 20 logs_have "$r" 100 '^2000$'
    # The last 7 bytes of "...1999\n2000\n".
    api GET "/v1/jobs/$r/logs?tail=7"
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq -r .data)" = "$(printf '9\n2000')" ]
    size=$(echo "$body" | jq .offset)
    api GET "/v1/jobs/$r/logs?tail=0"
    [ "$status_code" = 400 ]
    api GET "/v1/jobs/$r/logs?tail=5&offset=0"
    [ "$status_code" = 400 ]
    [[ "$(echo "$body" | jq -r .error.message)" == *"offset or tail"* ]]
    # More than was written: all of it.
    api GET "/v1/jobs/$r/logs?tail=1000000"
    [ "$(echo "$body" | jq .offset)" = "$size" ]
    [ "$(echo "$body" | jq -r .data | head -n1)" = 1 ]
}

browser_ready() {
    [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] &&
        /usr/bin/python3 -c 'import selenium' 2>/dev/null
}

@test "dash-002 in Chromium: open a job, see its reason, hold, release, cancel, sign out" {
    browser_ready || skip "needs chromium, chromium-driver and python3-selenium (scripts/install-deps.sh installs them)"
    shoal_cluster_start 2 2
    alice=$(shoal user create alice | tail -n1)
    # The admin's job: alice (a member of its project) sees it, may not touch it.
    other=$(submit --gpus 1 -- sh -c 'echo hello from the job; sleep 1000')
    wait_job_state "$other" running
    wait_for 20 logs_have "$other" 100 hello
    mine=$(SHOAL_TOKEN=$alice submit --nodes 2 --gpus 2 -- true)
    wait_for 20 sh -c "curl -sf -H 'Authorization: Bearer $SHOAL_TOKEN' $SHOAL_URL/v1/jobs/$mine | jq -e '.reason // \"\" | test(\"^(resources|reservation)\")'"
    SHOAL_TOKEN=$alice MINE=$mine OTHER=$other SHOT=${SHOT:-} \
        run timeout 240 /usr/bin/python3 "$BATS_TEST_DIRNAME/../browser/dashboard.py"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"dashboard: ok"* ]]
    # What the browser did, the cluster did.
    [ "$(job_state "$mine")" = cancelled ]
    [ "$(job_field "$mine" .reason)" = "cancelled by alice" ]
    [ "$(job_state "$other")" = running ]
}
