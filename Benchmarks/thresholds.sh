#!/usr/bin/env bash
# Allocation counts CI guards (Benchmarks/Benchmarks/OrchestraBenchmarks/MallocBenchmarks.swift):
#
#   Benchmarks/thresholds.sh check    # fails if a count rose more than 5 % over Benchmarks/Thresholds/
#   Benchmarks/thresholds.sh update   # rewrites the thresholds from this machine's run (deliberately)
#
# Only `mallocCountTotal` is measured and stored: allocation counts move when the code does, not
# with the load of a shared machine, so they can gate CI where timings cannot.
#
# A check that passes records what it checked in Benchmarks/thresholds-checked.sha256: a hash of
# the code the counts come from (Sources/Orchestra and Sources/OrchestraOperations, which the
# Mallocs benchmarks run), the benchmarks, the thresholds, this script, the package manifests,
# the resolved revision of every dependency and the toolchain. A later check of the same inputs
# (CI on a commit that changed none of them) says so and skips the 7-minute release build of
# the benchmark package: the counts of the same code, dependencies and compiler are the same.
# ORCHESTRA_THRESHOLDS_FORCE=1 checks all the same.
set -euo pipefail
cd "$(dirname "$0")"
filter='Mallocs-.*'
recorded_file=thresholds-checked.sha256

# The hash of the inputs of the counts (see above).
fingerprint() {
    swift package resolve > /dev/null
    (
        cd ..
        find Sources/Orchestra Sources/OrchestraOperations Benchmarks/Benchmarks Benchmarks/Thresholds -type f \
            -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
        sha256sum Package.swift Benchmarks/Package.swift Benchmarks/thresholds.sh
        grep -E '"(identity|revision)"' Benchmarks/Package.resolved
        swift --version 2>&1
        uname -m
    ) | sha256sum | cut -d' ' -f1
}

case "${1:-}" in
check)
    current=$(fingerprint)
    if [ -z "${ORCHESTRA_THRESHOLDS_FORCE:-}" ] && [ -f "$recorded_file" ] &&
        [ "$(cat "$recorded_file")" = "$current" ]; then
        echo "thresholds: skipped: the code the counts come from, the benchmarks, the thresholds, the" \
            "dependencies and the toolchain are those of the last check that passed" \
            "(Benchmarks/$recorded_file: $current); ORCHESTRA_THRESHOLDS_FORCE=1 checks again"
        exit 0
    fi
    # The plugin exits 1 for a regression and for an improvement alike: tell them apart by what
    # the tool printed.
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    set +e
    swift package benchmark thresholds check --filter "$filter" --path "$PWD/Thresholds" --no-progress 2>&1 |
        tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -eq 0 ]; then
        echo "thresholds: every allocation count is within 5 % of Benchmarks/Thresholds/"
    elif grep -q "is WORSE than the defined thresholds" "$log"; then
        echo "thresholds: an allocation count rose more than 5 % over Benchmarks/Thresholds/ (see the table above)" >&2
    elif grep -q "is BETTER than the defined thresholds" "$log"; then
        echo "thresholds: some allocation counts fell more than 5 % below their thresholds;" \
            "lower them on purpose with: Benchmarks/thresholds.sh update"
        status=0
    fi
    if [ "$status" -eq 0 ]; then
        echo "$current" > "$recorded_file"
        echo "thresholds: these inputs are recorded in Benchmarks/$recorded_file (commit it: a check of" \
            "the same inputs is then skipped)"
    fi
    exit "$status"
    ;;
update)
    swift package --allow-writing-to-package-directory benchmark thresholds update --filter "$filter" \
        --path "$PWD/Thresholds" --no-progress
    # The counts just written are this code's: its inputs are checked.
    fingerprint > "$recorded_file"
    ;;
*)
    echo "usage: Benchmarks/thresholds.sh check|update" >&2
    exit 2
    ;;
esac
