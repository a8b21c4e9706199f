#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: who may do what, per role, through the real API: cluster admin,
# project admin, member, viewer, non-member, an agent or join token used as
# a user, a user token used as an agent, and missing, bad, revoked and
# expired tokens. Each rule is tested allowed and refused, and every refused
# call is shown to change nothing. Jobs stay pending (no agents needed),
# except where a real agent provides an agent token.
#
# The cast (project vision in team research):
#   padmin  admin of vision       alice, bob  members of vision
#   victor  viewer of vision      carol       member of nlp only
# Every user is also a member of the project "default".

load lib/cluster

setup() {
    shoald_start
    ADMIN=$SHOAL_TOKEN
    api POST /v1/teams '{"name":"research"}'
    api POST /v1/projects '{"name":"vision","team":"research"}'
    api POST /v1/projects '{"name":"nlp","team":"research"}'
    PADMIN=$(mkuser padmin vision admin)
    ALICE=$(mkuser alice vision member)
    BOB=$(mkuser bob vision member)
    VICTOR=$(mkuser victor vision viewer)
    CAROL=$(mkuser carol nlp member)
}
teardown() { shoal_cluster_stop; }

# mkuser NAME PROJECT ROLE: create, give the role, print the token.
mkuser() {
    API_TOKEN=$SHOAL_TOKEN api POST /v1/users "{\"name\":\"$1\"}"
    [ "$status_code" = 201 ] || { echo "mkuser: $body" >&2; return 1; }
    local tok
    tok=$(echo "$body" | jq -r .token)
    API_TOKEN=$SHOAL_TOKEN api PUT "/v1/projects/$2/members/$1" "{\"role\":\"$3\"}"
    [ "$status_code" = 201 ] || { echo "mkuser: $body" >&2; return 1; }
    echo "$tok"
}

# as TOKEN METHOD PATH [JSON]
as() {
    local tok=$1
    shift
    API_TOKEN=$tok api "$@"
}

snapshot() {
    local out=""
    for p in /v1/teams /v1/projects /v1/users '/v1/jobs?limit=10000' /v1/nodes; do
        as "$ADMIN" GET "$p"
        out+="$body"
    done
    echo "$out"
}

submit() { # TOKEN PROJECT -> prints the job id
    as "$1" POST /v1/jobs "{\"command\":[\"sleep\",\"60\"],\"project\":\"$2\"}"
    [ "$status_code" = 201 ] || { echo "submit: $status_code $body" >&2; return 1; }
    echo "$body" | jq .id
}

err_msg() { echo "$body" | jq -r .error.message; }

@test "acc-001 submit: admins, project admins and members; not viewers or non-members" {
    for who in ADMIN PADMIN ALICE; do
        as "${!who}" POST /v1/jobs '{"command":["true"],"project":"vision"}'
        echo "$who -> $status_code $body"
        [ "$status_code" = 201 ]
    done
    as "$ADMIN" POST /v1/jobs '{"command":["true"],"project":"nlp"}'
    [ "$status_code" = 201 ]
    before=$(snapshot)
    as "$VICTOR" POST /v1/jobs '{"command":["true"],"project":"vision"}'
    [ "$status_code" = 403 ]
    [ "$(echo "$body" | jq -r .error.code)" = forbidden ]
    err_msg | grep -q "victor is a viewer of project vision"
    as "$CAROL" POST /v1/jobs '{"command":["true"],"project":"vision"}'
    [ "$status_code" = 403 ]
    err_msg | grep -q "carol is not a member of project vision"
    as "$ALICE" POST /v1/jobs '{"command":["true"],"project":"nlp"}'
    [ "$status_code" = 403 ]
    as "$ALICE" POST /v1/jobs '{"command":["true"],"project":"nowhere"}'
    [ "$status_code" = 404 ]
    err_msg | grep -q "project nowhere does not exist"
    as "$ADMIN" POST /v1/jobs '{"command":["true"],"project":"nowhere"}'
    [ "$status_code" = 404 ]
    # Submitting for another user is for cluster admins only.
    as "$PADMIN" POST /v1/jobs '{"command":["true"],"project":"vision","user":"alice"}'
    [ "$status_code" = 403 ]
    [ "$(snapshot)" = "$before" ]
    # Viewers and non-members still submit to their own default project.
    as "$VICTOR" POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 201 ]
    [ "$(echo "$body" | jq -r .project)" = default ]
}

