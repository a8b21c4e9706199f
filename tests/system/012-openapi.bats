#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the API reference served by a running controller at
# GET /v1/openapi.json: valid JSON, OpenAPI 3.x, without a token, carrying
# the server's version; and every operation it documents answers on the
# live server with the access it documents (public ones without a token,
# the others refusing a missing token with 401, admin, agent and join ones
# refusing a plain user with 403).

load lib/cluster

setup() { shoald_start; }
teardown() { shoal_cluster_stop; }

fetch_doc() {
    curl -sf -o "$SHOAL_TEST_DIR/openapi.json" \
        -w '%{content_type}' "$SHOAL_URL/v1/openapi.json"
}

# "METHOD PATH ACCESS" per documented operation, path parameters filled
# with a name that exists nowhere.
operations() {
    jq -r '.paths | to_entries[] | .key as $p | .value | to_entries[]
           | select(.key | test("^(get|put|post|delete|patch)$"))
           | "\(.key | ascii_upcase) \($p | gsub("{[^}]*}"; "nosuch")) \(.value["x-shoal-access"])"' \
        "$SHOAL_TEST_DIR/openapi.json"
}

@test "openapi-001 the document is served without a token as OpenAPI 3 JSON" {
    run fetch_doc
    [ "$status" -eq 0 ]
    [[ "$output" == application/json* ]]
    doc="$SHOAL_TEST_DIR/openapi.json"
    jq -e . "$doc" >/dev/null
    jq -e '.openapi | startswith("3.")' "$doc"
    jq -e '.paths["/v1/jobs"].post.requestBody.content["application/json"]' "$doc"
    jq -e '.paths["/v1/jobs"].get and .paths["/v1/jobs/{id}"].get' "$doc"
    jq -e '.paths["/v1/openapi.json"].get.security == []' "$doc"
    # It describes this server's version.
    version=$(curl -sf "$SHOAL_URL/v1/health" | jq -r .version)
    [ "$(jq -r .info.version "$doc")" = "$version" ]
    # A full validation where the validator happens to be installed.
    if python3 -c 'import openapi_spec_validator' 2>/dev/null; then
        python3 -c 'import json, sys
from openapi_spec_validator import validate
validate(json.load(open(sys.argv[1])))' "$doc"
    fi
}

@test "openapi-002 every documented operation exists with the access it documents" {
    fetch_doc
    anon=0 user=0
    while read -r method path access; do
        code=$(curl -s -o "$SHOAL_TEST_DIR/ans" -w '%{http_code}' \
            -X "$method" "$SHOAL_URL$path")
        echo "$method $path ($access) without a token -> $code $(head -c 200 "$SHOAL_TEST_DIR/ans")"
        if [ "$access" = public ]; then
            [ "$code" = 200 ]
        else
            [ "$code" = 401 ]
            [ "$(jq -r .error.code "$SHOAL_TEST_DIR/ans")" = unauthenticated ]
        fi
        anon=$((anon + 1))
    done < <(operations)
    [ "$anon" -ge 60 ]

    # A plain user is refused by admin-only, agent and join operations
    # before anything runs.
    api POST /v1/users '{"name":"plain"}'
    [ "$status_code" = 201 ]
    plain=$(echo "$body" | jq -r .token)
    while read -r method path access; do
        case "$access" in admin | agent | join) ;; *) continue ;; esac
        code=$(curl -s -o "$SHOAL_TEST_DIR/ans" -w '%{http_code}' -X "$method" \
            -H "Authorization: Bearer $plain" "$SHOAL_URL$path")
        echo "$method $path ($access) as a plain user -> $code $(head -c 200 "$SHOAL_TEST_DIR/ans")"
        [ "$code" = 403 ]
        [ "$(jq -r .error.code "$SHOAL_TEST_DIR/ans")" = forbidden ]
        user=$((user + 1))
    done < <(operations)
    [ "$user" -ge 20 ]
}

@test "openapi-003 a path the document does not name is not an endpoint" {
    fetch_doc
    # (bats ignores a failing "! cmd": test the answer instead)
    [ "$(jq '.paths["/v1/nosuch"]' "$SHOAL_TEST_DIR/openapi.json")" = null ]
    api GET /v1/nosuch
    [ "$status_code" = 404 ]
    [ "$(echo "$body" | jq -r .error.code)" = not_found ]
}
