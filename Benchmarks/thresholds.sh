#!/usr/bin/env bash
# Allocation counts CI guards (Benchmarks/Benchmarks/OrchestraBenchmarks/MallocBenchmarks.swift):
#
#   Benchmarks/thresholds.sh check    # fails if a count rose more than 5 % over Benchmarks/Thresholds/
#   Benchmarks/thresholds.sh update   # rewrites the thresholds from this machine's run (deliberately)
#
# Only `mallocCountTotal` is measured and stored: allocation counts move when the code does, not
# with the load of a shared machine, so they can gate CI where timings cannot.
set -euo pipefail
cd "$(dirname "$0")"
filter='Mallocs-.*'
case "${1:-}" in
check)
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
    exit "$status"
    ;;
update)
    swift package --allow-writing-to-package-directory benchmark thresholds update --filter "$filter" \
        --path "$PWD/Thresholds" --no-progress
    ;;
*)
    echo "usage: Benchmarks/thresholds.sh check|update" >&2
    exit 2
    ;;
esac