@test "acc-002 jobs are visible to their owner, their project's members and admins only" {
    a=$(submit "$ALICE" vision)
    c=$(submit "$CAROL" nlp)
    for who in ADMIN PADMIN ALICE BOB VICTOR; do
        as "${!who}" GET "/v1/jobs/$a"
        echo "$who sees $a -> $status_code"
        [ "$status_code" = 200 ]
    done
    as "$CAROL" GET "/v1/jobs/$a"
    [ "$status_code" = 404 ]
    for who in ALICE BOB VICTOR PADMIN; do
        as "${!who}" GET "/v1/jobs/$c"
        [ "$status_code" = 404 ]
    done
    as "$CAROL" GET "/v1/jobs/$c"
    [ "$status_code" = 200 ]
    as "$ADMIN" GET /v1/jobs
    [ "$(echo "$body" | jq '.jobs | length')" -eq 2 ]
    as "$ALICE" GET /v1/jobs
    [ "$(echo "$body" | jq -c '[.jobs[].id]')" = "[$a]" ]
    as "$CAROL" GET /v1/jobs
    [ "$(echo "$body" | jq -c '[.jobs[].id]')" = "[$c]" ]
    # Filters cannot widen what one sees.
    as "$CAROL" GET '/v1/jobs?project=vision'
    [ "$(echo "$body" | jq '.jobs | length')" -eq 0 ]
    as "$CAROL" GET '/v1/jobs?user=alice'
    [ "$(echo "$body" | jq '.jobs | length')" -eq 0 ]
    # Logs follow the same rule.
    as "$CAROL" GET "/v1/jobs/$a/logs"
    [ "$status_code" = 404 ]
}

@test "acc-003 cancel: own jobs, any job for project and cluster admins; others refused" {
    a1=$(submit "$ALICE" vision)
    a2=$(submit "$ALICE" vision)
    a3=$(submit "$ALICE" vision)
    b1=$(submit "$BOB" vision)
    before=$(snapshot)
    as "$BOB" POST "/v1/jobs/$a1/cancel"
    [ "$status_code" = 403 ]
    err_msg | grep -q "belongs to alice"
    as "$VICTOR" POST "/v1/jobs/$a1/cancel"
    [ "$status_code" = 403 ]
    as "$VICTOR" DELETE "/v1/jobs/$a1"
    [ "$status_code" = 403 ]
    as "$CAROL" POST "/v1/jobs/$a1/cancel"
    [ "$status_code" = 404 ]
    [ "$(snapshot)" = "$before" ]
    as "$ALICE" POST "/v1/jobs/$a1/cancel"
    [ "$status_code" = 200 ]
    as "$PADMIN" POST "/v1/jobs/$a2/cancel"
    [ "$status_code" = 200 ]
    [ "$(echo "$body" | jq -r .reason)" = "cancelled by padmin" ]
    as "$ADMIN" DELETE "/v1/jobs/$a3"
    [ "$status_code" = 200 ]
    as "$BOB" POST "/v1/jobs/$b1/cancel"
    [ "$status_code" = 200 ]
}

