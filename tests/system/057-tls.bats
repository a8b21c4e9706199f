#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Focus: the API over TLS: shoald serves HTTPS with a certificate and key,
# the CLI and an agent talk to it trusting a private CA (SHOAL_CA), and an
# untrusted client is refused.

load lib/cluster

teardown() { shoal_cluster_stop; }

make_cert() {
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" \
        -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$SHOAL_TEST_DIR/key.pem" -out "$SHOAL_TEST_DIR/cert.pem" \
        2>/dev/null
}

@test "tls-001 the API over HTTPS for the CLI and an agent" {
    command -v openssl >/dev/null || skip "needs openssl"
    shoal_tmp_init
    make_cert
    dir="$SHOAL_TEST_DIR/controller"
    mkdir -p "$dir"
    "$SHOALD" --state "$dir" --port 0 --tls-cert "$SHOAL_TEST_DIR/cert.pem" \
        --tls-key "$SHOAL_TEST_DIR/key.pem" >>"$SHOAL_TEST_DIR/shoald.log" 2>&1 &
    SHOALD_PID=$!
    record_pid "$SHOALD_PID"
    wait_for 15 test -s "$dir/url"
    export SHOAL_URL=$(cat "$dir/url") SHOAL_TOKEN=$(cat "$dir/admin.token")
    export SHOAL_CA="$SHOAL_TEST_DIR/cert.pem"
    [[ "$SHOAL_URL" == https://* ]]
    wait_for 15 curl -sf --cacert "$SHOAL_CA" "$SHOAL_URL/v1/health"
    id=$(submit --gpus 1 -- sh -c 'echo over tls')
    [[ "$id" =~ ^[0-9]+$ ]]
    agent_start node1 1 H100-80GB
    wait_for 20 nodes_up_is_tls 1
    wait_for 30 sh -c "curl -sf --cacert '$SHOAL_CA' -H 'Authorization: Bearer $SHOAL_TOKEN' $SHOAL_URL/v1/jobs/$id | jq -e '.state == \"completed\"'"
    run shoal logs "$id"
    [ "$output" = "over tls" ]
    # Without the CA the client refuses the certificate.
    run env -u SHOAL_CA "$SHOAL_CLI" queue
    [ "$status" -ne 0 ]
    [[ "$output" == *"cannot reach"* ]]
    # Plain HTTP on the TLS port gets no answer.
    run curl -sf -m 5 "http://${SHOAL_URL#https://}/v1/health"
    [ "$status" -ne 0 ]
}

nodes_up_is_tls() {
    [ "$(curl -sf --cacert "$SHOAL_CA" -H "Authorization: Bearer $SHOAL_TOKEN" \
        "$SHOAL_URL/v1/nodes" | jq '[.nodes[] | select(.state == "up")] | length')" = "$1" ]
}
