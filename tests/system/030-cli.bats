#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the shoal CLI as a user meets it: help on every command, submit by
# options and by #SHOAL script, listings for people and --json, strict
# parsing of sizes and durations, and errors a person understands.

load lib/cluster

setup() { shoald_start; }
teardown() { shoal_cluster_stop; }

@test "cli-001 every command has --help" {
    run shoal --help
    [ "$status" -eq 0 ]
    [[ "$output" == *submit* ]]
    for c in up submit queue show cancel logs nodes node usage slice history sim team project user; do
        run shoal "$c" --help
        echo "$c: $output"
        [ "$status" -eq 0 ]
        [[ "$output" == Usage:* ]]
    done
    run shoal frobnicate
    [ "$status" -ne 0 ]
    [[ "$output" == *"unknown command"* ]]
}

@test "cli-002 submit prints the id; queue, show and cancel see the job" {
    run shoal submit --gpus 2 --name train --time 1h --mem 16G -- python3 t.py
    [ "$status" -eq 0 ]
    id=$output
    [[ "$id" =~ ^[0-9]+$ ]]
    run shoal queue
    [[ "$output" == *train*pending* ]]
    run shoal queue --json
    [ "$(echo "$output" | jq '.[0].gpus')" -eq 2 ]
    [ "$(echo "$output" | jq '.[0].mem')" -eq $((16 << 30)) ]
    [ "$(echo "$output" | jq '.[0].time_limit')" -eq 3600 ]
    run shoal show "$id"
    [[ "$output" == *"state:"*pending* ]]
    run shoal show "$id" --json
    [ "$(echo "$output" | jq -r '.command[1]')" = t.py ]
    run shoal cancel "$id"
    [ "$status" -eq 0 ]
    run shoal cancel "$id"
    [ "$status" -ne 0 ]
    [[ "$output" == *"already cancelled"* ]]
}

@test "cli-003 a script's #SHOAL directives are options; the command line wins" {
    cat >"$SHOAL_TEST_DIR/job.sh" <<'SCRIPT'
#!/bin/sh
# a comment before the directives
#SHOAL --gpus 4 --time 30m
#SHOAL --name "long name" --env A=1 --priority low
echo hello
#SHOAL --gpus 8
SCRIPT
    run shoal submit --gpus 2 --env B=2 "$SHOAL_TEST_DIR/job.sh" arg1
    [ "$status" -eq 0 ]
    run shoal show "$output" --json
    [ "$(echo "$output" | jq .gpus)" -eq 2 ]
    [ "$(echo "$output" | jq .time_limit)" -eq 1800 ]
    [ "$(echo "$output" | jq -r .name)" = "long name" ]
    [ "$(echo "$output" | jq -r .priority)" = low ]
    [ "$(echo "$output" | jq -r .env.A)" = 1 ]
    [ "$(echo "$output" | jq -r .env.B)" = 2 ]
    [ "$(echo "$output" | jq -r '.command[0]')" = arg1 ]
    echo "$output" | jq -r .script | grep -q "echo hello"
}

@test "cli-004 sizes and durations are parsed strictly" {
    for bad in "--mem 16" "--mem 16Q" "--mem -1G" "--time 90" "--time 1.5h" \
        "--time 25:00" "--gpus two" "--gpus -1" "--nodes 0"; do
        run shoal submit $bad -- true
        echo "$bad: $output"
        [ "$status" -ne 0 ]
        [[ "$output" == shoal:* ]]
    done
    run shoal submit --time 90s -- true
    [ "$status" -eq 0 ]
    run shoal submit --time 01:30:00 --mem 512M -- true
    [ "$status" -eq 0 ]
    run shoal show "$output" --json
    [ "$(echo "$output" | jq .time_limit)" -eq 5400 ]
    [ "$(echo "$output" | jq .mem)" -eq $((512 << 20)) ]
}

@test "cli-005 errors name the problem and exit non-zero" {
    run shoal submit
    [ "$status" -ne 0 ]
    run shoal submit /nonexistent/script.sh
    [ "$status" -ne 0 ]
    [[ "$output" == *"not a readable script"* ]]
    run shoal show 999999
    [ "$status" -ne 0 ]
    [[ "$output" == *"not found"* ]]
    run shoal show abc
    [ "$status" -ne 0 ]
    SHOAL_URL=http://127.0.0.1:1 run shoal queue
    [ "$status" -ne 0 ]
    [[ "$output" == *"http://127.0.0.1:1"*"shoal up"* ]]
    SHOAL_TOKEN=shoal_wrongwrongwrongwrongwrongwrongwrongwrongwro run shoal queue
    [ "$status" -ne 0 ]
    [[ "$output" == *"token"* ]]
}