@test "acc-004 a user who leaves a project keeps their own jobs but nothing else" {
    a=$(submit "$ALICE" vision)
    b=$(submit "$BOB" vision)
    as "$ADMIN" DELETE /v1/projects/vision/members/alice
    [ "$status_code" = 200 ]
    as "$ALICE" GET "/v1/jobs/$a"
    [ "$status_code" = 200 ]
    as "$ALICE" GET "/v1/jobs/$b"
    [ "$status_code" = 404 ]
    as "$ALICE" POST /v1/jobs '{"command":["true"],"project":"vision"}'
    [ "$status_code" = 403 ]
    as "$ALICE" POST "/v1/jobs/$a/cancel"
    [ "$status_code" = 200 ]
    # Promoted to viewer: sees the project's jobs again, still cannot submit.
    as "$ADMIN" PUT /v1/projects/vision/members/alice '{"role":"viewer"}'
    as "$ALICE" GET "/v1/jobs/$b"
    [ "$status_code" = 200 ]
    as "$ALICE" POST /v1/jobs '{"command":["true"],"project":"vision"}'
    [ "$status_code" = 403 ]
}

@test "acc-005 teams, projects, quotas, users, limits and nodes need a cluster admin" {
    before=$(snapshot)
    while IFS='|' read -r method path json; do
        for who in PADMIN ALICE VICTOR CAROL; do
            as "${!who}" "$method" "$path" "$json"
            echo "$who $method $path -> $status_code $body"
            [ "$status_code" = 403 ]
            [ "$(echo "$body" | jq -r .error.code)" = forbidden ]
            err_msg | grep -q "cluster admins"
        done
    done <<'CASES'
POST|/v1/teams|{"name":"t"}
DELETE|/v1/teams/research|
PUT|/v1/teams/research/quota|{"quotas":[]}
PATCH|/v1/teams/research/quota|{"guaranteed":1}
POST|/v1/projects|{"name":"p","team":"research"}
PATCH|/v1/projects/vision|{"team":"default"}
DELETE|/v1/projects/vision|
PUT|/v1/projects/vision/quota|{"quotas":[]}
PATCH|/v1/projects/vision/quota|{"limit":1}
GET|/v1/users|
POST|/v1/users|{"name":"mallory"}
PATCH|/v1/users/alice|{"admin":true}
DELETE|/v1/users/bob|
POST|/v1/users/alice/tokens|
POST|/v1/users/bob/tokens|
PATCH|/v1/users/alice/limits|{"max_gpus":100}
PUT|/v1/users/alice/limits|{}
POST|/v1/nodes/node1/drain|
POST|/v1/nodes/node1/resume|
DELETE|/v1/nodes/node1|
CASES
    [ "$(snapshot)" = "$before" ]
    # The same calls work for a cluster admin (a sample).
    as "$ADMIN" POST /v1/teams '{"name":"t"}'
    [ "$status_code" = 201 ]
    as "$ADMIN" PATCH /v1/users/alice/limits '{"max_gpus":100}'
    [ "$status_code" = 200 ]
}

@test "acc-006 members are managed by cluster admins and the project's admins" {
    as "$PADMIN" PUT /v1/projects/vision/members/carol '{"role":"viewer"}'
    [ "$status_code" = 201 ]
    as "$PADMIN" PUT /v1/projects/vision/members/carol '{"role":"member"}'
    [ "$status_code" = 200 ]
    as "$PADMIN" DELETE /v1/projects/vision/members/carol
    [ "$status_code" = 200 ]
    before=$(snapshot)
    as "$PADMIN" PUT /v1/projects/nlp/members/alice '{"role":"member"}'
    [ "$status_code" = 403 ]
    err_msg | grep -q "padmin is not a member of project nlp"
    for who in ALICE VICTOR; do
        as "${!who}" PUT /v1/projects/vision/members/carol '{"role":"member"}'
        [ "$status_code" = 403 ]
        err_msg | grep -q "admin role"
        as "${!who}" DELETE /v1/projects/vision/members/bob
        [ "$status_code" = 403 ]
    done
    as "$CAROL" PUT /v1/projects/vision/members/carol '{"role":"admin"}'
    [ "$status_code" = 403 ]
    [ "$(snapshot)" = "$before" ]
    as "$ADMIN" PUT /v1/projects/nlp/members/alice '{"role":"admin"}'
    [ "$status_code" = 201 ]
}

