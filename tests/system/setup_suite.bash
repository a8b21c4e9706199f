# SPDX-License-Identifier: Apache-2.0
# Once per bats run: with SHOAL_TEST_STORE=postgresql and no server named by
# SHOAL_TEST_PG_URL, start a throw-away PostgreSQL server for the whole run
# (scripts/pg-test.sh) and stop it at the end. Each test makes its own
# database on it (lib/cluster.bash).

setup_suite() {
    if [ "${SHOAL_TEST_STORE:-sqlite}" = postgresql ] && [ -z "${SHOAL_TEST_PG_URL:-}" ]; then
        local out
        out=$("$BATS_TEST_DIRNAME/../../scripts/pg-test.sh" start) || return 1
        SHOAL_SUITE_PG_DIR=$(echo "$out" | sed -n 's/^DIR=//p')
        SHOAL_TEST_PG_URL=$(echo "$out" | sed -n 's/^URL=//p')
        export SHOAL_SUITE_PG_DIR SHOAL_TEST_PG_URL
    fi
}

teardown_suite() {
    if [ -n "${SHOAL_SUITE_PG_DIR:-}" ]; then
        "$BATS_TEST_DIRNAME/../../scripts/pg-test.sh" destroy "$SHOAL_SUITE_PG_DIR"
    fi
}