@test "cli-005a every command refuses a mistaken option the same way" {
    # An unknown option: one line naming the command and the option, exit 2.
    for c in "submit" "queue" "show 1" "cancel 1" "update 1" "logs 1" "nodes" \
        "node drain n1" "history" "usage" "sim" "up" "team create t" \
        "project list" "user tokens" "volume list" "secret create s" \
        "slice presets"; do
        run shoal $c --bogus-option
        echo "$c: $output"
        [ "$status" -eq 2 ]
        [[ "$output" == "shoal: ${c%% [0-9a-z]*}"*": unknown option --bogus-option (see shoal "*" --help)" ]]
    done
    # A value missing, and a value where none goes.
    run shoal queue --user
    [ "$status" -eq 2 ]
    [[ "$output" == "shoal: queue: option --user needs a value (see shoal queue --help)" ]]
    run shoal nodes --json=yes
    [ "$status" -eq 2 ]
    [[ "$output" == *"option --json takes no value"* ]]
    # A subcommand that does not exist, or none.
    run shoal volume frobnicate
    [ "$status" -eq 2 ]
    [[ "$output" == "shoal: volume: unknown command 'frobnicate' (see shoal volume --help)" ]]
    run shoal team
    [ "$status" -eq 2 ]
    [[ "$output" == *"which team command?"* ]]
    # In a script, the directive's place is named; --help is no directive.
    printf '#!/bin/sh\n#SHOAL --gpus 1 --frob\ntrue\n' >"$SHOAL_TEST_DIR/bad.sh"
    run shoal submit "$SHOAL_TEST_DIR/bad.sh"
    [ "$status" -ne 0 ]
    [[ "$output" == *"bad.sh:2: unknown option --frob (see shoal submit --help)"* ]]
    printf '#!/bin/sh\n#SHOAL --help\ntrue\n' >"$SHOAL_TEST_DIR/help.sh"
    run shoal submit "$SHOAL_TEST_DIR/help.sh"
    [ "$status" -ne 0 ]
    [[ "$output" == *"help.sh:2: --help is not a directive"* ]]
}

@test "cli-005b --opt=value and --opt value mean the same; --help per subcommand" {
    a=$(shoal submit --gpus=1 --name=eq -- true)
    b=$(shoal submit --gpus 1 --name eq -- true)
    [ "$(shoal show "$a" --json | jq -c '[.gpus, .name]')" = '[1,"eq"]' ]
    [ "$(shoal show "$b" --json | jq -c '[.gpus, .name]')" = '[1,"eq"]' ]
    for c in "team create" "project set" "user token" "volume create" \
        "secret create" "node drain" "slice apply"; do
        run shoal $c --help
        echo "$c: $output"
        [ "$status" -eq 0 ]
        [[ "$output" == Usage:* ]]
    done
}

@test "cli-006 the config file written for a cluster is found" {
    mkdir -p "$XDG_CONFIG_HOME/shoal"
    printf 'url = %s\ntoken = %s\n' "$SHOAL_URL" "$SHOAL_TOKEN" \
        >"$XDG_CONFIG_HOME/shoal/config"
    run env -u SHOAL_URL -u SHOAL_TOKEN "$SHOAL_CLI" submit -- true
    [ "$status" -eq 0 ]
    printf 'url = %s\nbogus = 1\n' "$SHOAL_URL" >"$XDG_CONFIG_HOME/shoal/config"
    run env -u SHOAL_URL -u SHOAL_TOKEN "$SHOAL_CLI" queue
    [ "$status" -ne 0 ]
    [[ "$output" == *"unknown key"* ]]
    rm "$XDG_CONFIG_HOME/shoal/config"
    run env -u SHOAL_URL -u SHOAL_TOKEN "$SHOAL_CLI" queue
    [ "$status" -ne 0 ]
    [[ "$output" == *"shoal up"* ]]
}

@test "cli-007 queue pages: --limit and --after, a line says how many more" {
    ids=()
    for i in 1 2 3 4 5; do
        ids+=("$(shoal submit --gpus 1 --name "page$i" -- true)")
    done
    run shoal queue --limit 2
    [ "$status" -eq 0 ]
    [[ "$output" == *page1*page2* ]]
    [[ "$output" != *page3* ]]
    [[ "$output" == *"3 more"*"--after ${ids[1]}"*"--limit 0"* ]]
    run shoal queue --limit 2 --after "${ids[1]}"
    [[ "$output" == *page3*page4* ]]
    [[ "$output" != *page2* && "$output" != *page5* ]]
    [[ "$output" == *"1 more"* ]]
    run shoal queue --after "${ids[3]}"
    [[ "$output" == *page5* && "$output" != *more* ]]
    run shoal queue --limit 0
    [[ "$output" == *page1*page5* && "$output" != *more* ]]
    # --json lists every job unless --limit says otherwise, in the layout
    # it always had.
    run shoal queue --json
    [ "$(echo "$output" | jq length)" -eq 5 ]
    [[ "$output" == "["$'\n'"  {"$'\n'"    \"name\": \"page1\","* ]]
    run shoal queue --json --limit 2 --after "${ids[2]}"
    [ "$(echo "$output" | jq -c 'map(.name)')" = '["page4","page5"]' ]
    run shoal queue --json --state completed
    [ "$output" = "[]" ]
    # The API: after and more; a page's reasons are there.
    api GET "/v1/jobs?limit=1&after=${ids[0]}"
    [ "$status_code" -eq 200 ]
    [ "$(echo "$body" | jq '.jobs[0].id')" -eq "${ids[1]}" ]
    [ "$(echo "$body" | jq '.more')" -eq 3 ]
    [ -n "$(echo "$body" | jq -r '.jobs[0].reason')" ]
    api GET "/v1/jobs?after=-1"
    [ "$status_code" -eq 400 ]
    run shoal queue --limit -3
    [ "$status" -ne 0 ]
    [[ "$output" == *--limit* ]]
    run shoal queue --after x
    [ "$status" -ne 0 ]
    [[ "$output" == *--after* ]]
}