@test "acc-007 projects and teams are visible to their members, all of them to admins" {
    for who in PADMIN ALICE VICTOR; do
        as "${!who}" GET /v1/projects/vision
        [ "$status_code" = 200 ]
        as "${!who}" GET /v1/projects/vision/members
        [ "$status_code" = 200 ]
    done
    as "$VICTOR" GET /v1/projects/vision
    [ "$(echo "$body" | jq -r .role)" = viewer ]
    as "$CAROL" GET /v1/projects/vision
    [ "$status_code" = 403 ]
    as "$CAROL" GET /v1/projects/vision/members
    [ "$status_code" = 403 ]
    as "$CAROL" GET /v1/projects
    [ "$(echo "$body" | jq -r '[.projects[].name] | join(",")')" = default,nlp ]
    as "$ADMIN" GET /v1/projects
    [ "$(echo "$body" | jq -r '[.projects[].name] | join(",")')" = default,nlp,vision ]
    as "$CAROL" GET /v1/teams
    [ "$(echo "$body" | jq -r '[.teams[].name] | join(",")')" = default,research ]
    as "$CAROL" GET /v1/teams/research
    [ "$(echo "$body" | jq -c .projects)" = '["nlp"]' ]
    as "$ADMIN" POST /v1/teams '{"name":"secret"}'
    as "$CAROL" GET /v1/teams/secret
    [ "$status_code" = 403 ]
    as "$CAROL" GET /v1/teams/nope
    [ "$status_code" = 404 ]
}

@test "acc-008 users see and revoke their own tokens, not others'" {
    as "$ALICE" GET /v1/users/alice
    [ "$status_code" = 200 ]
    as "$ALICE" GET /v1/users/alice/limits
    [ "$status_code" = 200 ]
    as "$ALICE" GET /v1/users/alice/tokens
    [ "$status_code" = 200 ]
    before=$(snapshot)
    for path in /v1/users/bob /v1/users/bob/limits /v1/users/bob/tokens; do
        as "$ALICE" GET "$path"
        [ "$status_code" = 403 ]
    done
    as "$ALICE" DELETE /v1/users/bob/tokens
    [ "$status_code" = 403 ]
    as "$BOB" GET /v1/users/bob/tokens
    id=$(echo "$body" | jq -r '.tokens[0].id')
    as "$ALICE" DELETE "/v1/users/bob/tokens/$id"
    [ "$status_code" = 403 ]
    [ "$(snapshot)" = "$before" ]
    as "$BOB" GET /v1/jobs
    [ "$status_code" = 200 ]
    # A user may revoke their own tokens; then they are locked out.
    as "$ALICE" DELETE /v1/users/alice/tokens
    [ "$status_code" = 200 ]
    as "$ALICE" GET /v1/jobs
    [ "$status_code" = 401 ]
}

@test "acc-009 no token, bad tokens and revoked tokens get 401 and change nothing" {
    before=$(snapshot)
    for path in /v1/jobs /v1/teams /v1/projects /v1/users /v1/users/alice \
        /v1/projects/vision/members; do
        code=$(curl -s -o "$SHOAL_TEST_DIR/out" -w '%{http_code}' "$SHOAL_URL$path")
        [ "$code" = 401 ]
        [ "$(jq -r .error.code "$SHOAL_TEST_DIR/out")" = unauthenticated ]
        jq -r .error.message "$SHOAL_TEST_DIR/out" | grep -q "needs a token"
    done
    for tok in garbage "Basic xyz" "shoal_notavalidtokennotavalidtokennotavalidtoken1" \
        "${ALICE}x" "${ALICE%?}"; do
        as "$tok" POST /v1/teams '{"name":"x"}'
        [ "$status_code" = 401 ]
        as "$tok" POST /v1/jobs '{"command":["true"]}'
        [ "$status_code" = 401 ]
    done
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST \
        -H "Authorization: Basic $ALICE" "$SHOAL_URL/v1/teams" --data '{"name":"x"}')
    [ "$code" = 401 ]
    as "$ADMIN" DELETE /v1/users/bob/tokens
    as "$BOB" POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 401 ]
    err_msg | grep -q "revoked"
    # A deleted user's token is dead too.
    as "$ADMIN" DELETE /v1/users/victor
    as "$VICTOR" GET /v1/jobs
    [ "$status_code" = 401 ]
    as "$ADMIN" POST /v1/users/bob/tokens
    as "$ADMIN" POST /v1/users/victor/tokens
    [ "$status_code" = 404 ]
}

expired() {
    [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" \
        "$SHOAL_URL/v1/jobs")" = 401 ]
}

@test "acc-010 an expired token stops working; a fresh one works" {
    as "$ADMIN" POST /v1/users/carol/tokens '{"expires_in_s":1}'
    tok=$(echo "$body" | jq -r .token)
    as "$tok" GET /v1/jobs
    [ "$status_code" = 200 ] || [ "$status_code" = 401 ]
    wait_for 10 expired "$tok"
    before=$(snapshot)
    as "$tok" POST /v1/jobs '{"command":["true"],"project":"nlp"}'
    [ "$status_code" = 401 ]
    [ "$(snapshot)" = "$before" ]
    as "$CAROL" POST /v1/jobs '{"command":["true"],"project":"nlp"}'
    [ "$status_code" = 201 ]
}

@test "acc-011 join and agent tokens cannot act as users; user tokens cannot act as agents" {
    join=$(cat "$SHOAL_TEST_DIR/controller/join.token")
    before=$(snapshot)
    for req in "POST /v1/jobs" "GET /v1/jobs" "POST /v1/teams" "GET /v1/projects" \
        "GET /v1/users"; do
        # shellcheck disable=SC2086
        as "$join" $req '{"name":"x","command":["true"]}'
        echo "join $req -> $status_code $body"
        [ "$status_code" = 403 ]
        err_msg | grep -q "agent token cannot act as a user"
    done
    for tok in "$ADMIN" "$ALICE"; do
        as "$tok" POST /v1/agent/heartbeat '{}'
        [ "$status_code" = 403 ]
        err_msg | grep -q "user token cannot act as an agent"
        as "$tok" POST /v1/agent/register '{}'
        [ "$status_code" = 403 ]
    done
    [ "$(snapshot)" = "$before" ]
}

@test "acc-012 a real node agent's token cannot act as a user" {
    agent_start node1 2 H100-80GB
    wait_for 20 nodes_up_is 1
    wait_for 10 test -s "$SHOAL_TEST_DIR/node1/token"
    agent_tok=$(cat "$SHOAL_TEST_DIR/node1/token")
    as "$agent_tok" GET /v1/nodes
    [ "$status_code" = 403 ]
    before=$(snapshot)
    as "$agent_tok" POST /v1/jobs '{"command":["true"]}'
    [ "$status_code" = 403 ]
    err_msg | grep -q "agent token cannot act as a user"
    as "$agent_tok" POST /v1/projects '{"name":"p","team":"research"}'
    [ "$status_code" = 403 ]
    as "$agent_tok" PUT /v1/projects/vision/members/carol '{"role":"admin"}'
    [ "$status_code" = 403 ]
    as "$ADMIN" GET /v1/jobs
    [ "$(echo "$body" | jq '.jobs | length')" -eq 0 ]
    as "$ADMIN" GET /v1/projects/vision/members
    [ "$(echo "$body" | jq -r '.members[] | select(.user=="carol") | .role')" = "" ]
}
